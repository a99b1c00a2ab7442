package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/rulesdiff"
)

func init() {
	register(command{name: "cleanup", summary: "remove what removed rules left on a table: their attributes and version attributes (rate-limited, idempotent)", run: runCleanup})
}

// runCleanup removes what old rules wrote and the deployed rules no longer write: copied
// attributes, counters and sums, version attributes, version registry and fan-out job
// items. With --new it removes what `denorm diff OLD NEW` lists (never what the new rules
// write); without it, everything the rules named by --only wrote. Run it after the stream
// processor with the new rules is deployed and the old version's invocations are over.
func runCleanup(ctx context.Context, args []string) error {
	fs := newFlags("cleanup", "(OLD.yaml | --rules OLD.yaml) --table NAME [--new NEW.yaml] [--only RULE,...] [--legacy] [--endpoint URL] [--max-wcu N] [--dry-run] [--json]")
	rulesFlag := fs.String("rules", "", "the rules file the removed rules are in: the deployed one before the change")
	newFile := fs.String("new", "", "the rules file deployed now: only what it no longer writes is removed (as denorm diff lists it)")
	tableName := fs.String("table", "", "table name (required)")
	endpoint := fs.String("endpoint", os.Getenv("DENORM_DYNAMODB_ENDPOINT"), "DynamoDB endpoint URL (DynamoDB Local, LocalStack); empty for AWS")
	only := fs.String("only", "", "only these rules of the old file, comma-separated (required without --new)")
	segments := fs.Int("segments", 4, "parallel scan segments")
	pageSize := fs.Int("page-size", 100, "items per Scan page (0: DynamoDB's 1 MB pages)")
	maxWCU := fs.Float64("max-wcu", 100, "write capacity units per second the writes may consume (0: no limit)")
	legacy := fs.Bool("legacy", false, "also remove what Denorm versions before state items kept: "+strings.Join(rules.LegacyTargetAttrs, ", ")+" on targets, park items and relay items in the targets' partitions (docs/operations.md, \"Upgrading to state items\")")
	dryRun := fs.Bool("dry-run", false, "write nothing: report what would be removed")
	asJSON := fs.Bool("json", false, "print the report as JSON on stdout")
	examples := fs.Int("examples", 5, "items shown per rule")
	noProgress := fs.Bool("no-progress", false, "no progress bar (it is shown only when stderr is a terminal)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	oldPath, err := rulesArg(fs, *rulesFlag, pos, "")
	if err != nil {
		return err
	}
	if err := tableArg(fs, *tableName); err != nil {
		return err
	}
	names := splitNames(*only)
	switch {
	case *newFile == "" && len(names) == 0 && !*legacy:
		return usageError(fs, "name the rules to clean up with --only, give the deployed rules with --new NEW.yaml, or clean up the layout before state items with --legacy")
	case *segments < 1 || *segments > 1000000:
		return &exitError{code: 2, err: fmt.Errorf("--segments %d: want 1 to 1000000", *segments)}
	case *maxWCU < 0 || *pageSize < 0 || *examples < 0:
		return &exitError{code: 2, err: errors.New("--max-wcu, --page-size and --examples cannot be negative")}
	}
	oldF, err := rules.Load(oldPath)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if unknown := unknownRules(oldF, names); len(unknown) > 0 {
		return &exitError{code: 2, err: &ops.UnknownRulesError{Path: oldPath, Unknown: unknown, Known: ruleNames(oldF)}}
	}
	newF := oldF
	var cleanups []rulesdiff.Cleanup
	if *newFile != "" || len(names) > 0 {
		if newF, err = cleanupTarget(oldF, *newFile, names); err != nil {
			return err
		}
		d, err := rulesdiff.Compare(oldF, newF)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		cleanups = d.Cleanups(names...)
		for _, n := range names {
			if len(d.Cleanups(n)) == 0 {
				fmt.Fprintf(os.Stderr, "rule %s: nothing to clean up: %s still writes everything it wrote\n", n, newF.Path)
			}
		}
	}
	if len(cleanups) == 0 && !*legacy {
		fmt.Println("nothing to clean up")
		return nil
	}
	oldSet, err := rules.Compile(oldF)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	newSet, err := rules.Compile(newF)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	cfg, err := awsconf.Load(ctx, *endpoint)
	if err != nil {
		return err
	}
	cfg.RetryMaxAttempts = 10
	client := awsconf.DynamoDB(cfg, *endpoint != "")
	cc := ops.CleanupConfig{API: client, Table: *tableName, Old: oldSet, New: newSet, Cleanups: cleanups, Legacy: *legacy, DryRun: *dryRun,
		Segments: *segments, PageSize: int32(*pageSize), MaxWCU: *maxWCU, Examples: *examples}
	if !*noProgress && term.IsTerminal(int(os.Stderr.Fd())) {
		cc.Progress = os.Stderr
	}
	rep, err := ops.Cleanup(ctx, cc)
	if rep != nil {
		print := rep.WriteText
		if *asJSON {
			print = func(w io.Writer) error { return printJSON(w, rep) }
		}
		if perr := print(os.Stdout); perr != nil && err == nil {
			err = perr
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return &exitError{code: 130, err: errors.New("interrupted: run the same command again to finish (a clean-up is idempotent)")}
	case err != nil:
		return err
	case !*dryRun && rep.Left > 0:
		return &exitError{code: 1, err: fmt.Errorf("%d items left as they were (changing during the clean-up, or a write failed): run the same command again", rep.Left)}
	}
	return nil
}

// cleanupTarget returns the rules the clean-up compares old with: the deployed file given
// with --new, or old without the named rules.
func cleanupTarget(old *rules.File, newPath string, names []string) (*rules.File, error) {
	if newPath != "" {
		f, err := rules.Load(newPath)
		if err != nil {
			return nil, &exitError{code: 2, err: err}
		}
		return f, nil
	}
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	f := *old
	f.Path = old.Path + " without " + strings.Join(names, ", ")
	f.Rules = nil
	for _, r := range old.Rules {
		if !drop[r.Name] {
			f.Rules = append(f.Rules, r)
		}
	}
	return &f, nil
}

func ruleNames(f *rules.File) []string {
	out := make([]string, len(f.Rules))
	for i, r := range f.Rules {
		out[i] = r.Name
	}
	return out
}

func unknownRules(f *rules.File, names []string) []string {
	known := map[string]bool{}
	for _, n := range ruleNames(f) {
		known[n] = true
	}
	var out []string
	for _, n := range names {
		if !known[n] {
			out = append(out, n)
		}
	}
	return out
}
