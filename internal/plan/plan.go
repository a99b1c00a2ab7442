package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// ErrUnknownKind is returned (wrapped) for a rule of a kind the planner does not handle: a
// kind added to rules.Kinds without a planner case.
var ErrUnknownKind = errors.New("rule kind not handled by the planner")

// Planner evaluates a compiled rule set against stream records. It holds scratch space, so
// one Planner serves one goroutine; create one per batch or per worker.
type Planner struct {
	set        *rules.Set
	oldV, newV []string
	exp        expiryMemo
}

// New returns a Planner for set.
func New(set *rules.Set) *Planner {
	return &Planner{set: set, oldV: make([]string, 0, 16), newV: make([]string, 0, 16)}
}

// Plan returns the effects of one record. An error means the record cannot be applied as
// the rules say (a key cannot be rendered from the item's values, a sum value is not a
// number): the caller fails the record with that reason.
func (p *Planner) Plan(c *record.Change) (RecordPlan, error) {
	s := p.set
	pos, err := c.Position()
	if err != nil {
		return RecordPlan{Seq: c.Seq, EventID: c.EventID, Op: c.Op.String()}, fmt.Errorf("record %s: %w", c.EventID, err)
	}
	rp := RecordPlan{Seq: pos, EventID: c.EventID, Op: c.Op.String()}
	pk, _ := c.Keys[s.Table.PartitionKey].(*types.AttributeValueMemberS)
	if pk == nil {
		return rp, fmt.Errorf("record %s: key attribute %s missing or not a string", c.EventID, s.Table.PartitionKey)
	}
	rp.PK = pk.Value
	if sk, ok := c.Keys[s.Table.SortKey].(*types.AttributeValueMemberS); ok {
		rp.SK = sk.Value
	}
	if strings.HasPrefix(rp.PK, rules.RelayPrefix) && strings.HasPrefix(rp.SK, rules.DistinctRefPrefix) {
		return p.distinctRef(c, rp), nil
	}
	if strings.HasPrefix(rp.PK, rules.RelayPrefix) {
		return p.relayed(c, rp), nil
	}
	if t, ok := PartTarget(Key{PK: rp.PK, SK: rp.SK}); ok {
		// A part's removal (its bucket expired) changes no copy, and a part of a target no
		// rule splits any more is not read: cleanup's writes of it change nothing.
		if c.New != nil && s.Split(t.PK, t.SK) > 0 {
			rp.Refreshes = []Refresh{p.partCopy(t)}
		}
		return rp, nil
	}
	if rules.IsReserved(pk.Value) || strings.HasPrefix(rp.SK, rules.RelayPrefix) {
		// A relay item of the layout before state items (in its target's partition) carries
		// nothing any more: `denorm cleanup --legacy` deletes it.
		if strings.HasPrefix(pk.Value, rules.ProbePrefix) && c.New != nil && c.New[rules.ProbeAnswerAttr] == nil {
			rp.Probe = &Key{PK: pk.Value, SK: rp.SK}
		}
		if strings.HasPrefix(pk.Value, rules.JobPrefix) && c.New != nil {
			rp.Job = c.New
			rp.JobKey = Key{PK: pk.Value}
			if sk, ok := c.Keys[s.Table.SortKey].(*types.AttributeValueMemberS); ok {
				rp.JobKey.SK = sk.Value
			}
		}
		return rp, nil
	}
	var oldE, newE *rules.EntityType
	var oldB, newB rules.Binding
	if c.Old != nil {
		oldE, oldB = s.Match(c.Old, p.oldV[:0])
	}
	if c.New != nil {
		newE, newB = s.Match(c.New, p.newV[:0])
	}
	if newE != nil {
		rp.Entity = newE.Name
	} else if oldE != nil {
		rp.Entity = oldE.Name
	}
	if c.Old == nil && c.New == nil {
		rp.NoImage = true
		return rp, nil
	}
	if oldE == nil && newE == nil {
		return rp, nil
	}
	// The evaluation lives on the stack and holds a copy of the record, so that neither
	// it nor the caller's Change is left for the collector.
	ev := &eval{c: *c, version: pos, oldE: oldE, newE: newE, oldB: oldB, newB: newB, rp: rp, spec: s, exp: &p.exp}
	// Rules this item is the source of (as it was, or as it is now). A rule has one source
	// entity, so the two lists are disjoint when the entity changed.
	for i, ent := range [2]*rules.EntityType{oldE, newE} {
		if ent == nil || (i == 1 && ent == oldE) {
			continue
		}
		for _, r := range s.RulesFrom(ent) {
			if err := ev.source(r); err != nil {
				return ev.rp, fmt.Errorf("record %s: rule %q: %w", c.EventID, r.Name, err)
			}
		}
	}
	// Copy rules this item is the target of: fill it from its source.
	if newE != nil {
		for _, r := range s.RulesInto(newE) {
			if r.Kind != rules.KindCopy {
				continue
			}
			if err := ev.pull(r); err != nil {
				return ev.rp, fmt.Errorf("record %s: rule %q: %w", c.EventID, r.Name, err)
			}
		}
	}
	// Max and min rules this item is the target of: recompute one that appeared.
	if newE != nil {
		for _, r := range s.RulesInto(newE) {
			if !r.Kind.Extreme() {
				continue
			}
			if err := ev.extremeTarget(r); err != nil {
				return ev.rp, fmt.Errorf("record %s: rule %q: %w", c.EventID, r.Name, err)
			}
		}
	}
	// Count and sum rules this item is the target of: put back the copy of their state
	// when the application wrote it.
	ev.target()
	return ev.rp, nil
}

// unlinked reports whether err says the item lacks a variable of a key it links through
// (a parent attribute removed or never set, a sparse index key absent): the item then has
// no target under that rule, which is correct, and the effect is counted, not failed.
func (e *eval) unlinked(err error) bool {
	if errors.Is(err, keys.ErrNoValue) {
		e.rp.Unlinked++
		return true
	}
	return false
}

type eval struct {
	exp        *expiryMemo
	c          record.Change
	version    string
	oldE, newE *rules.EntityType
	oldB, newB rules.Binding
	rp         RecordPlan
	spec       *rules.Set
	// keys caches rendered primary keys: the same target is often rendered by several rules
	// (a comment's author is both counted into and copied from USER#{userId}). An array,
	// not a slice, keeps the eval on the stack; a key beyond it is rendered each time.
	keys  [4]renderedKey
	nkeys int
}

type renderedKey struct {
	ent *rules.EntityType
	old bool
	key Key
}

// source applies rule r for an item that is (or was) r's source.
func (e *eval) source(r *rules.CompiledRule) error {
	wasSrc := e.oldE == r.Source
	isSrc := e.newE == r.Source
	switch r.Kind {
	case rules.KindCopy:
		return e.copyPush(r, wasSrc, isSrc)
	case rules.KindMirror:
		return e.mirror(r, wasSrc, isSrc)
	case rules.KindCount, rules.KindSum:
		return e.aggregate(r, wasSrc, isSrc)
	case rules.KindDistinct:
		return e.distinct(r, wasSrc, isSrc)
	case rules.KindMax, rules.KindMin, rules.KindLatest, rules.KindTop:
		return e.extreme(r, wasSrc, isSrc)
	default:
		return fmt.Errorf("%w: %q", ErrUnknownKind, r.Kind)
	}
}

// changed reports whether any of attrs differs between the old and new images.
func (e *eval) changed(attrs []string) bool {
	for _, a := range attrs {
		if !value.Equal(e.c.Old[a], e.c.New[a]) {
			return true
		}
	}
	return false
}

func (e *eval) copyPush(r *rules.CompiledRule, wasSrc, isSrc bool) error {
	var set []AttrValue
	var remove []string
	del := false
	old := false
	switch {
	case isSrc && (!wasSrc || e.changed(r.Watched)):
		for _, t := range r.Copy.SetOrder {
			if v, ok := e.c.New[r.Copy.Set[t]]; ok {
				set = append(set, AttrValue{Name: t, Value: v})
			} else {
				remove = append(remove, t)
			}
		}
	case wasSrc && !isSrc:
		old = true
		switch r.Copy.OnSourceDelete {
		case rules.OnDeleteRemove:
			remove = append(remove, r.Copy.SetOrder...)
		case rules.OnDeleteDelete:
			del = true
		default:
			return nil
		}
	default:
		return nil
	}
	b := e.newB
	if old {
		b = e.oldB
	}
	src := e.key(b, r.Source)
	if r.Via == "key" {
		t, err := e.render(old, r.Target)
		if err != nil {
			if e.unlinked(err) {
				return nil
			}
			return err
		}
		e.rp.Writes = append(e.rp.Writes, Write{Rule: r, Target: t, Version: e.version, Set: set, Remove: remove, Delete: del})
		return nil
	}
	pkv, err := b.Render(r.QueryPK)
	if err != nil {
		if e.unlinked(err) {
			return nil
		}
		return err
	}
	e.rp.FanOuts = append(e.rp.FanOuts, FanOut{Rule: r, Source: src, PKValue: pkv, Version: e.version, Set: set, Remove: remove, Delete: del})
	return nil
}

func (e *eval) mirror(r *rules.CompiledRule, wasSrc, isSrc bool) error {
	var oldT, newT Key
	var err error
	if wasSrc {
		if oldT, err = e.render(true, r.Target); err != nil {
			if !e.unlinked(err) {
				return err
			}
			wasSrc = false // it had no mirror
		}
	}
	if isSrc {
		if newT, err = e.render(false, r.Target); err != nil {
			if !e.unlinked(err) {
				return err
			}
			isSrc = false // it has none now: the old one goes
		}
	}
	if wasSrc && isSrc && oldT == newT && !e.changed(r.Watched) {
		return nil
	}
	if wasSrc && (!isSrc || oldT != newT) {
		e.rp.Writes = append(e.rp.Writes, Write{Rule: r, Target: oldT, Version: e.version, Delete: true})
	}
	if isSrc {
		item := record.Item{}
		for _, k := range r.Target.Keys {
			v, err := e.newB.Render(k.T)
			if err != nil {
				if k.Sparse && errors.Is(err, keys.ErrNoValue) {
					continue // the mirror is simply not in that sparse index
				}
				return err
			}
			item[k.Attr] = &types.AttributeValueMemberS{Value: v}
		}
		if r.Target.TypeAttr != "" {
			item[r.Target.TypeAttr] = &types.AttributeValueMemberS{Value: r.Target.TypeEquals}
		}
		for _, a := range r.Mirror.Attributes {
			if v, ok := e.c.New[a]; ok {
				item[a] = v
			}
		}
		e.rp.Writes = append(e.rp.Writes, Write{Rule: r, Target: newT, Version: e.version, Item: item})
	}
	return nil
}

// aggregate emits count/sum deltas for an item entering, leaving or moving between targets.
func (e *eval) aggregate(r *rules.CompiledRule, wasSrc, isSrc bool) error {
	a := r.Agg
	if e.c.TTL && a.OnExpiry == rules.OnExpiryIgnore {
		return nil
	}
	inOld, inNew := e.members(r, wasSrc, isSrc)
	var oldT, newT Key
	var oldV, newV value.Number
	var err error
	if inOld {
		if oldT, err = e.render(true, r.Target); err != nil {
			if !e.unlinked(err) {
				return err
			}
			inOld = false // it was counted nowhere
		} else if e.expired(r, oldT) {
			inOld = false // its bucket is gone
		} else if oldV, err = contribution(r, e.c.Old); err != nil {
			return err
		}
	}
	if inNew {
		if newT, err = e.render(false, r.Target); err != nil {
			if !e.unlinked(err) {
				return err
			}
			inNew = false // it counts nowhere now
		} else if e.expired(r, newT) {
			inNew = false // into a bucket that is over
		} else if newV, err = contribution(r, e.c.New); err != nil {
			return err
		}
	}
	if inOld && inNew && oldT == newT {
		if d := newV.Sub(oldV); !d.IsZero() {
			e.addDelta(Delta{Rule: r, Target: newT, Amount: d})
		}
		return nil
	}
	if inOld && !oldV.IsZero() {
		e.addDelta(Delta{Rule: r, Target: oldT, Amount: oldV.Neg()})
	}
	if inNew && !newV.IsZero() {
		e.addDelta(Delta{Rule: r, Target: newT, Amount: newV})
	}
	return nil
}

// members reports whether the item was and is a member of aggregate r's targets (a source
// that passes its where), and notes one that entered or left the where with this record.
func (e *eval) members(r *rules.CompiledRule, wasSrc, isSrc bool) (inOld, inNew bool) {
	inOld, inNew = wasSrc && value.Where(r.Agg, e.c.Old), isSrc && value.Where(r.Agg, e.c.New)
	if !wasSrc || !isSrc || inOld == inNew {
		return inOld, inNew
	}
	side := e.c.New
	if inNew {
		side = e.c.Old
	}
	e.rp.Crossings = append(e.rp.Crossings, Crossing{Rule: r, Entered: inNew, Failing: value.Failing(r.Agg, side)})
	return inOld, inNew
}

// addDelta appends d, sizing the slice for one delta per count or sum rule the item is the
// source or the target of: enough for most records (only a MODIFY that moves an item
// between targets needs two for a rule), and no more, since every byte of it is garbage
// for the collector once the batch is applied.
func (e *eval) addDelta(d Delta) {
	if e.rp.Deltas == nil {
		n := 0
		for i, ent := range [2]*rules.EntityType{e.oldE, e.newE} {
			if ent == nil || (i == 1 && ent == e.oldE) {
				continue
			}
			n += aggregates(e.spec.RulesFrom(ent)) + aggregates(e.spec.RulesInto(ent))
		}
		e.rp.Deltas = make([]Delta, 0, max(n, 1))
	}
	e.rp.Deltas = append(e.rp.Deltas, d)
}

// aggregates counts the count and sum rules in rs.
func aggregates(rs []*rules.CompiledRule) int {
	n := 0
	for _, r := range rs {
		if r.Kind.Aggregate() {
			n++
		}
	}
	return n
}

// contribution is what one member contributes: 1 for a count, the value attribute for a sum (an
// absent value contributes 0; a value that is not a number is an error).
func contribution(r *rules.CompiledRule, item record.Item) (value.Number, error) {
	switch r.Kind {
	case rules.KindCount:
		return value.Int(1), nil
	case rules.KindSum:
	default:
		return value.Number{}, fmt.Errorf("%w: %q has no value", ErrUnknownKind, r.Kind)
	}
	switch v := item[r.Agg.Value].(type) {
	case nil:
		return value.Int(0), nil
	case *types.AttributeValueMemberN:
		return value.ParseNumber(v.Value)
	default:
		return value.Number{}, fmt.Errorf("sum value %s is a %s, not a number", r.Agg.Value, value.TypeName(v))
	}
}

func (e *eval) pull(r *rules.CompiledRule) error {
	c := &e.c
	switch c.Op {
	case record.Insert:
	case record.Modify:
		linked := e.oldE == r.Target && !e.changed(r.TargetLinks)
		// Denorm's own push advances the version; an application's PutItem that rewrites the
		// item drops it, which is a change too but not ours.
		_, hasVersion := c.New[r.VersionAttr]
		ownWrite := hasVersion && !value.Equal(c.Old[r.VersionAttr], c.New[r.VersionAttr])
		overwritten := !ownWrite && e.changed(r.Copy.SetOrder)
		if linked && !overwritten {
			return nil
		}
	default:
		return nil
	}
	t := e.key(e.newB, r.Target)
	src, err := e.render(false, r.Source)
	if err != nil {
		if e.unlinked(err) {
			return nil
		}
		return err
	}
	seen := ""
	if n, ok := c.New[r.VersionAttr].(*types.AttributeValueMemberN); ok {
		seen = n.Value
	}
	e.rp.Pulls = append(e.rp.Pulls, Pull{Rule: r, Target: t, Source: src, Seen: seen, Current: c.New})
	return nil
}

// render builds entity ent's primary key from the old or the new image's binding.
func (e *eval) render(old bool, ent *rules.EntityType) (Key, error) {
	for _, rk := range e.keys[:e.nkeys] {
		if rk.ent == ent && rk.old == old {
			return rk.key, nil
		}
	}
	b, self := e.newB, e.newE
	if old {
		b, self = e.oldB, e.oldE
	}
	var k Key
	var err error
	if self != nil && samePK(self, ent) {
		// The target shares the item's partition key template (a comment counted into its
		// post): the rendering is the item's own key, which needs no new string.
		k.PK, _ = e.itemKey(b)
		if ent.SK != nil {
			k.SK, err = b.Render(ent.SK)
		}
	} else if pk, ok := ownKey(self, b.Item(), ent.PK); ok {
		// Another key of the item is the target's partition key (a comment's gsi1pk is its
		// author's): no new string either.
		k.PK = pk
		if ent.SK != nil {
			k.SK, err = b.Render(ent.SK)
		}
	} else {
		k, err = renderKey(b, ent)
	}
	if err == nil && e.nkeys < len(e.keys) {
		e.keys[e.nkeys] = renderedKey{ent: ent, old: old, key: k}
		e.nkeys++
	}
	return k, err
}

// ownKey returns the value of the item's key attribute whose template is t, when rendering
// t from the item's binding gives exactly that value: t has no zero-padding or time bucket,
// and no key matched before that one captures a variable of t (the binding would take that
// capture's value).
func ownKey(self *rules.EntityType, item record.Item, t *keys.Template) (string, bool) {
	if self == nil || !verbatim(t) {
		return "", false
	}
	for i, k := range self.Keys {
		if k.T.String() != t.String() {
			continue
		}
		for _, prev := range self.Keys[:i] {
			for _, v := range prev.T.Vars() {
				if slices.Contains(t.Vars(), v) {
					return "", false
				}
			}
		}
		s, ok := item[k.Attr].(*types.AttributeValueMemberS)
		if !ok {
			return "", false
		}
		return s.Value, true
	}
	return "", false
}

// verbatim reports whether t renders its variables' values unchanged.
func verbatim(t *keys.Template) bool {
	for _, p := range t.Parts() {
		if p.Pad > 0 || p.Bucket != 0 {
			return false
		}
	}
	return true
}

// samePK reports whether two entities' partition keys render identically from the same
// variables (no zero-padding or time bucket, which could normalize a value).
func samePK(a, b *rules.EntityType) bool {
	if a.PK.String() != b.PK.String() {
		return false
	}
	for _, p := range a.PK.Parts() {
		if p.Pad > 0 || p.Bucket != 0 {
			return false
		}
	}
	return true
}

func (e *eval) itemKey(b rules.Binding) (string, string) {
	k := e.key(b, nil)
	return k.PK, k.SK
}

func renderKey(b rules.Binding, ent *rules.EntityType) (Key, error) {
	var k Key
	var err error
	if k.PK, err = b.Render(ent.PK); err != nil {
		return k, err
	}
	if ent.SK != nil {
		if k.SK, err = b.Render(ent.SK); err != nil {
			return k, err
		}
	}
	return k, nil
}

// key returns the primary key of the item behind binding b.
func (e *eval) key(b rules.Binding, _ *rules.EntityType) Key {
	it := b.Item()
	var k Key
	if v, ok := it[e.spec.Table.PartitionKey].(*types.AttributeValueMemberS); ok {
		k.PK = v.Value
	}
	if v, ok := it[e.spec.Table.SortKey].(*types.AttributeValueMemberS); ok {
		k.SK = v.Value
	}
	return k
}
