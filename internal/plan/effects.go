// Package plan is the pure core of the stream processor: it turns decoded stream records
// into effects (copy and mirror writes, fan-out queries, pulls, count and sum deltas) and
// coalesces them per target within a batch. No I/O happens here.
package plan

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
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
	Amount Number
	// Restore marks a delta that undoes an application's write to the target's own
	// aggregate attribute (a PutItem that dropped a counter, a delete of the target): it
	// never creates the target; a missing target parks it until the target appears.
	Restore bool
	// Replaced is set on the restore delta of an application's MODIFY of a watermarked
	// target: what the write left, so the executor can tell deltas that were applied again
	// after it (a batch redelivered between the write and its record) from new ones.
	Replaced *Replacement
	// Covers, on the restore delta of a watermarked target, is the watermark of the image
	// it brings back (the OldImage of a MODIFY or REMOVE): that image holds the deltas of
	// every record up to it, so those records' deltas are not applied again.
	Covers string
	// Removal marks the restore delta of a REMOVE of the target itself (its aggregates, from
	// the OldImage), which an INSERT of the target later in the batch makes a replacement.
	// Source is the stream it came from, to read on for that INSERT when the batch ends
	// first.
	Removal bool
	Source  string
}

// Replacement is what a restore delta knows of the application's write it undoes.
type Replacement struct {
	OldWM, NewWM string // the target's watermark before and after the write ("" when absent)
	New          Number // the value the write left in the delta's attribute
	NewN         uint64 // the write count the write left
	// Since is what Denorm's writes after the application's write did, as the batch's
	// records of them show (nil when the batch has none).
	Since *Since
	// Source is the stream the application's record came from (its eventSourceARN): the
	// executor may read on from it when the batch does not show what followed.
	Source string
	// At is the record the chain of Denorm's writes after the application's write starts
	// after: the replacing record's own (AtRec -1, At ""), or the INSERT of a delete and
	// re-put (its index in the batch and sequence number).
	AtRec int
	At    string
	// Insert marks what an application's INSERT of the target left (NewWM, New, NewN):
	// coalesced with a delete of the target earlier in the batch, the two are one
	// replacement (OldWM the deleted image's watermark); alone, only its amount counts.
	Insert bool
}

// Since follows Denorm's own writes of a target after an application's write, from their
// stream records in the same batch: a chain of write counts from the one the application
// left. Repeats is what the writes that applied only records at or below the old watermark
// added (records the replaced image held): a batch delivered again after the application's
// write. N and WM are the write count and watermark after the last write of the chain.
type Since struct {
	N       uint64
	WM      string
	Repeats map[string]Number
	// Done: the chain is known to its end (a write passed the old watermark, or another
	// writer's record of the target ended it), so Repeats is exact whatever the item holds
	// now, even when it is another incarnation of the target.
	Done bool
}

// OwnWrite is a stream record of Denorm's own write of a watermarked target: the write
// counts and watermarks before and after it, and what it added to each aggregate attribute.
type OwnWrite struct {
	Target       Key
	OldN, NewN   uint64
	OldWM, NewWM string
	First        string // the first record the write applied ("" when the item does not say)
	Added        map[string]Number
	// Fold: the write moved parked deltas (apply's fold), no record of the stream: what it
	// added was in no image of the target and repeats nothing.
	Fold bool
	// Restored and Covers: the write restored the image of the target deleted at record
	// Restored, which held every record up to Covers ("" when it restored none).
	Restored, Covers string
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

// RecordPlan is what one stream record asks for.
type RecordPlan struct {
	Seq     string
	EventID string
	Op      string // INSERT, MODIFY or REMOVE
	Stream  string // the stream the record came from (its eventSourceARN)
	PK      string // the record's partition key value
	SK      string // the record's sort key value ("" for none)
	Entity  string // the matched entity ("" for none)
	Deltas  []Delta
	Writes  []Write
	FanOuts []FanOut
	Pulls   []Pull
	// Extremes are the record's raises and rechecks of max and min targets.
	Extremes []Extreme
	// Folds are targets that just appeared (their INSERT): the deltas parked while they
	// were missing are moved into them.
	Folds []Key
	// Own is set for a record of Denorm's own write of a watermarked target: a restore of
	// an application's write earlier in the batch learns from it what was repeated.
	Own *OwnWrite
	// Job is set for a fan-out job item's record: the executor continues that job.
	Job    record.Item
	JobKey Key
	// Unlinked counts the rule effects left out because the item does not carry a variable
	// of the target's key (a parent attribute removed or never set, a sparse index key
	// absent): the item is linked to no target of that rule, which is correct, not a failure.
	Unlinked int
	// NoImage is set for a record that carries neither image (a REMOVE without OldImage,
	// which DynamoDB Local emits when several clients delete one item at once): nothing to
	// apply.
	NoImage bool
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
	return len(p.Deltas) == 0 && len(p.Writes) == 0 && len(p.FanOuts) == 0 && len(p.Pulls) == 0 && len(p.Extremes) == 0 && len(p.Folds) == 0 && p.Job == nil
}
