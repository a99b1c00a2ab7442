package plan

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// target plans what a record of a count or sum target asks for, on top of its rules as a
// source. Denorm owns the aggregate attributes of a target, whatever the application writes:
//
//   - a MODIFY by the application (a PutItem of the whole item, an UpdateItem that SETs or
//     REMOVEs a counter) is undone from the OldImage: each aggregate attribute gets
//     old - new added, exactly once like any delta, so deltas applied before or after it
//     still count. A watermark the write dropped or lowered is set again.
//   - a REMOVE parks the item's aggregates: a target re-created later gets the aggregate of
//     the sources that exist.
//   - an INSERT folds in what was parked while the target was missing, and undoes counter
//     values the application wrote into the new item.
//
// Denorm's own writes are told apart by the write count, which each of them raises by one.
func (e *eval) target() {
	c := &e.c
	switch {
	case c.Op == record.Insert && e.newE != nil:
		aggs := aggregatesInto(e.spec, e.newE)
		if len(aggs) == 0 {
			return
		}
		self := e.key(e.newB, nil)
		e.rp.Folds = append(e.rp.Folds, self)
		if denormCreated(e.spec, e.newE, aggs, c.New) {
			return
		}
		newWM := record.SeqOf(c.New[rules.WatermarkAttr])
		newN, _ := WritesOf(c.New)
		for _, r := range aggs {
			n := NumberOf(c.New[r.Agg.Attribute])
			// A watermarked attribute always gets one, zero or not: with a delete of the
			// target before it in the batch, it makes that delete a replacement
			// (coalesce drops it otherwise when zero).
			switch {
			case r.Watermark:
				e.addDelta(Delta{Rule: r, Target: self, Amount: n.Neg(), Restore: true,
					Replaced: &Replacement{NewWM: newWM, New: n, NewN: newN, Insert: true, Source: c.Source}})
			case !n.IsZero():
				e.addDelta(Delta{Rule: r, Target: self, Amount: n.Neg(), Restore: true})
			}
		}
	case c.Op == record.Remove && e.oldE != nil:
		aggs := aggregatesInto(e.spec, e.oldE)
		self := e.key(e.oldB, nil)
		covers := record.SeqOf(c.Old[rules.WatermarkAttr])
		for _, r := range aggs {
			if o := NumberOf(c.Old[r.Agg.Attribute]); !o.IsZero() || (r.Watermark && covers != "") {
				d := Delta{Rule: r, Target: self, Amount: o, Restore: true, Removal: true, Source: c.Source}
				if r.Watermark {
					d.Covers = covers
				}
				e.addDelta(d)
			}
		}
	case c.Op == record.Modify && e.oldE != nil && e.oldE == e.newE:
		aggs := aggregatesInto(e.spec, e.newE)
		if len(aggs) == 0 {
			return
		}
		if ownWrite(c.Old, c.New) {
			e.rp.Own = ownRecord(e.key(e.newB, nil), aggs, c.Old, c.New)
			return
		}
		changed := false
		for _, r := range aggs {
			a := r.Agg.Attribute
			changed = changed || !NumberOf(c.Old[a]).Sub(NumberOf(c.New[a])).IsZero()
		}
		// A dropped or lowered watermark needs setting again even when the counters are
		// right, so a redelivered record cannot count twice.
		wmDown := seqBelow(c.New[rules.WatermarkAttr], c.Old[rules.WatermarkAttr]) > 0
		if !changed && !wmDown {
			return
		}
		self := e.key(e.newB, nil)
		oldWM, newWM := record.SeqOf(c.Old[rules.WatermarkAttr]), record.SeqOf(c.New[rules.WatermarkAttr])
		for _, r := range aggs {
			a := r.Agg.Attribute
			d := NumberOf(c.Old[a]).Sub(NumberOf(c.New[a]))
			if !r.Watermark {
				if !d.IsZero() {
					e.addDelta(Delta{Rule: r, Target: self, Amount: d, Restore: true})
				}
				continue
			}
			// Every watermarked attribute gets one, zero or not: each carries what the
			// write left, for the executor's check of deltas applied again since.
			newN, _ := WritesOf(c.New)
			e.addDelta(Delta{Rule: r, Target: self, Amount: d, Restore: true, Covers: oldWM,
				Replaced: &Replacement{OldWM: oldWM, NewWM: newWM, New: NumberOf(c.New[a]), NewN: newN, Source: c.Source}})
		}
	}
}

// aggregatesInto returns the count and sum rules whose target is ent.
func aggregatesInto(s *rules.Set, ent *rules.EntityType) []*rules.CompiledRule {
	var out []*rules.CompiledRule
	for _, r := range s.RulesInto(ent) {
		if r.Kind.Aggregate() {
			out = append(out, r)
		}
	}
	return out
}

// ownWrite reports whether a MODIFY of a target is Denorm's: every write Denorm makes to a
// target adds exactly one to its write count, and none lowers or drops its watermark. The
// application does neither: it writes back a count it read earlier (the same, or lower than
// now), or none. A count read before another write of the application dropped it (a delete
// and re-put, an earlier write-back) can be one above the count now. The watermark it
// writes back with it is then often below the one Denorm stamped since; when it is not,
// the first-applied marks written back with it do not follow from the item's (firstsFollow).
func ownWrite(old, new record.Item) bool {
	o, ok := WritesOf(old)
	n, nok := WritesOf(new)
	return ok && nok && n == o+1 && seqBelow(new[rules.WatermarkAttr], old[rules.WatermarkAttr]) <= 0 && firstsFollow(old, new)
}

// firstsFollow reports whether a write left the first-applied marks as one of Denorm's
// does: it sets _dn_wl to the first record it applied and keeps _dn_wf unless there was
// none or that record is below it (apply.updateCounters, a fold), or it leaves both as
// they were (a fold that adds no record, a repair). An item written back as it was read in
// an earlier incarnation fails it (seed 7 of TestApplicationUnderRedelivery: a write count
// one above, the same watermark, _dn_wf 356 written back over 422 with _dn_wl left at 422).
func firstsFollow(old, new record.Item) bool {
	of, nf := record.SeqOf(old[rules.FirstAttr]), record.SeqOf(new[rules.FirstAttr])
	ol, nl := record.SeqOf(old[rules.LastFirstAttr]), record.SeqOf(new[rules.LastFirstAttr])
	if nf == of && nl == ol {
		return true
	}
	want := of
	if nl != "" && (of == "" || record.CompareSeq(nl, of) < 0) {
		want = nl
	}
	return nl != "" && nf == want
}

// ownRecord describes Denorm's own write of a watermarked target (nil for marker mode).
func ownRecord(self Key, aggs []*rules.CompiledRule, old, new record.Item) *OwnWrite {
	w := &OwnWrite{Target: self, OldWM: record.SeqOf(old[rules.WatermarkAttr]), NewWM: record.SeqOf(new[rules.WatermarkAttr]),
		Added: map[string]Number{}}
	if f := record.SeqOf(new[rules.LastFirstAttr]); f != record.SeqOf(old[rules.LastFirstAttr]) || w.NewWM != w.OldWM {
		w.First = f
	}
	w.OldN, _ = WritesOf(old)
	w.NewN, _ = WritesOf(new)
	if fd, ok := new[rules.FoldAttr].(*types.AttributeValueMemberN); ok {
		w.Fold = fd.Value == strconv.FormatUint(w.NewN, 10)
	}
	if rd := record.SeqOf(new[rules.RestoredAttr]); rd != "" && rd != record.SeqOf(old[rules.RestoredAttr]) {
		w.Restored, w.Covers = rd, record.SeqOf(new[rules.RestoredCoversAttr])
	}
	for _, r := range aggs {
		if r.Watermark {
			a := r.Agg.Attribute
			w.Added[a] = NumberOf(new[a]).Sub(NumberOf(old[a]))
		}
	}
	if len(w.Added) == 0 || w.NewWM == "" {
		return nil
	}
	return w
}

// WritesOf is an item's write count: 0 when absent; false when it is not a count.
func WritesOf(item record.Item) (uint64, bool) {
	v, ok := item[rules.WritesAttr]
	if !ok {
		return 0, true
	}
	n, isN := v.(*types.AttributeValueMemberN)
	if !isN {
		return 0, false
	}
	x, err := strconv.ParseUint(n.Value, 10, 64)
	return x, err == nil
}

// seqBelow compares two optional non-negative integer attributes (sequence numbers, write
// counts): +1 when b is present and greater than a (absent counts as below everything).
func seqBelow(a, b types.AttributeValue) int {
	bn, ok := b.(*types.AttributeValueMemberN)
	if !ok {
		return -1
	}
	an, ok := a.(*types.AttributeValueMemberN)
	if !ok {
		return 1
	}
	return record.CompareSeq(bn.Value, an.Value)
}

// denormCreated reports whether an inserted target is one Denorm created (missingTarget:
// create): it holds only keys, aggregate attributes and Denorm's own attributes.
func denormCreated(s *rules.Set, ent *rules.EntityType, aggs []*rules.CompiledRule, item record.Item) bool {
	if _, ok := item[rules.WatermarkAttr]; !ok {
		if _, ok := item[rules.WritesAttr]; !ok {
			return false
		}
	}
next:
	for name := range item {
		if strings.HasPrefix(name, rules.ReservedPrefix) || name == s.Table.PartitionKey || name == s.Table.SortKey || ownTTL(s, aggs, name) {
			continue
		}
		for _, k := range ent.Keys {
			if k.Attr == name {
				continue next
			}
		}
		for _, r := range aggs {
			if r.Agg.Attribute == name {
				continue next
			}
		}
		return false
	}
	return true
}

// NumberOf is an aggregate attribute's value: 0 when absent or not a number.
func NumberOf(v types.AttributeValue) Number {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		if x, err := ParseNumber(n.Value); err == nil {
			return x
		}
	}
	return Int(0)
}
