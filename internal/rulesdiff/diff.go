// Package rulesdiff compares two rules files, the one deployed and the one about to be, and
// says rule by rule what the change needs on a table that already holds items: a backfill
// of the rules that were added or now compute something else, a clean-up of what removed
// rules wrote (copied attributes, counters, sums, version attributes), and the entity and
// table changes that need more than a deploy. Comments, order and formatting are not
// changes. It does no I/O: `denorm diff` prints its result and `denorm cleanup` executes
// its clean-ups.
package rulesdiff

import (
	"fmt"
	"sort"

	"github.com/denorm/denorm/internal/rules"
)

// Status is what happened to a rule between the two files.
type Status string

// Statuses of a rule.
const (
	Added     Status = "added"
	Removed   Status = "removed"
	Changed   Status = "changed"
	Renamed   Status = "renamed" // same definition under another name
	Unchanged Status = "unchanged"
)

// Rule is one rule's change.
type Rule struct {
	// Name is the rule's name in the new file (in the old one for a removed rule).
	Name string `json:"name"`
	// OldName is the name in the old file of a renamed rule.
	OldName string     `json:"oldName,omitempty"`
	Kind    rules.Kind `json:"kind"`
	Status  Status     `json:"status"`
	// Fields lists what differs, one field per entry (`where: {status: "a"} -> {status: "b"}`).
	Fields []string `json:"fields,omitempty"`
	// Backfill is true when the targets must be recomputed from the sources that exist:
	// the stream processor only keeps them right from the changes it sees after the deploy.
	Backfill bool `json:"backfill"`
	// Why says why (or why no backfill is needed although the rule changed).
	Why string `json:"why,omitempty"`
	// Cleanup is what this rule wrote under the old file and nothing writes under the new one.
	Cleanup *Cleanup `json:"cleanup,omitempty"`
	// Note is what the caller adds (Annotate): how its backfill behaves while the stream runs.
	Note string `json:"note,omitempty"`
}

// Annotate sets the note of the new file's rule name.
func (d *Diff) Annotate(name, note string) {
	for i := range d.Rules {
		if d.Rules[i].Name == name && d.Rules[i].Status != Removed {
			d.Rules[i].Note = note
		}
	}
}

// Cleanup is what an old rule left on the items of its old target entity.
type Cleanup struct {
	// Rule is the rule's name in the old file.
	Rule string `json:"rule"`
	// Entity is its target entity, as the old file recognises it.
	Entity string `json:"entity"`
	// Attributes are removed from the entity's items (sorted): copied attributes, mirrored
	// attributes, counters and sums, the rule's version attribute, and the copy version of
	// counts and sums (_dn_cv) when no rule of the new file counts into the entity.
	Attributes []string `json:"attributes,omitempty"`
	// State are counter attributes also removed from the targets' state items, which would
	// otherwise be copied onto a target again.
	State []string `json:"state,omitempty"`
	// Registry is true when the rule's version registry and fan-out job items (reserved
	// items named after the rule) are deleted: no rule of that name copies any more.
	Registry bool `json:"registry,omitempty"`
	// Refs is true when the rule's distinct reference items (plan.DistinctRef) are
	// deleted: no distinct rule of that name counts any more.
	Refs bool `json:"refs,omitempty"`
}

// Empty reports whether the clean-up has nothing to do.
func (c *Cleanup) Empty() bool {
	return c == nil || len(c.Attributes) == 0 && len(c.State) == 0 && !c.Registry && !c.Refs
}

// Entity is one entity's change that changes which items it recognises.
type Entity struct {
	Name   string   `json:"name"`
	Status Status   `json:"status"`
	Fields []string `json:"fields,omitempty"`
	// Matching is true when items may stop (or start) being this entity: a key template,
	// the sparse keys or the type changed. Rules reading or writing it need a backfill, and
	// items written with the old keys are no longer seen by Denorm.
	Matching bool `json:"matching"`
	// Rules are the new file's rules whose source or target is this entity.
	Rules []string `json:"rules,omitempty"`
}

// Table is one change of the table's keys, indexes or TTL attribute.
type Table struct {
	What string `json:"what"`
	// Order says when it is deployed relative to the stream processor.
	Order Order `json:"order"`
	// Action says what it takes.
	Action string `json:"action"`
	// index is the name of the index that changed ("" for other changes).
	index string
}

// Order places a table change in the rollout.
type Order string

// Orders of a table change.
const (
	BeforeDeploy Order = "before"   // deploy the table change first (an index a rule will query)
	AfterDeploy  Order = "after"    // after the processor no longer uses it (an index removed)
	NewTable     Order = "newtable" // DynamoDB cannot make it in place
	Setting      Order = "setting"  // a table setting, deployed with the stack
)

// Diff is the comparison of two rules files.
type Diff struct {
	Old string `json:"old"` // the files' paths
	New string `json:"new"`
	// Rules: the new file's rules in its order, then the removed ones in the old file's order.
	Rules    []Rule   `json:"rules"`
	Entities []Entity `json:"entities"`
	Table    []Table  `json:"table"`
}

// Compare compiles both files and compares them. Both must be valid.
func Compare(old, new *rules.File) (*Diff, error) {
	oldSet, err := rules.Compile(old)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", old.Path, err)
	}
	newSet, err := rules.Compile(new)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", new.Path, err)
	}
	d := &Diff{Old: old.Path, New: new.Path}
	d.Table = compareTable(old, new)
	d.Entities = compareEntities(oldSet, newSet)
	d.Rules = compareRules(oldSet, newSet, d.Entities, d.Table)
	return d, nil
}

// NeedsAction reports whether the files differ in meaning: something must be deployed,
// backfilled or cleaned up. Comments, order, formatting, defaults written out, entity
// attribute lists and entities no rule uses need nothing.
func (d *Diff) NeedsAction() bool {
	for _, r := range d.Rules {
		if r.Status != Unchanged {
			return true
		}
	}
	for _, e := range d.Entities {
		if e.Matching {
			return true
		}
	}
	return len(d.Table) > 0
}

// Backfill returns the names of the new file's rules that need a backfill, sorted.
func (d *Diff) Backfill() []string {
	var out []string
	for _, r := range d.Rules {
		if r.Backfill {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Cleanups returns the clean-ups of the old file's rules, sorted by rule. With only, just
// those rules' (names of the old file).
func (d *Diff) Cleanups(only ...string) []Cleanup {
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	var out []Cleanup
	for _, r := range d.Rules {
		if r.Cleanup.Empty() || len(only) > 0 && !want[r.Cleanup.Rule] {
			continue
		}
		out = append(out, *r.Cleanup)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rule < out[j].Rule })
	return out
}
