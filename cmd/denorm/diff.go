package main

import (
	"context"
	"errors"
	"os"

	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/rulesdiff"
)

func init() {
	register(command{name: "diff", summary: "compare two rules files: what a change needs (backfill, clean-up, table changes) and the plan to roll it out", run: runDiff})
}

// runDiff compares the deployed rules with the next ones and prints, rule by rule, what
// the change needs and the plan that rolls it out. Exit status: 0 when the files mean the
// same, 1 when something must be deployed, backfilled or cleaned up, 2 for bad arguments or
// invalid rules.
func runDiff(_ context.Context, args []string) error {
	fs := newFlags("diff", "[--table NAME] [--endpoint URL] [--json] OLD.yaml NEW.yaml")
	tableName := fs.String("table", "", "the table's name, for the commands of the plan")
	endpoint := fs.String("endpoint", os.Getenv("DENORM_DYNAMODB_ENDPOINT"), "the DynamoDB endpoint URL (DynamoDB Local, LocalStack), for the commands of the plan")
	asJSON := fs.Bool("json", false, "print the comparison as JSON on stdout")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 2 {
		return usageError(fs, "want the two rules files OLD.yaml NEW.yaml, got %d", len(files))
	}
	var loaded [2]*rules.File
	for i, path := range files {
		f, err := rules.Load(path)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		loaded[i] = f
	}
	d, err := rulesdiff.Compare(loaded[0], loaded[1])
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := annotateCounters(d, loaded[1]); err != nil {
		return &exitError{code: 2, err: err}
	}
	if *asJSON {
		out := struct {
			*rulesdiff.Diff
			NeedsAction bool     `json:"needsAction"`
			Backfill    []string `json:"backfill"`
			Plan        []string `json:"plan"`
		}{d, d.NeedsAction(), d.Backfill(), d.Plan(orTable(*tableName), *endpoint)}
		if err := printJSON(os.Stdout, out); err != nil {
			return err
		}
	} else if err := d.WriteText(os.Stdout, *tableName, *endpoint); err != nil {
		return err
	}
	if d.NeedsAction() {
		return &exitError{code: 1, err: errors.New("")}
	}
	return nil
}

func orTable(t string) string {
	if t == "" {
		return "TABLE"
	}
	return t
}

// annotateCounters notes, on each count or sum to backfill, whether its backfill is exact
// while the application writes (docs/operations.md, "Counters while the stream runs").
func annotateCounters(d *rulesdiff.Diff, f *rules.File) error {
	set, err := rules.Compile(f)
	if err != nil {
		return err
	}
	for _, name := range d.Backfill() {
		r := set.Rule(name)
		if r == nil || !r.Kind.Aggregate() {
			continue
		}
		if r.Kind == rules.KindDistinct {
			d.Annotate(name, "decided from a scan with its reference items, one transaction per target: a target whose state moved during the run is left as a conflict (run again when "+r.Source.Name+" is not written)")
			continue
		}
		if ops.Recountable(f.Table, r) {
			d.Annotate(name, "recounted from its targets: exact while the application writes")
		} else {
			d.Annotate(name, "its sources are found only by a scan: exact only while "+r.Source.Name+" is not written (docs/operations.md)")
		}
	}
	return nil
}
