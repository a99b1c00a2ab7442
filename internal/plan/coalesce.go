package plan

import (
	"slices"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// Batch is the coalesced effects of consecutive records of one invocation. Each group knows
// Rec, the index of the earliest record that stays unapplied if the group fails: what the
// handler reports as the batch item failure.
type Batch struct {
	Records []RecordPlan
	// Writes: one per (rule, target), the newest version wins (older ones are superseded,
	// so their records are done once the newest lands).
	Writes []WriteGroup
	// FanOuts: one per (rule, source), the newest version wins.
	FanOuts []FanOutGroup
	// Pulls: one per (rule, target).
	Pulls []PullGroup
	// Jobs: fan-out job items to continue, one per job key (the newest image).
	Jobs []JobGroup
	// Watermarked: deltas applied with a per-target sequence watermark, one group per target.
	Watermarked []TargetDeltas
	// Relays: deltas to targets in other partitions, written to relay items in the
	// targets' partitions; one group per (target, source).
	Relays []RelayGroup
	// Marked: deltas applied with a per-event idempotency marker, one group per event.
	Marked []EventDeltas
	// Folds: targets that appeared, to receive what was parked while they were missing;
	// one per target, run after the deltas.
	Folds []FoldGroup
	// Extremes: one per (max or min rule, target): the best raise, the value most likely
	// to have been the extreme among those that left, and whether to recompute anyway.
	Extremes []ExtremeGroup
}

// ExtremeGroup is the coalesced Extremes of one (rule, target). Rec is its earliest record:
// a raise and a recompute are idempotent, so a failed group is simply applied again.
type ExtremeGroup struct {
	Extreme
	Rec int
	// For top: Ups are the entries of the sources that are members of the target after the
	// batch (one per source, its newest), Left the keys of those that no longer are.
	Ups  []TopEntry
	Left []string
}

// newExtremeGroup opens the group of x, the first of its (rule, target) in record rec.
func newExtremeGroup(x Extreme, rec int) ExtremeGroup {
	if x.Rule.Kind != rules.KindTop {
		return ExtremeGroup{Extreme: x, Rec: rec}
	}
	g := ExtremeGroup{Extreme: Extreme{Rule: x.Rule, Target: x.Target, QueryPK: x.QueryPK}, Rec: rec}
	g.merge(x)
	return g
}

// mergeTop adds a top effect: the newest record of each source decides whether it is in.
func (g *ExtremeGroup) mergeTop(x Extreme) {
	drop := func(key string) {
		g.Ups = slices.DeleteFunc(g.Ups, func(e TopEntry) bool { return e.Key == key })
		g.Left = slices.DeleteFunc(g.Left, func(k string) bool { return k == key })
	}
	if x.Recheck != nil {
		drop(x.RecheckKey)
		g.Left = append(g.Left, x.RecheckKey)
	}
	if x.Raise != nil {
		drop(x.Key)
		g.Ups = append(g.Ups, TopEntryOfRaise(x))
	}
	g.Recompute = g.Recompute || x.Recompute
}

// merge adds x to the group: raises keep the best value, rechecks the best value that left
// (if it was not the extreme, no worse one was).
func (g *ExtremeGroup) merge(x Extreme) {
	k := x.Rule.Kind
	if k == rules.KindTop {
		g.mergeTop(x)
		return
	}
	if k == rules.KindLatest {
		// A later record of the same source (same value and key) brings newer attributes.
		if x.Raise != nil && (LatestBetter(x.Raise, x.Key, g.Raise, g.Key) || (CompareValues(x.Raise, g.Raise) == 0 && x.Key == g.Key)) {
			g.Raise, g.Key, g.Set, g.Remove = x.Raise, x.Key, x.Set, x.Remove
		}
		if LatestBetter(x.Recheck, x.RecheckKey, g.Recheck, g.RecheckKey) {
			g.Recheck, g.RecheckKey = x.Recheck, x.RecheckKey
		}
		g.Recompute = g.Recompute || x.Recompute
		return
	}
	if Better(k, x.Raise, g.Raise) {
		g.Raise = x.Raise
	}
	if Better(k, x.Recheck, g.Recheck) {
		g.Recheck = x.Recheck
	}
	g.Recompute = g.Recompute || x.Recompute
}

// FoldGroup is a target that appeared in record Rec, whose sequence number is Seq: deltas
// parked for records before it are moved into it, except those of records up to Covers: the
// watermark of a restore the batch applies before it (a deleted target's image holds them).
// Source is the stream of its record, to read on in for Denorm's writes of the target since.
type FoldGroup struct {
	Target Key
	Rec    int
	Seq    string
	Covers string
	Source string
}

// WriteGroup is the newest Write for one (rule, target).
type WriteGroup struct {
	Write
	Rec int
}

// FanOutGroup is the newest FanOut for one (rule, source).
type FanOutGroup struct {
	FanOut
	Rec int
}

// PullGroup is the last Pull for one (rule, target).
type PullGroup struct {
	Pull
	Rec int
}

// JobGroup is a fan-out job item to continue.
type JobGroup struct {
	Item record.Item
	Rec  int
}

// Entry is one record's delta to one attribute of a watermarked target.
type Entry struct {
	Rec     int
	Seq     string
	Rule    *rules.CompiledRule
	Amount  Number
	Restore bool // never creates the target
	// Replaced: the application's write this restore undoes (see Delta.Replaced).
	Replaced *Replacement
	Covers   string // see Delta.Covers
	Removal  bool   // see Delta.Removal
	Source   string // see Delta.Source
}

// TargetDeltas are the watermark-guarded deltas of one target, in record order.
type TargetDeltas struct {
	Target  Key
	Entries []Entry
	// Await is the record of a delete of the target that ends the batch (not its first
	// record), whose INSERT may come next: the executor fails it to read it again first in
	// a batch that holds what follows (-1: none).
	Await int
}

// Sum coalesces entries after watermark wm ("" = none): the amount per attribute (in first
// appearance order), the lowest and highest sequence numbers taken, and whether every rule
// involved creates a missing target. Entries a restore covers (records the image it brings
// back holds already) are left out like those at or below the watermark.
func (t *TargetDeltas) Sum(wm string) (attrs []AttrAmount, minSeq, maxSeq string, create bool) {
	create = true
	from := wm
	for _, e := range t.Entries {
		from = MaxSeq(from, e.Covers)
	}
	for _, e := range t.Entries {
		if from != "" && record.CompareSeq(e.Seq, from) <= 0 {
			continue
		}
		if minSeq == "" {
			minSeq = e.Seq
		}
		maxSeq = e.Seq
		if e.Rule.Agg.MissingTarget != rules.MissingCreate || e.Restore {
			create = false
		}
		attrs = addAmount(attrs, e.Rule, e.Amount, e.Restore)
	}
	return attrs, minSeq, maxSeq, create
}

// Restored is the last delete of the target among the entries Sum took (minSeq to maxSeq)
// whose image a write of them restores (a delete alone, or paired with its re-put), and
// that image's watermark; "" when there is none.
func (t *TargetDeltas) Restored(minSeq, maxSeq string) (del, covers string) {
	for _, e := range t.Entries {
		if e.Covers == "" || !(e.Removal || (e.Replaced != nil && e.Replaced.At != "")) {
			continue
		}
		if record.CompareSeq(e.Seq, minSeq) >= 0 && record.CompareSeq(e.Seq, maxSeq) <= 0 {
			del, covers = e.Seq, e.Covers
		}
	}
	return del, covers
}

// AttrAmount is a coalesced delta to one attribute. Deltas that may create a missing
// target and deltas that may not are kept apart: a missing target parks the second kind.
type AttrAmount struct {
	Attribute string
	Rule      *rules.CompiledRule // the first rule writing the attribute
	Amount    Number
	Create    bool // the deltas create a missing target
}

func addAmount(list []AttrAmount, r *rules.CompiledRule, n Number, restore bool) []AttrAmount {
	create := r.Agg.MissingTarget == rules.MissingCreate && !restore
	for i := range list {
		if list[i].Attribute == r.Agg.Attribute && list[i].Create == create {
			list[i].Amount = list[i].Amount.Add(n)
			return list
		}
	}
	return append(list, AttrAmount{Attribute: r.Agg.Attribute, Rule: r, Amount: n, Create: create})
}

// EventDeltas are one event's marker-guarded deltas, coalesced per target.
type EventDeltas struct {
	Rec     int
	EventID string
	Seq     string
	Targets []TargetAmounts
}

// TargetAmounts are coalesced deltas to one target.
type TargetAmounts struct {
	Target Key
	Attrs  []AttrAmount
}

// Coalesce groups the records' effects per target.
func Coalesce(recs []RecordPlan) *Batch {
	b := &Batch{Records: recs}
	writes := map[ruleKey]int{}
	fans := map[ruleKey]int{}
	pulls := map[ruleKey]int{}
	jobs := map[Key]int{}
	folds := map[Key]int{}
	wm := map[Key]int{}
	relays := map[[2]Key]int{}
	extremes := map[ruleKey]int{}
	for i := range recs {
		rp := &recs[i]
		for _, x := range rp.Extremes {
			if j, ok := extremes[ruleKey{x.Rule, x.Target}]; ok {
				b.Extremes[j].merge(x)
				continue
			}
			extremes[ruleKey{x.Rule, x.Target}] = len(b.Extremes)
			b.Extremes = append(b.Extremes, newExtremeGroup(x, i))
		}
		for _, w := range rp.Writes {
			upsert(writes, &b.Writes, ruleKey{w.Rule, w.Target}, WriteGroup{Write: w, Rec: i})
		}
		for _, f := range rp.FanOuts {
			upsert(fans, &b.FanOuts, ruleKey{f.Rule, f.Source}, FanOutGroup{FanOut: f, Rec: i})
		}
		for _, p := range rp.Pulls {
			upsert(pulls, &b.Pulls, ruleKey{p.Rule, p.Target}, PullGroup{Pull: p, Rec: i})
		}
		if rp.Job != nil {
			upsert(jobs, &b.Jobs, rp.JobKey, JobGroup{Item: rp.Job, Rec: i})
		}
		for _, k := range rp.Folds {
			// The last record that needs a fold moves what was parked before it.
			upsert(folds, &b.Folds, k, FoldGroup{Target: k, Rec: i, Seq: rp.Seq, Source: rp.Stream})
		}
		var ev *EventDeltas
		for _, d := range rp.Deltas {
			// Watermarks hold only where the target shares the record's partition.
			if d.Rule.Watermark && d.Target.PK == rp.PK {
				j, ok := wm[d.Target]
				if !ok {
					j = len(b.Watermarked)
					wm[d.Target] = j
					b.Watermarked = append(b.Watermarked, TargetDeltas{Target: d.Target, Await: -1})
				}
				b.Watermarked[j].Entries = append(b.Watermarked[j].Entries, Entry{Rec: i, Seq: rp.Seq, Rule: d.Rule, Amount: d.Amount, Restore: d.Restore, Replaced: d.Replaced, Covers: d.Covers, Removal: d.Removal, Source: d.Source})
				continue
			}
			if d.Rule.Relay {
				src := Key{PK: rp.PK, SK: rp.SK}
				j, ok := relays[[2]Key{d.Target, src}]
				if !ok {
					j = len(b.Relays)
					relays[[2]Key{d.Target, src}] = j
					b.Relays = append(b.Relays, RelayGroup{Target: d.Target, Source: src})
				}
				b.Relays[j].Entries = append(b.Relays[j].Entries, Entry{Rec: i, Seq: rp.Seq, Rule: d.Rule, Amount: d.Amount})
				continue
			}
			if ev == nil {
				b.Marked = append(b.Marked, EventDeltas{Rec: i, EventID: rp.EventID, Seq: rp.Seq})
				ev = &b.Marked[len(b.Marked)-1]
			}
			ev.add(d)
		}
	}
	for j := range b.Watermarked {
		t := &b.Watermarked[j]
		t.pairReplacements()
		t.follow(recs)
		if last := len(t.Entries) - 1; last >= 0 && t.Entries[last].Removal && t.Entries[last].Rec == len(recs)-1 && t.Entries[last].Rec > 0 {
			t.Await = t.Entries[last].Rec
		}
	}
	b.Pulls = withoutRemoved(b.Pulls, recs)
	// A restore applied with the batch (a deleted target's, say) covers the parked entries
	// of its records too: the fold must leave them out as it leaves out the batch's.
	for i := range b.Folds {
		f := &b.Folds[i]
		if j, ok := wm[f.Target]; ok {
			for _, e := range b.Watermarked[j].Entries {
				if record.CompareSeq(e.Seq, f.Seq) <= 0 {
					f.Covers = MaxSeq(f.Covers, e.Covers)
				}
			}
		}
	}
	// An INSERT's entries that paired with no delete and add nothing leave a group empty.
	kept := b.Watermarked[:0]
	for _, t := range b.Watermarked {
		if len(t.Entries) > 0 {
			kept = append(kept, t)
		}
	}
	b.Watermarked = kept
	return b
}

func (ev *EventDeltas) add(d Delta) {
	for i := range ev.Targets {
		if ev.Targets[i].Target == d.Target {
			ev.Targets[i].Attrs = addAmount(ev.Targets[i].Attrs, d.Rule, d.Amount, d.Restore)
			return
		}
	}
	ev.Targets = append(ev.Targets, TargetAmounts{Target: d.Target, Attrs: addAmount(nil, d.Rule, d.Amount, d.Restore)})
}

// upsert replaces the group at key k (a later record supersedes an earlier one, keeping
// the first one's position) or appends it.
func upsert[K comparable, G any](index map[K]int, list *[]G, k K, g G) {
	if j, ok := index[k]; ok {
		(*list)[j] = g
		return
	}
	index[k] = len(*list)
	*list = append(*list, g)
}

type ruleKey struct {
	rule *rules.CompiledRule
	key  Key
}

// MaxSeq is the greater of two optional sequence numbers ("" is below every one).
func MaxSeq(a, b string) string {
	if a == "" || (b != "" && record.CompareSeq(b, a) > 0) {
		return b
	}
	return a
}

// pairReplacements makes a delete of the target and the application's INSERT of it later
// in the batch one replacement, as a MODIFY would be: the delete's restore adds the deleted
// image's value, the INSERT's entry takes out what the new item holds; the restore expects
// the item as the INSERT left it, and learns what Denorm wrote onto it since (a batch
// delivered again onto the new item). The INSERT keeps its own entry, zero or not, so the
// write's watermark covers it: the batch may come again from a record between the two (one
// that failed), and the INSERT alone would undo the new item's values a second time. An
// INSERT without a delete before it keeps only a non-zero amount (undoing counter values
// the application wrote).
func (t *TargetDeltas) pairReplacements() {
	kept := t.Entries[:0]
	for _, e := range t.Entries {
		if e.Replaced == nil || !e.Replaced.Insert {
			kept = append(kept, e)
			continue
		}
		paired := false
		for i := len(kept) - 1; i >= 0; i-- {
			if d := &kept[i]; d.Removal && d.Rule == e.Rule {
				d.Replaced = &Replacement{OldWM: d.Covers, NewWM: e.Replaced.NewWM, New: e.Replaced.New, NewN: e.Replaced.NewN,
					Source: e.Replaced.Source, AtRec: e.Rec, At: e.Seq}
				d.Removal, paired = false, true
				break
			}
		}
		if !paired && e.Amount.IsZero() {
			continue
		}
		e.Replaced = nil
		kept = append(kept, e)
	}
	t.Entries = kept
}

// follow gives each replacement of the group what Denorm's own writes of the target after it
// did, from their records later in the batch (Since). The chain runs from the write count
// and watermark the application left, one write at a time; it ends at a record that does
// not continue it (another application write), or is dropped when one write applied
// records on both sides of the old watermark.
func (t *TargetDeltas) follow(recs []RecordPlan) {
	for i := range t.Entries {
		rep := t.Entries[i].Replaced
		if rep == nil || rep.OldWM == "" {
			continue
		}
		var owns []*OwnWrite
		from := t.Entries[i].Rec
		if rep.At != "" {
			from = rep.AtRec // after the INSERT of a delete and re-put
		}
		for k := from + 1; k < len(recs); k++ {
			if w, ok := recs[k].WriteOf(t.Target); ok {
				owns = append(owns, w)
			}
		}
		if s, _ := rep.Follow(owns); s != nil && (s.Done || s.N != rep.NewN) {
			rep.Since = s
		}
	}
}

// WriteOf reports whether the record is a write of target that matters to a chain of
// Denorm's writes: Denorm's own (w), or another writer's that ends the chain (w nil: a
// delete, an insert, or a write that replaced Denorm's attributes).
func (rp *RecordPlan) WriteOf(target Key) (w *OwnWrite, ok bool) {
	if rp.Own != nil && rp.Own.Target == target {
		return rp.Own, true
	}
	if rp.PK != target.PK || rp.SK != target.SK {
		return nil, false
	}
	if rp.Op == "REMOVE" || rp.Op == "INSERT" {
		return nil, true
	}
	for _, d := range rp.Deltas {
		if d.Replaced != nil && d.Target == target {
			return nil, true
		}
	}
	return nil, false
}

// Follow is what Denorm's own writes of the replaced target after the application's write
// did, given the target's writes in stream order (WriteOf: every one, or the first ones;
// nil for another writer's). It is nil when one write straddles the old watermark (which of
// its records repeated cannot be told). Done is set once later records cannot change it.
func (rep *Replacement) Follow(writes []*OwnWrite) (s *Since, straddle bool) {
	s = &Since{N: rep.NewN, WM: rep.NewWM, Repeats: map[string]Number{}}
	for _, w := range writes {
		if w == nil || w.OldN != s.N || w.OldWM != s.WM {
			s.Done = true // another writer's record: the chain ends here
			return s, false
		}
		switch {
		case w.Fold:
			// Parked deltas moved in: no image held them, so they repeat nothing; past the
			// old watermark, later writes apply only records after it.
			s.Done = record.CompareSeq(w.NewWM, rep.OldWM) > 0
		case record.CompareSeq(w.NewWM, rep.OldWM) <= 0:
			for a, n := range w.Added {
				s.Repeats[a] = s.Repeats[a].Add(n)
			}
		case w.First != "" && record.CompareSeq(w.First, rep.OldWM) > 0:
			s.Done = true // it applied only records after the old watermark
		case record.CompareSeq(w.OldWM, rep.OldWM) < 0:
			return nil, true
		default:
			s.Done = true // past the old watermark: later writes applied only new records
		}
		s.N, s.WM = w.NewN, w.NewWM
		if s.Done {
			return s, false
		}
	}
	return s, false
}

// withoutRemoved drops the pulls whose target a later record of the batch deletes: the
// item is gone from the table already (a stream record follows its write), so the pull's
// write could only be refused by its guard, at 1 WCU. An item put again after the delete
// has its own record and pull.
func withoutRemoved(pulls []PullGroup, recs []RecordPlan) []PullGroup {
	removed := map[Key]int{} // the last record that deletes the item
	for i := range recs {
		if recs[i].Op == "REMOVE" {
			removed[Key{PK: recs[i].PK, SK: recs[i].SK}] = i
		}
	}
	if len(removed) == 0 {
		return pulls
	}
	kept := pulls[:0]
	for _, p := range pulls {
		if i, ok := removed[p.Target]; !ok || i < p.Rec {
			kept = append(kept, p)
		}
	}
	return kept
}
