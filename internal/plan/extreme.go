package plan

import (
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// Extreme is what one record asks of a max or min rule's target.
type Extreme struct {
	Rule   *rules.CompiledRule
	Target Key
	// Raise is a source's value to write if it beats the stored one (nil: none): one
	// conditional UpdateItem, idempotent, so redelivery needs no guard.
	Raise types.AttributeValue
	// Recheck is a value that left the target (its source deleted, lowered, moved away or
	// out of the where): if the stored value is not better than it, it may have been the
	// extreme, and the target is recomputed from its sources (nil: none).
	Recheck types.AttributeValue
	// Recompute asks for a recomputation whatever is stored: the target was inserted (its
	// sources may have come first) or its attribute was removed.
	Recompute bool
	// QueryPK is the partition value of the query that reads the target's sources
	// (Rule.Extreme), rendered from the record's item.
	QueryPK string
	// For latest: Key is the raising source's key (LatestKey), which breaks ties of Raise;
	// Set and Remove are what it copies; RecheckKey is the key of the source whose value
	// left.
	Key        string
	Set        []AttrValue
	Remove     []string
	RecheckKey string
}

// LatestValues is what latest rule r copies from source item: the set attributes it has,
// and the ones it lacks (to remove from the target).
func LatestValues(r *rules.CompiledRule, item record.Item) ([]AttrValue, []string) {
	var set []AttrValue
	var remove []string
	for _, t := range r.Agg.SetOrder {
		if v, ok := r.SourceValue(item, r.Agg.Set[t]); ok {
			set = append(set, AttrValue{Name: t, Value: v})
		} else {
			remove = append(remove, t)
		}
	}
	return set, remove
}

// extreme plans a max or min rule for an item that is (or was) its source.
func (e *eval) extreme(r *rules.CompiledRule, wasSrc, isSrc bool) error {
	var oldV, newV types.AttributeValue
	inOld, inNew := e.members(r, wasSrc, isSrc)
	if inOld {
		oldV = value.ExtremeValue(r, e.c.Old)
	}
	if inNew {
		newV = value.ExtremeValue(r, e.c.New)
	}
	var oldX, newX Extreme
	var err error
	if oldV != nil {
		if oldX, err = e.extremeAt(r, true); err != nil {
			if !e.unlinked(err) {
				return err
			}
			oldV = nil // it counted nowhere
		}
	}
	if newV != nil {
		if newX, err = e.extremeAt(r, false); err != nil {
			if !e.unlinked(err) {
				return err
			}
			newV = nil // it counts nowhere now
		}
	}
	// A bucket whose ttl had passed when the record was written is left alone, as counts
	// leave it: DynamoDB deletes it anyway.
	if oldV != nil && e.expired(r, oldX.Target) {
		oldV = nil
	}
	if newV != nil && e.expired(r, newX.Target) {
		newV = nil
	}
	same := oldV != nil && newV != nil && oldX.Target == newX.Target
	latest := r.Kind == rules.KindLatest
	top := r.Kind == rules.KindTop
	if same && value.Compare(oldV, newV) == 0 && (!(latest || top) || !e.changed(r.SetAttributes())) {
		return nil
	}
	if newV != nil {
		newX.Raise = newV
		switch {
		case latest:
			newX.Key = value.LatestKey(r, e.c.New)
			newX.Set, newX.Remove = LatestValues(r, e.c.New)
		case top:
			// A listed source that fell is found against the stored list (TopNext).
			newX.Key = value.LatestKey(r, e.c.New)
			newX.Set = TopValues(r, e.c.New)
		}
		if !top && same && value.Compare(newV, oldV) != 0 && !value.Better(r.Kind, newV, oldV) {
			newX.Recheck = oldV // lowered (max) or raised (min): it may have been the extreme
			if latest {
				newX.RecheckKey = value.LatestKey(r, e.c.Old)
			}
		}
		e.rp.Extremes = append(e.rp.Extremes, newX)
	}
	if oldV != nil && !same {
		oldX.Recheck = oldV
		if latest || top {
			oldX.RecheckKey = value.LatestKey(r, e.c.Old)
		}
		e.rp.Extremes = append(e.rp.Extremes, oldX)
	}
	return nil
}

// extremeAt renders the target of rule r and its sources' query from the old or new image.
func (e *eval) extremeAt(r *rules.CompiledRule, old bool) (Extreme, error) {
	t, err := e.render(old, r.Target)
	if err != nil {
		return Extreme{}, err
	}
	b := e.newB
	if old {
		b = e.oldB
	}
	q, err := b.Render(r.Extreme.PK)
	if err != nil {
		return Extreme{}, err
	}
	return Extreme{Rule: r, Target: t, QueryPK: q}, nil
}

// extremeTarget plans a max or min rule for an item that is its target: one inserted (its
// sources may have been written before it) or whose attribute was removed (an application's
// PutItem that dropped it; for latest also one that dropped a copied attribute) is
// recomputed from its sources.
func (e *eval) extremeTarget(r *rules.CompiledRule) error {
	switch {
	case e.c.Op == record.Insert:
	case e.c.Op == record.Modify && e.oldE == r.Target && e.c.Old[heldAttr(r)] != nil && e.c.New[heldAttr(r)] == nil:
	case e.c.Op == record.Modify && e.oldE == r.Target && r.Kind == rules.KindLatest && lostSet(r, e.c.Old, e.c.New):
	case e.c.Op == record.Modify && e.oldE == r.Target && rewritten(r, e.c.Old, e.c.New):
	default:
		return nil
	}
	q, err := e.newB.Render(r.Extreme.PK)
	if err != nil {
		if e.unlinked(err) {
			return nil
		}
		return fmt.Errorf("rendering the query of %s's sources: %w", r.Target.Name, err)
	}
	e.rp.Extremes = append(e.rp.Extremes, Extreme{Rule: r, Target: e.key(e.newB, r.Target), Recompute: true, QueryPK: q})
	return nil
}

// lostSet reports whether a write dropped a target attribute latest rule r copies: an
// application's PutItem that wrote back the _dnl and _dnk it read earlier but not the
// copied attributes (Denorm's, which it does not know) keeps heldAttr yet loses them.
func lostSet(r *rules.CompiledRule, old, new record.Item) bool {
	for _, t := range r.Agg.SetOrder {
		if old[t] != nil && new[t] == nil {
			return true
		}
	}
	return false
}

// rewritten reports whether a write other than Denorm's changed what rule r keeps on its
// target (the value; for latest, its by value, key and copied attributes): Denorm advances
// the rule's version with every write of it, so a change while the version did not
// advance was written by an application (a PutItem of an item it read earlier, a SET).
func rewritten(r *rules.CompiledRule, old, new record.Item) bool {
	kept := []string{r.Agg.Attribute}
	if r.Kind == rules.KindLatest {
		kept = append([]string{r.LatestBy, r.LatestKey}, r.Agg.SetOrder...)
	}
	changed := false
	for _, a := range kept {
		changed = changed || !value.Equal(old[a], new[a])
	}
	if !changed {
		return false
	}
	ov, _ := old[r.ExtremeVersion].(*types.AttributeValueMemberN)
	nv, _ := new[r.ExtremeVersion].(*types.AttributeValueMemberN)
	if nv == nil {
		return true
	}
	if ov == nil {
		return false
	}
	a, errA := value.ParseNumber(ov.Value)
	b, errB := value.ParseNumber(nv.Value)
	return errA != nil || errB != nil || b.Sub(a).Sign() <= 0
}

// heldAttr is the target attribute whose loss makes a max, min or latest recompute.
func heldAttr(r *rules.CompiledRule) string {
	if r.Kind == rules.KindLatest {
		return r.LatestBy
	}
	return r.Agg.Attribute
}

// ExtremeSource returns the target and the value that item gives max or min rule r: false
// when it is no source of r, fails the rule's where, has no number or string value, or
// links to no target. The recompute and `denorm verify` read sources with it.
func ExtremeSource(r *rules.CompiledRule, item record.Item) (Key, types.AttributeValue, bool) {
	b, ok := r.Source.Match(item, nil)
	if !ok || !value.Where(r.Agg, item) {
		return Key{}, nil, false
	}
	v := value.ExtremeValue(r, item)
	if v == nil {
		return Key{}, nil, false
	}
	k, err := renderKey(b, r.Target)
	if err != nil {
		return Key{}, nil, false
	}
	return k, v, true
}

// ExtremeProjection is what a recompute reads of each source: the attributes that
// recognise it and render its target, its value and its where attributes.
func ExtremeProjection(r *rules.CompiledRule) []string {
	var out []string
	add := func(a string) {
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, k := range r.Source.Keys {
		add(k.Attr)
	}
	add(r.Source.TypeAttr)
	add(value.SortAttr(r))
	for _, src := range r.SetAttributes() {
		add(src)
	}
	for _, w := range r.Agg.WhereAttributes() {
		add(w)
	}
	// Target variables a source holds as plain attributes (Post.userId -> USER#{userId}).
	for _, t := range []*keys.Template{r.Target.PK, r.Target.SK} {
		if t == nil {
			continue
		}
		for _, v := range t.Vars() {
			if slices.Contains(r.Source.Attributes, v) {
				add(v)
			}
		}
	}
	return out
}
