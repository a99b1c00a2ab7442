package rulesdiff

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints the comparison rule by rule and the plan that rolls the change out: the
// commands use table as the table's name ("TABLE" when empty) and carry --endpoint when
// endpoint is not empty.
func (d *Diff) WriteText(w io.Writer, table, endpoint string) error {
	if table == "" {
		table = "TABLE"
	}
	p := &printer{w: w}
	p.f("%s -> %s\n", d.Old, d.New)
	p.f("\nrules:\n")
	width := 0
	for _, r := range d.Rules {
		width = max(width, len(r.Name)+len(r.Kind)+3)
	}
	for _, r := range d.Rules {
		name := fmt.Sprintf("%s (%s)", r.Name, r.Kind)
		what := ""
		switch {
		case r.Backfill:
			what = "backfill: " + r.Why
		case r.Status == Unchanged:
		case r.Status == Removed:
			what = r.Why
		case r.Why != "":
			what = "no backfill: " + r.Why
		}
		p.f("%s\n", strings.TrimRight(fmt.Sprintf("  %-9s  %-*s  %s", r.Status, width, name, what), " "))
		if r.OldName != "" {
			p.f("             was %s\n", r.OldName)
		}
		for _, fl := range r.Fields {
			p.f("             %s\n", fl)
		}
		if c := r.Cleanup; !c.Empty() {
			p.f("             clean up: %s\n", c.describe())
		}
		if r.Note != "" {
			p.f("             note: %s\n", r.Note)
		}
	}
	p.f("\nentities:")
	if len(d.Entities) == 0 {
		p.f(" unchanged\n")
	} else {
		p.f("\n")
	}
	for _, e := range d.Entities {
		p.f("  %-9s  %s", e.Status, e.Name)
		if e.Matching {
			p.f(": recognises items differently; rules that use it: %s", orNone(strings.Join(e.Rules, ", ")))
		}
		p.f("\n")
		for _, fl := range e.Fields {
			p.f("             %s\n", fl)
		}
	}
	p.f("\ntable:")
	if len(d.Table) == 0 {
		p.f(" unchanged\n")
	} else {
		p.f("\n")
	}
	for _, t := range d.Table {
		p.f("  %s\n             %s\n", t.What, t.Action)
	}
	p.f("\nplan:\n")
	for i, s := range d.Plan(table, endpoint) {
		p.f("  %d. %s\n", i+1, strings.ReplaceAll(s, "\n", "\n       "))
	}
	return p.err
}

// describe says what a clean-up removes.
func (c *Cleanup) describe() string {
	var parts []string
	if len(c.Attributes) > 0 {
		parts = append(parts, "remove "+strings.Join(c.Attributes, ", ")+" from "+c.Entity+" items")
	}
	if len(c.State) > 0 {
		parts = append(parts, "remove "+strings.Join(c.State, ", ")+" from their state items")
	}
	if c.Refs {
		parts = append(parts, "delete the distinct reference items of "+c.Rule)
	}
	if c.Registry {
		parts = append(parts, "delete the version registry and fan-out job items of "+c.Rule)
	}
	return strings.Join(parts, "; ")
}

// Plan returns the rollout, one step per entry, commands on lines of their own; they name
// table, and endpoint when it is not empty (DynamoDB Local, LocalStack).
func (d *Diff) Plan(table, endpoint string) []string {
	if endpoint != "" {
		table += " --endpoint " + endpoint
	}
	if !d.NeedsAction() {
		return []string{"Nothing to do: the two files mean the same (comments, order, formatting, written-out defaults or attribute lists differ at most)."}
	}
	var steps []string
	for _, t := range d.Table {
		if t.Order == NewTable {
			steps = append(steps, "Stop: "+t.What+". "+t.Action+"; the steps below assume the rules run on that table.")
		}
	}
	for _, e := range d.Entities {
		if e.Matching {
			steps = append(steps, "Entity "+e.Name+" recognises items differently: items written with its old keys or type are no longer "+
				e.Name+"s, and Denorm stops keeping them (their copies and counts go stale). Rewrite them with the new keys, or keep the old templates.")
		}
	}
	for _, t := range d.Table {
		if t.Order == BeforeDeploy {
			steps = append(steps, "Table: "+t.What+": "+t.Action+".")
		}
	}
	deploy := "Deploy the stream processor with " + d.New
	if endpoint != "" {
		deploy = "Deploy the stream processor (denorm local: restart it; LocalStack: localstack/localstack.sh deploy) with " + d.New
	}
	var settings []string
	for _, t := range d.Table {
		if t.Order == Setting {
			settings = append(settings, t.What)
		}
	}
	if len(settings) > 0 {
		deploy += " (with the table's " + strings.Join(settings, ", ") + ")"
	}
	steps = append(steps, deploy+". Wait until the old version's invocations have finished (the function's timeout) and the stream has caught up (IteratorAge near 0).")
	if bf := d.Backfill(); len(bf) > 0 {
		only := strings.Join(bf, ",")
		steps = append(steps,
			"Backfill the added and changed rules; the application may keep writing, and the backfill waits as long as the stream processor takes to answer it (exit status 1: targets that kept changing were left; run the same command again):\ndenorm backfill --rules "+d.New+" --table "+table+" --only "+only,
			"Verify them once the stream has caught up (drift reported twice with the same values is real):\ndenorm verify --rules "+d.New+" --table "+table+" --only "+only)
	}
	var clean []string
	for _, c := range d.Cleanups() {
		clean = append(clean, c.Rule)
	}
	if len(clean) > 0 {
		steps = append(steps, "Clean up what the old rules left behind:\ndenorm cleanup --rules "+d.Old+" --new "+d.New+" --table "+table+" --only "+strings.Join(clean, ","))
	}
	for _, t := range d.Table {
		if t.Order == AfterDeploy {
			steps = append(steps, "Table: "+t.What+": "+t.Action+".")
		}
	}
	return steps
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}
