package plan

import (
	"slices"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
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
	// Probes: probe items to answer, each once every record before it is applied.
	Probes []ProbeGroup
	// Watermarked: deltas applied to a target's state item under a sequence watermark, one
	// group per target and watermark (the target's own partition, or its relay items').
	Watermarked []TargetDeltas
	// Relays: deltas to targets in other partitions, written to relay items; one group per
	// (target, source).
	Relays []RelayGroup
	// Marked: deltas applied with a per-event idempotency marker, one group per event.
	Marked []EventDeltas
	// Refreshes: count and sum targets the application wrote, whose copy of the state is
	// put back; one per target, run after the deltas.
	Refreshes []RefreshGroup
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
	Ups  []value.TopEntry
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
		g.Ups = slices.DeleteFunc(g.Ups, func(e value.TopEntry) bool { return e.Key == key })
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
		if x.Raise != nil && (value.LatestBetter(x.Raise, x.Key, g.Raise, g.Key) || (value.Compare(x.Raise, g.Raise) == 0 && x.Key == g.Key)) {
			g.Raise, g.Key, g.Set, g.Remove = x.Raise, x.Key, x.Set, x.Remove
		}
		if value.LatestBetter(x.Recheck, x.RecheckKey, g.Recheck, g.RecheckKey) {
			g.Recheck, g.RecheckKey = x.Recheck, x.RecheckKey
		}
		g.Recompute = g.Recompute || x.Recompute
		return
	}
	if value.Better(k, x.Raise, g.Raise) {
		g.Raise = x.Raise
	}
	if value.Better(k, x.Recheck, g.Recheck) {
		g.Recheck = x.Recheck
	}
	g.Recompute = g.Recompute || x.Recompute
}

// RefreshGroup is the last Refresh of one target in the batch.
type RefreshGroup struct {
	Refresh
	Rec int
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

// ProbeGroup is a probe to answer; Rec is its record: the answer says that every record
// before it was applied.
type ProbeGroup struct {
	Key Key
	Rec int
}

// JobGroup is a fan-out job item to continue.
type JobGroup struct {
	Item record.Item
	Rec  int
}

// Entry is one record's delta to one attribute of a watermarked target.
type Entry struct {
	Rec    int
	Seq    string
	Rule   *rules.CompiledRule
	Amount value.Number
}

// TargetDeltas are the watermark-guarded deltas of one target, in record order, from one
// partition's records: the target's own (Watermark is rules.WatermarkAttr) or its relay
// items' (rules.RelayWatermarkAttr).
type TargetDeltas struct {
	Target    Key
	Watermark string
	Entries   []Entry
}

// Sum coalesces entries after watermark wm ("" = none): the amount per attribute (in first
// appearance order) and the lowest and highest sequence numbers taken.
func (t *TargetDeltas) Sum(wm string) (attrs []AttrAmount, minSeq, maxSeq string) {
	for _, e := range t.Entries {
		if wm != "" && record.CompareSeq(e.Seq, wm) <= 0 {
			continue
		}
		if minSeq == "" {
			minSeq = e.Seq
		}
		maxSeq = e.Seq
		attrs = addAmount(attrs, e.Rule, e.Amount)
	}
	return attrs, minSeq, maxSeq
}

// AttrAmount is a coalesced delta to one attribute.
type AttrAmount struct {
	Attribute string
	Rule      *rules.CompiledRule // the first rule writing the attribute
	Amount    value.Number
	Create    bool // a rule writing the attribute creates a missing target
}

func addAmount(list []AttrAmount, r *rules.CompiledRule, n value.Number) []AttrAmount {
	create := r.Agg.MissingTarget == rules.MissingCreate
	for i := range list {
		if list[i].Attribute == r.Agg.Attribute {
			list[i].Amount = list[i].Amount.Add(n)
			list[i].Create = list[i].Create || create
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
	Source  Key // the item the event changed
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
	refreshes := map[Key]int{}
	wm := map[[2]string]int{}
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
		if rp.Probe != nil {
			b.Probes = append(b.Probes, ProbeGroup{Key: *rp.Probe, Rec: i})
		}
		for _, f := range rp.Refreshes {
			rec := i
			if j, ok := refreshes[f.Target]; ok && (f.Copy || b.Refreshes[j].Copy) {
				// A part's copy and the application's write of the target are one refresh:
				// a failure must bring back the earlier record, whose image the refresh
				// holds (a made-up copy version to copy over).
				f, rec = f.merge(b.Refreshes[j].Refresh), b.Refreshes[j].Rec
			}
			upsert(refreshes, &b.Refreshes, f.Target, RefreshGroup{Refresh: f, Rec: rec})
		}
		var ev *EventDeltas
		for _, d := range rp.Deltas {
			// Watermarks hold only for records of one partition in order: the target's
			// own, or its relay items'.
			if attr := watermarkOf(d, rp.PK); attr != "" {
				gk := [2]string{d.Target.PK + "\x00" + d.Target.SK, attr}
				j, ok := wm[gk]
				if !ok {
					j = len(b.Watermarked)
					wm[gk] = j
					b.Watermarked = append(b.Watermarked, TargetDeltas{Target: d.Target, Watermark: attr})
				}
				b.Watermarked[j].Entries = append(b.Watermarked[j].Entries, Entry{Rec: i, Seq: rp.Seq, Rule: d.Rule, Amount: d.Amount})
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
				b.Marked = append(b.Marked, EventDeltas{Rec: i, EventID: rp.EventID, Seq: rp.Seq, Source: Key{PK: rp.PK, SK: rp.SK}})
				ev = &b.Marked[len(b.Marked)-1]
			}
			ev.add(d)
		}
	}
	b.Pulls = withoutRemoved(b.Pulls, recs)
	return b
}

func (ev *EventDeltas) add(d Delta) {
	for i := range ev.Targets {
		if ev.Targets[i].Target == d.Target {
			ev.Targets[i].Attrs = addAmount(ev.Targets[i].Attrs, d.Rule, d.Amount)
			return
		}
	}
	ev.Targets = append(ev.Targets, TargetAmounts{Target: d.Target, Attrs: addAmount(nil, d.Rule, d.Amount)})
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

// watermarkOf is the state attribute that guards delta d of a record of partition pk: the
// watermark of the target's own partition, or of its relay items', or "" when the rule's
// deltas to that target are not watermarked (marker mode).
func watermarkOf(d Delta, pk string) string {
	switch {
	case !d.Rule.Watermark:
		return ""
	case d.Target.PK == pk:
		return rules.WatermarkAttr
	case d.Rule.Kind == rules.KindDistinct && !d.Rule.Relay && d.Target.PK == rules.RelayPrefix+pk:
		// A distinct's reference item, which its sources in the target's partition
		// reach in that partition's order.
		return rules.WatermarkAttr
	case len(pk) == len(rules.RelayPrefix)+len(d.Target.PK) && pk[:len(rules.RelayPrefix)] == rules.RelayPrefix && pk[len(rules.RelayPrefix):] == d.Target.PK:
		return rules.RelayWatermarkAttr
	}
	return ""
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
