package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/denorm/denorm/internal/ops"
)

// registerOnly adds the flags backfill and verify share for rule changes: --only to
// restrict a run to the rules a change added or changed (what `denorm diff` prints), and
// --settle for counter recounts.
func (o *opsFlags) registerOnly(fs *flag.FlagSet) {
	fs.StringVar(&o.only, "only", "", "only these rules, comma-separated (as `denorm diff` lists them)")
	fs.DurationVar(&o.settle, "settle", 5*time.Second,
		"repairs: how long a counter recount waits for the stream before writing; above the stream's lag (IteratorAge plus the batching window)")
	fs.DurationVar(&o.processorWait, "processor-wait", 0,
		"repairs of counts and sums: how long to wait for the stream processor to answer a probe before refusing (default 4 x --settle, at least 10s)")
	fs.BoolVar(&o.noProcessorCheck, "no-processor-check", false,
		"repairs of counts and sums: do not ask the stream processor first (only when no write of the counted items is on the stream or will be until it runs)")
}

func (o *opsFlags) checkOnly(fs *flag.FlagSet) error {
	if o.only != "" && o.rule != "" {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("--rule and --only cannot be used together")}
	}
	if o.settle < 0 {
		return &exitError{code: 2, err: errors.New("--settle cannot be negative")}
	}
	if o.processorWait < 0 {
		return &exitError{code: 2, err: errors.New("--processor-wait cannot be negative")}
	}
	return nil
}

// checkProcessor runs before a repairing run of count or sum rules: it asks the table's
// stream processor, through a probe item, whether it runs with these rules and is caught
// up (ops.CheckProcessor). Exit status 3 when not: nothing was written. A processor slower
// than half the settle raises the settle to twice its round trip, so that the deltas of
// writes a recount read land within it.
func (o *opsFlags) checkProcessor(ctx context.Context, cfg *ops.Config, stderr io.Writer) error {
	if o.noProcessorCheck {
		return nil
	}
	wait := o.processorWait
	if wait == 0 {
		wait = max(4*cfg.Settle, 10*time.Second)
	}
	rt, err := ops.CheckProcessor(ctx, cfg.API, cfg.Table, cfg.Eval, wait)
	if errors.Is(err, ops.ErrNoProcessor) {
		return &exitError{code: 3, err: fmt.Errorf("%w (docs/operations.md, \"Counters while the stream runs\"; --no-processor-check skips this)", err)}
	}
	if err != nil {
		return err
	}
	if rt > 0 && 2*rt > cfg.Settle {
		settle := (2 * rt).Round(100 * time.Millisecond)
		fmt.Fprintf(stderr, "the stream processor answered in %s: settling %s instead of %s\n", rt.Round(time.Millisecond), settle, cfg.Settle)
		cfg.Settle = settle
	}
	return nil
}

// selected is the rules a run is restricted to (none: every rule).
func (o *opsFlags) selected() []string {
	if o.rule != "" {
		return []string{o.rule}
	}
	return splitNames(o.only)
}

// splitNames splits a comma-separated list, dropping blanks.
func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
