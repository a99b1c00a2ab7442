package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/denorm/denorm/internal/rules"
)

func init() {
	register(command{name: "validate", summary: "check rules files, reporting every problem as file:line:col", run: runValidate})
}

// runValidate loads each file and prints every problem, one per line, to stderr; a good
// file gets "FILE: ok (N entities, M rules)" on stdout, then a line per rule into a time
// bucket saying what the bucket is. Any bad file makes the exit status 1,
// so CI and editors' task runners can use it as is.
func runValidate(_ context.Context, args []string) error {
	fs := newFlags("validate", "FILE... | --rules FILE")
	rulesFlag := fs.String("rules", "", "rules file (or give the files as arguments)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *rulesFlag != "" {
		files = append([]string{*rulesFlag}, files...)
	}
	if len(files) == 0 {
		return usageError(fs, "no rules file: give it as --rules FILE or as the argument FILE")
	}
	bad := 0
	for _, path := range files {
		f, err := rules.Load(path)
		if err != nil {
			bad++
			var ps rules.Problems
			if errors.As(err, &ps) {
				for _, p := range ps {
					fmt.Fprintln(os.Stderr, p)
				}
			} else {
				fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			}
			continue
		}
		fmt.Printf("%s: ok (%d entities, %d rules)\n", path, len(f.Entities), len(f.Rules))
		printBuckets(f)
	}
	if bad > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d files invalid", bad, len(files))}
	}
	return nil
}

// printBuckets prints, for each count or sum into a time bucket, what one target item
// stands for and when it expires: what a user checks before deploying such a rule.
func printBuckets(f *rules.File) {
	set, err := rules.Compile(f)
	if err != nil {
		return // Load validated f; Compile fails only on what Load reported
	}
	for _, r := range set.Compiled() {
		if b := r.Bucketing(set.Table.TTLAttribute); b != "" {
			fmt.Printf("  rule %q: %s\n", r.Name, b)
		}
	}
}
