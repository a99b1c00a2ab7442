// Package plan is the pure core of the stream processor: it turns decoded stream records
// into effects (copy and mirror writes, fan-out queries, pulls, count and sum deltas) and
// coalesces them per target within a batch. No I/O happens here.
package plan

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// Key is an item's primary key values (SK empty when the table has no sort key).
type Key struct{ PK, SK string }

// AttrValue is a named attribute value.
type AttrValue struct {
	Name  string
	Value types.AttributeValue
}

// Delta adds Amount to the rule's attribute on Target, exactly once.
type Delta struct {
	Rule   *rules.CompiledRule
	Target Key
	Amount value.Number
	// Value, for a distinct rule's delta to a reference item (DistinctRef), is the value
	// the item stands for, for `denorm explain`.
	Value types.AttributeValue
	// Split is how many state parts the target has (rules.Set.Split, 0 for none), set by
	// Planner.Explain for `denorm explain`: a marker-mode delta to a split target goes to
	// one of them.
	Split int
}

// Write is a version-guarded write of one target found by key: a copy (Set/Remove), a
// mirror (Item), or a delete. Version is the source's normalized sequence number.
type Write struct {
	Rule    *rules.CompiledRule
	Target  Key
	Version string
	Set     []AttrValue
	Remove  []string
	Item    record.Item // mirror: the whole item to put (keys included)
	Delete  bool
	// Link, when set, must still hold on the target for the write to land: a target found
	// through an index query may have been re-linked to another source since.
	Link *AttrValue
}

// FanOut applies the same version-guarded copy to every target a query finds: the rule's
// index (or the table) at partition value PKValue, sort key beginning with the rule's
// QuerySK prefix. Large fan-outs continue across invocations through a job item.
type FanOut struct {
	Rule    *rules.CompiledRule
	Source  Key
	PKValue string
	Version string
	Set     []AttrValue
	Remove  []string
	Delete  bool
}

// Pull fills a copy target from its source: on insert, on a change of the attributes that
// link it to its source, or when the application overwrote the copied attributes. Seen is
// the target's version attribute as the record shows it ("" when absent): the pull writes
// only if no push has landed since.
type Pull struct {
	Rule    *rules.CompiledRule
	Target  Key
	Source  Key
	Seen    string
	Current record.Item
}

// Refresh puts back a count or sum target's copy of its state: Seen is the target as the
// record shows it, so the executor writes only when it differs from the state.
type Refresh struct {
	Target Key
	Attrs  []string // the aggregate attributes of the rules into the target
	Seen   record.Item
	// Copy is set when a part of the target's split state changed (its record): the copy
	// is written whatever the target shows (nil Seen when the target wrote nothing), and
	// Creators are the rules into the target that create it when it is missing: the copy
	// creates it when one of their values is not zero, as one of their deltas would.
	Copy     bool
	Creators []*rules.CompiledRule
}

// merge is r, a later refresh of the same target in one batch, with what an earlier one,
// e, asked for: a copy stays asked for, and the newest image the target showed is kept.
func (r Refresh) merge(e Refresh) Refresh {
	if e.Copy {
		r.Copy = true
		if r.Creators == nil {
			r.Creators = e.Creators
		}
	}
	if r.Seen == nil {
		r.Seen = e.Seen
	}
	if r.Attrs == nil {
		r.Attrs = e.Attrs
	}
	return r
}

// RecordPlan is what one stream record asks for.
type RecordPlan struct {
	// Seq is the record's position (record.Position): its sequence number within its
	// stream's epoch, what the guards, watermarks and markers hold.
	Seq     string
	EventID string
	Op      string // INSERT, MODIFY or REMOVE
	PK      string // the record's partition key value
	SK      string // the record's sort key value ("" for none)
	Entity  string // the matched entity ("" for none)
	Deltas  []Delta
	Writes  []Write
	FanOuts []FanOut
	Pulls   []Pull
	// Extremes are the record's raises and rechecks of max and min targets.
	Extremes []Extreme
	// Refreshes are count and sum targets the application wrote (inserted, or changed the
	// copy of their aggregates): the copy is put back from the target's state item.
	Refreshes []Refresh
	// Job is set for a fan-out job item's record: the executor continues that job.
	Job    record.Item
	JobKey Key
	// Probe is set for the INSERT of a probe item (rules.ProbePrefix) that is not answered
	// yet: the executor answers it once the records before it are applied.
	Probe *Key
	// Unlinked counts the rule effects left out because the item does not carry a variable
	// of the target's key (a parent attribute removed or never set, a sparse index key
	// absent): the item is linked to no target of that rule, which is correct, not a failure.
	Unlinked int
	// Crossings say why the item entered or left a rule's where, for `denorm explain`.
	Crossings []Crossing
	// NoImage is set for a record that carries neither image (a REMOVE without OldImage,
	// which DynamoDB Local emits when several clients delete one item at once): nothing to
	// apply.
	NoImage bool
}

// Crossing is an item that passed a rule's where before the record and fails it after,
// or the other way round.
type Crossing struct {
	Rule *rules.CompiledRule
	// Entered is true when the item passes the where now; Failing is the test it fails on
	// the side where it does not pass (value.Failing).
	Entered bool
	Failing string
}

// Rules returns the names of the rules with an effect, in the order of the effects.
func (p *RecordPlan) Rules() []string {
	var out []string
	add := func(r *rules.CompiledRule) {
		for _, n := range out {
			if n == r.Name {
				return
			}
		}
		out = append(out, r.Name)
	}
	for _, d := range p.Deltas {
		add(d.Rule)
	}
	for _, w := range p.Writes {
		add(w.Rule)
	}
	for _, f := range p.FanOuts {
		add(f.Rule)
	}
	for _, pl := range p.Pulls {
		add(pl.Rule)
	}
	for _, x := range p.Extremes {
		add(x.Rule)
	}
	return out
}

// Empty reports whether the record asks for nothing.
func (p *RecordPlan) Empty() bool {
	return len(p.Deltas) == 0 && len(p.Writes) == 0 && len(p.FanOuts) == 0 && len(p.Pulls) == 0 && len(p.Extremes) == 0 && len(p.Refreshes) == 0 && p.Job == nil && p.Probe == nil
}
