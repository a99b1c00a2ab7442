package main

import (
	"errors"
	"flag"
	"strings"
	"time"
)

// registerOnly adds the flags backfill and verify share for rule changes: --only to
// restrict a run to the rules a change added or changed (what `denorm diff` prints), and
// --settle for counter recounts.
func (o *opsFlags) registerOnly(fs *flag.FlagSet) {
	fs.StringVar(&o.only, "only", "", "only these rules, comma-separated (as `denorm diff` lists them)")
	fs.DurationVar(&o.settle, "settle", 5*time.Second,
		"repairs: how long a counter recount waits for the stream before writing; above the stream's lag (IteratorAge plus the batching window)")
}

func (o *opsFlags) checkOnly(fs *flag.FlagSet) error {
	if o.only != "" && o.rule != "" {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("--rule and --only cannot be used together")}
	}
	if o.settle < 0 {
		return &exitError{code: 2, err: errors.New("--settle cannot be negative")}
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
