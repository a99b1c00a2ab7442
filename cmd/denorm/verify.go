package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
)

func init() {
	register(command{name: "verify", summary: "compare every copy, mirror, count and sum with its sources; --repair fixes drift", run: runVerify})
}

// opsFlags are the flags backfill and verify share.
type opsFlags struct {
	rules, table, endpoint, rule string
	segments, examples           int
	pageSize                     int
	maxWCU                       float64
	json, noProgress             bool
	only                         string        // comma-separated rule names (only.go)
	settle                       time.Duration // counter recounts (docs/operations.md)
	processorWait                time.Duration // the stream processor's answer to a probe (0: from settle)
	noProcessorCheck             bool
}

func (o *opsFlags) register(fs *flag.FlagSet, defaultWCU float64, defaultPage int) {
	fs.StringVar(&o.rules, "rules", "", "rules file (or give it as the argument FILE)")
	fs.StringVar(&o.table, "table", "", "table name (required)")
	fs.StringVar(&o.endpoint, "endpoint", os.Getenv("DENORM_DYNAMODB_ENDPOINT"), "DynamoDB endpoint URL (DynamoDB Local, LocalStack); empty for AWS")
	fs.StringVar(&o.rule, "rule", "", "only this rule")
	o.registerOnly(fs)
	fs.IntVar(&o.segments, "segments", 4, "parallel scan segments")
	fs.IntVar(&o.pageSize, "page-size", defaultPage, "items per Scan page (0: DynamoDB's 1 MB pages)")
	fs.Float64Var(&o.maxWCU, "max-wcu", defaultWCU, "write capacity units per second the writes may consume (0: no limit)")
	fs.IntVar(&o.examples, "examples", 5, "drifted items shown per rule")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON on stdout")
	fs.BoolVar(&o.noProgress, "no-progress", false, "no progress bar (it is shown only when stderr is a terminal)")
}

// parse parses args and checks the flags; the rules file may be the one argument.
func (o *opsFlags) parse(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if o.rules, err = rulesArg(fs, o.rules, pos, ""); err != nil {
		return err
	}
	if err := tableArg(fs, o.table); err != nil {
		return err
	}
	if err := o.checkOnly(fs); err != nil {
		return err
	}
	if o.segments < 1 || o.segments > 1000000 {
		return &exitError{code: 2, err: fmt.Errorf("--segments %d: want 1 to 1000000", o.segments)}
	}
	if o.maxWCU < 0 || o.pageSize < 0 || o.examples < 0 {
		return &exitError{code: 2, err: errors.New("--max-wcu, --page-size and --examples cannot be negative")}
	}
	return nil
}

// config loads the rules and the client and returns the engine's configuration.
func (o *opsFlags) config(ctx context.Context, mode string) (ops.Config, error) {
	data, err := os.ReadFile(o.rules)
	if err != nil {
		return ops.Config{}, &exitError{code: 2, err: fmt.Errorf("reading rules file: %w", err)}
	}
	f, err := rules.Parse(o.rules, data)
	if err != nil {
		return ops.Config{}, &exitError{code: 2, err: err}
	}
	ev, err := ops.NewEvaluatorFor(f, o.selected())
	if err != nil {
		return ops.Config{}, &exitError{code: 2, err: err}
	}
	cfg, err := awsconf.Load(ctx, o.endpoint)
	if err != nil {
		return ops.Config{}, err
	}
	// Long scans must ride out throttling rather than stop at the SDK's default 3 attempts.
	cfg.RetryMaxAttempts = 10
	client := awsconf.DynamoDB(cfg, o.endpoint != "")
	id := "\x00rule=" + o.rule
	if o.only != "" {
		id += "\x00only=" + o.only
	}
	sum := sha256.Sum256(append(data, id...))
	c := ops.Config{API: client, Table: o.table, Eval: ev, Mode: mode, Segments: o.segments,
		PageSize: int32(o.pageSize), MaxWCU: o.maxWCU, Examples: o.examples, RulesID: hex.EncodeToString(sum[:8]),
		Settle: o.settle}
	if !o.noProgress && term.IsTerminal(int(os.Stderr.Fd())) {
		c.Progress = os.Stderr
	}
	return c, nil
}

// print writes the report as text or JSON.
func (o *opsFlags) print(w io.Writer, rep *ops.Report) error {
	if o.json {
		return printJSON(w, rep)
	}
	return rep.WriteText(w)
}

// runVerify scans the table twice (sources, then targets) and reports drift per rule. The
// exit status is 1 when any drift (or an item the rules cannot evaluate) was found, with or
// without --repair, so monitoring sees that something drifted; the report says what was
// repaired.
func runVerify(ctx context.Context, args []string) error {
	fs := newFlags("verify", "(FILE | --rules FILE) --table NAME [--endpoint URL] [--rule NAME | --only RULE,...] [--repair] [--json] [--examples N]")
	var o opsFlags
	o.register(fs, 0, 0)
	repair := fs.Bool("repair", false, "repair drift with conditional writes (safe while the stream processor runs; see docs/operations.md)")
	if err := o.parse(fs, args); err != nil {
		return err
	}
	mode := "verify"
	if *repair {
		mode = "verify --repair"
	}
	cfg, err := o.config(ctx, mode)
	if err != nil {
		return err
	}
	cfg.Repair = *repair
	if *repair {
		if err := o.checkProcessor(ctx, &cfg, os.Stderr); err != nil {
			return err
		}
	}
	rep, err := ops.Run(ctx, cfg)
	if rep != nil {
		if perr := o.print(os.Stdout, rep); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return err
	}
	if !rep.Clean() {
		msg := fmt.Sprintf("%d drifted items, %d items the rules cannot evaluate", rep.Drift, rep.Problems)
		if *repair {
			msg += fmt.Sprintf("; %d not repaired", rep.Unrepaired)
		}
		return &exitError{code: 1, err: errors.New(msg)}
	}
	return nil
}
