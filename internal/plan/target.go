package plan

import (
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// target plans what a record of a count or sum target asks for, on top of its rules as a
// source. The exact values live in the target's state item, which only Denorm writes; the
// target shows a copy (its aggregate attributes and rules.CopyVersionAttr). When the
// application inserts the target or changes that copy (a whole-item PutItem of a form read
// earlier, a counter SET or removed, an item deleted and put back), the copy is put back
// from the state: a Refresh. A delete of the target asks for nothing: the state keeps
// counting, and the target's INSERT, if it comes back, refreshes it.
//
// Denorm's own copy writes are told apart without a read: they change only the copy, and
// raise a copy version that was there before. The application can only write back a
// version it read, so a write of its that passes for Denorm's must have changed nothing
// but the copy to a version at least as new as the item's; the next copy of a newer
// state, or the next refresh, puts it right.
func (e *eval) target() {
	c := &e.c
	switch {
	case c.Op == record.Insert && e.newE != nil:
		if aggs := aggregatesInto(e.spec, e.newE); len(aggs) > 0 {
			e.rp.Refreshes = append(e.rp.Refreshes, Refresh{Target: e.key(e.newB, nil), Attrs: attrsOf(aggs), Seen: c.New})
		}
	case c.Op == record.Modify && e.oldE != nil && e.oldE == e.newE:
		aggs := aggregatesInto(e.spec, e.newE)
		if len(aggs) == 0 || !copyChanged(aggs, c.Old, c.New) || ownCopy(e.spec, aggs, c.Old, c.New) {
			return
		}
		e.rp.Refreshes = append(e.rp.Refreshes, Refresh{Target: e.key(e.newB, nil), Attrs: attrsOf(aggs), Seen: c.New})
	}
}

// attrsOf returns the attributes count and sum rules aggs write, each once.
func attrsOf(aggs []*rules.CompiledRule) []string {
	var out []string
	for _, r := range aggs {
		if !slices.Contains(out, r.Agg.Attribute) {
			out = append(out, r.Agg.Attribute)
		}
	}
	return out
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

// copyChanged reports whether a write changed the target's copy: an aggregate attribute or
// the copy version.
func copyChanged(aggs []*rules.CompiledRule, old, new record.Item) bool {
	if !value.Equal(old[rules.CopyVersionAttr], new[rules.CopyVersionAttr]) {
		return true
	}
	for _, r := range aggs {
		if !value.Equal(old[r.Agg.Attribute], new[r.Agg.Attribute]) {
			return true
		}
	}
	return false
}

// ownCopy reports whether a MODIFY of a target is one of Denorm's copy writes: it raised a
// copy version the item had, and changed nothing else than the copy (and the table's TTL
// attribute, which a copy into a time bucket sets).
func ownCopy(s *rules.Set, aggs []*rules.CompiledRule, old, new record.Item) bool {
	ov, ok := old[rules.CopyVersionAttr]
	if !ok || seqBelow(ov, new[rules.CopyVersionAttr]) <= 0 {
		return false
	}
	owned := func(name string) bool {
		if name == rules.CopyVersionAttr || name == s.Table.TTLAttribute {
			return true
		}
		for _, r := range aggs {
			if r.Agg.Attribute == name {
				return true
			}
		}
		return false
	}
	for name, v := range new {
		if !owned(name) && !value.Equal(v, old[name]) {
			return false
		}
	}
	for name := range old {
		if _, ok := new[name]; !ok && !owned(name) {
			return false
		}
	}
	return true
}

// seqBelow compares two optional non-negative integer attributes (sequence numbers,
// versions): +1 when b is present and greater than a (absent counts as below everything).
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
