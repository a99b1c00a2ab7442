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
// file gets "FILE: ok (N entities, M rules)" on stdout. Any bad file makes the exit status 1,
// so CI and editors' task runners can use it as is.
func runValidate(_ context.Context, args []string) error {
	fs := newFlags("validate", "FILE...")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("no rules file given")}
	}
	bad := 0
	for _, path := range fs.Args() {
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
	}
	if bad > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d files invalid", bad, fs.NArg())}
	}
	return nil
}
