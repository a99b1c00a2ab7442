package ops

import (
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
)

// Kind says how a target differs from what its rule expects.
type Kind string

// Kinds of drift.
const (
	Differs Kind = "differs" // attributes differ
	Missing Kind = "missing" // the item should exist and does not
	Extra   Kind = "extra"   // the item exists and should not
)

// AttrDiff is one attribute that differs (nil: absent).
type AttrDiff struct {
	Name      string
	Got, Want types.AttributeValue
}

// Drift is one target item that does not hold what its rule says.
type Drift struct {
	Rule  int // index into the Evaluator's rules
	Kind  Kind
	Key   plan.Key
	Attrs []AttrDiff
	// Got is the target as scanned (nil when missing): repairs are conditional on it.
	Got record.Item
	// Source is the copy or mirror source that decides the target, when known.
	Source    plan.Key
	HasSource bool
	// Values are a copy source's values as scanned (SourceFound false: no source).
	Values      CopyValues
	SourceFound bool
	// Want is the expected mirror item (nil: no mirror should be there).
	Want record.Item
	// Total is a counter's true value.
	Total value.Number
	// NoTarget marks a count or sum target that does not exist (and is not created): only
	// its state item is decided, so that the target shows the right value when the
	// application puts it (back). Not reported as drift unless its state cannot be decided.
	NoTarget bool
}

// Seen is the counter and mirror targets the second pass met, per rule.
type Seen []map[plan.Key]bool

// NewSeen returns an empty Seen for ev's rules.
func (ev *Evaluator) NewSeen() Seen {
	s := make(Seen, len(ev.rules))
	for i := range s {
		s[i] = map[plan.Key]bool{}
	}
	return s
}

// Merge adds o into s.
func (s Seen) Merge(o Seen) {
	for i := range s {
		for k := range o[i] {
			s[i][k] = true
		}
	}
}

// Checked is what the targets pass found for one item.
type Checked struct {
	Rules  []int // the rules item is a target of
	Drifts []Drift
	// Counters has one entry per count and sum rule the item is a target of, whether its
	// copy differs from the scan's total (Attrs set) or not: a repair decides every one
	// from the target's state (runner.counters), a verify reports those that differ.
	Counters []Drift
	// Distinct has one entry per distinct rule the item is a target of (Attrs set when
	// its copy differs from the number of its values), and Refs one per reference item
	// whose number differs from the scan's: a repair decides each target with its
	// reference items (runner.decideDistinct), a verify reports those that differ.
	Distinct, Refs []Drift
	Problems       []Problem
}

// Differing returns the drifts of c, with the counters whose copy differs from the scan's
// total: what a verify reports.
func (c Checked) Differing() []Drift {
	out := c.Drifts
	for _, ds := range [][]Drift{c.Counters, c.Distinct} {
		for _, d := range ds {
			if len(d.Attrs) > 0 {
				out = append(out, d)
			}
		}
	}
	return append(out, c.Refs...)
}

// Check compares item, as a target of the rules in which, with what the sources expect,
// and marks it seen.
func (w *Worker) Check(item record.Item, which []int, exp *Expected, seen Seen) Checked {
	var out Checked
	if i, ref, ok := w.refRule(item, which); ok {
		// A distinct rule's reference item: how many sources hold its value.
		seen[i][ref] = true
		out.Rules = append(out.Rules, i)
		total := exp.Totals[i][ref]
		if a, drift := counterDiff(w.ev.rules[i].r, item, total); drift {
			out.Refs = append(out.Refs, Drift{Rule: i, Kind: Differs, Key: ref, Got: item, Total: total, Attrs: []AttrDiff{a}})
		}
		return out
	}
	name := w.entity(item)
	if name == "" {
		return out
	}
	spec := w.ev.spec
	key := itemKey(spec, item)
	for _, i := range which {
		r := w.ev.rules[i].r
		if r.Target.Name != name {
			continue
		}
		out.Rules = append(out.Rules, i)
		switch r.Kind {
		case rules.KindCopy:
			rp, err := w.insert(i, item)
			if err != nil {
				out.Problems = append(out.Problems, Problem{Rule: i, Key: key, Msg: "finding the source: " + err.Error()})
				continue
			}
			for _, p := range rp.Pulls {
				vals, found := exp.Copies[i][p.Source]
				attrs, del := copyDiff(r, item, vals, found)
				d := Drift{Rule: i, Kind: Differs, Key: key, Attrs: attrs, Got: item, Source: p.Source, HasSource: true,
					Values: vals, SourceFound: found}
				if del {
					d.Kind = Extra
				}
				if del || len(attrs) > 0 {
					out.Drifts = append(out.Drifts, d)
				}
			}
		case rules.KindMirror:
			seen[i][key] = true
			want, ok := exp.Mirrors[i][key]
			d := Drift{Rule: i, Kind: Differs, Key: key, Got: item, Source: want.Source, HasSource: ok, Want: want.Item}
			if !ok {
				d.Kind = Extra
				d.Source, d.HasSource = w.mirrorSource(i, item)
			} else if d.Attrs = mirrorDiff(spec, r, item, want.Item); len(d.Attrs) == 0 {
				continue
			}
			out.Drifts = append(out.Drifts, d)
		case rules.KindCount, rules.KindSum:
			seen[i][key] = true
			if w.ev.expiredBucket(r, key) {
				continue // DynamoDB's TTL deletes it; its sources add to nothing
			}
			total := exp.Totals[i][key]
			d := Drift{Rule: i, Kind: Differs, Key: key, Got: item, Total: total}
			if a, drift := counterDiff(r, item, total); drift {
				d.Attrs = []AttrDiff{a}
			}
			out.Counters = append(out.Counters, d)
		case rules.KindDistinct:
			seen[i][key] = true
			total := exp.DistinctTotal(i, key)
			d := Drift{Rule: i, Kind: Differs, Key: key, Got: item, Total: total}
			if a, drift := counterDiff(r, item, total); drift {
				d.Attrs = []AttrDiff{a}
			}
			out.Distinct = append(out.Distinct, d)
		case rules.KindMax, rules.KindMin:
			seen[i][key] = true
			if w.ev.expiredBucket(r, key) {
				continue // DynamoDB's TTL deletes it
			}
			attr := r.Agg.Attribute
			got, want := item[attr], exp.Extremes[i][key]
			if !sameExtreme(got, want) {
				out.Drifts = append(out.Drifts, Drift{Rule: i, Kind: Differs, Key: key, Got: item, Attrs: []AttrDiff{{Name: attr, Got: got, Want: want}}})
			}
		case rules.KindLatest:
			seen[i][key] = true
			if w.ev.expiredBucket(r, key) {
				continue // DynamoDB's TTL deletes it
			}
			want, ok := exp.Latest[i][key]
			var attrs []AttrDiff
			for _, t := range r.Agg.SetOrder {
				var w types.AttributeValue
				if ok {
					for _, a := range want.Set {
						if a.Name == t {
							w = a.Value
						}
					}
				}
				if g := item[t]; (g == nil) != (w == nil) || (g != nil && !value.Equal(g, w)) {
					attrs = append(attrs, AttrDiff{Name: t, Got: g, Want: w})
				}
			}
			if len(attrs) > 0 {
				out.Drifts = append(out.Drifts, Drift{Rule: i, Kind: Differs, Key: key, Got: item, Attrs: attrs})
			}
		case rules.KindTop:
			seen[i][key] = true
			if w.ev.expiredBucket(r, key) {
				continue // DynamoDB's TTL deletes it
			}
			attr := r.Agg.Attribute
			got, ok := value.DecodeTop(r, item[attr])
			if want := exp.Tops[i][key]; !ok || !value.SameTop(got, want) {
				var w types.AttributeValue
				if len(want) > 0 || item[attr] != nil {
					w = value.TopList(want)
				}
				out.Drifts = append(out.Drifts, Drift{Rule: i, Kind: Differs, Key: key, Got: item, Attrs: []AttrDiff{{Name: attr, Got: item[attr], Want: w}}})
			}
		default:
			out.Problems = append(out.Problems, Problem{Rule: i, Key: key, Msg: fmt.Sprintf("%v %q", ErrUnhandledKind, r.Kind)})
		}
	}
	return out
}

// sameExtreme reports whether a max or min target holds want (nil: no source, absent).
func sameExtreme(got, want types.AttributeValue) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return fmt.Sprintf("%T", got) == fmt.Sprintf("%T", want) && value.Compare(got, want) == 0
}

// MissingTargets is, per rule, how many counter totals belong to targets that do not
// exist and are not created (missingTarget: skip): the stream processor writes no copy
// (there is no target) but keeps their deltas in the target's state item.
type MissingTargets []int64

// Missing returns the drift of targets the second pass did not meet: mirrors that should
// exist, and counter targets with a non-zero total that the rule creates when missing.
//
// With states (the target keys of the state items a repairing round read) it also returns
// NoTarget drifts for the states of count, sum and distinct targets that do not exist:
// those with a non-zero total (for a distinct, a value some source holds), and those whose
// state item exists although their total is zero. Their states (and a distinct's reference
// items) are decided as any other (counters.go, distinct.go): a target deleted while a
// backfill ran and put back later must show its total, not the deltas the processor added
// since.
func (ev *Evaluator) Missing(which []int, exp *Expected, seen Seen, states map[plan.Key]uint64) ([]Drift, MissingTargets) {
	var out []Drift
	skipped := make(MissingTargets, len(ev.rules))
	for _, i := range which {
		r := ev.rules[i].r
		switch r.Kind {
		case rules.KindMirror:
			for k, want := range exp.Mirrors[i] {
				if !seen[i][k] {
					out = append(out, Drift{Rule: i, Kind: Missing, Key: k, Source: want.Source, HasSource: true, Want: want.Item})
				}
			}
		case rules.KindDistinct:
			// A target that does not exist is never created; as for a count that skips
			// missing targets, a repair decides its state and reference items all the same.
			for _, t := range exp.distinctTargets(i) {
				if !seen[i][t] {
					skipped[i]++
					if states != nil {
						out = append(out, Drift{Rule: i, Kind: Missing, Key: t, Total: exp.DistinctTotal(i, t), NoTarget: true})
					}
				}
			}
			for k := range states {
				if _, counted := exp.distinctOf().refs[i][k]; !counted && !seen[i][k] && targetKey(r, k) && !ev.expiredBucket(r, k) {
					out = append(out, Drift{Rule: i, Kind: Missing, Key: k, NoTarget: true})
				}
			}
			// A reference item of an existing target that sources call for and the scan did
			// not meet: drift for a verify; a repair created it with its target's
			// (runner.repairAll skips these).
			for k, total := range exp.Totals[i] {
				if t, _, _ := plan.ParseDistinctRef(k); seen[i][t] && !seen[i][k] && !total.IsZero() {
					out = append(out, Drift{Rule: i, Kind: Missing, Key: k, Total: total,
						Attrs: []AttrDiff{{Name: r.Agg.Attribute, Want: numberAV(total)}}})
				}
			}
		case rules.KindCount, rules.KindSum:
			for k, total := range exp.Totals[i] {
				if seen[i][k] || total.IsZero() {
					continue
				}
				if r.Agg.MissingTarget != rules.MissingCreate {
					skipped[i]++
					if states != nil {
						out = append(out, Drift{Rule: i, Kind: Missing, Key: k, Total: total, NoTarget: true})
					}
					continue
				}
				out = append(out, Drift{Rule: i, Kind: Missing, Key: k, Total: total,
					Attrs: []AttrDiff{{Name: r.Agg.Attribute, Want: numberAV(total)}}})
			}
			for k := range states {
				if _, counted := exp.Totals[i][k]; !counted && !seen[i][k] && targetKey(r, k) && !ev.expiredBucket(r, k) {
					out = append(out, Drift{Rule: i, Kind: Missing, Key: k, NoTarget: true})
				}
			}
		case rules.KindMax, rules.KindMin:
			if !r.CreatesBuckets() {
				continue // a missing target is never created: its INSERT recomputes it
			}
			for k, want := range exp.Extremes[i] {
				if !seen[i][k] && !ev.expiredBucket(r, k) {
					out = append(out, Drift{Rule: i, Kind: Missing, Key: k, Attrs: []AttrDiff{{Name: r.Agg.Attribute, Want: want}}})
				}
			}
		case rules.KindLatest:
			if !r.CreatesBuckets() {
				continue // a missing target is never created: its INSERT recomputes it
			}
			for k, want := range exp.Latest[i] {
				if !seen[i][k] && !ev.expiredBucket(r, k) {
					var attrs []AttrDiff
					for _, a := range want.Set {
						attrs = append(attrs, AttrDiff{Name: a.Name, Want: a.Value})
					}
					out = append(out, Drift{Rule: i, Kind: Missing, Key: k, Attrs: attrs})
				}
			}
		case rules.KindTop:
			if !r.CreatesBuckets() {
				continue // a missing target is never created: its INSERT recomputes it
			}
			for k, want := range exp.Tops[i] {
				if !seen[i][k] && !ev.expiredBucket(r, k) && len(want) > 0 {
					out = append(out, Drift{Rule: i, Kind: Missing, Key: k, Attrs: []AttrDiff{{Name: r.Agg.Attribute, Want: value.TopList(want)}}})
				}
			}
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Rule != out[b].Rule {
			return out[a].Rule < out[b].Rule
		}
		return keyLess(out[a].Key, out[b].Key)
	})
	return out, skipped
}

func keyLess(a, b plan.Key) bool {
	if a.PK != b.PK {
		return a.PK < b.PK
	}
	return a.SK < b.SK
}

// copyDiff compares a copy target with its source's values (found false: no source, and
// the rule's onSourceDelete decides). del means the target should not exist.
func copyDiff(r *rules.CompiledRule, target record.Item, vals CopyValues, found bool) (attrs []AttrDiff, del bool) {
	if !found {
		switch r.Copy.OnSourceDelete {
		case rules.OnDeleteDelete:
			return nil, true
		case rules.OnDeleteRemove:
			for _, t := range r.Copy.SetOrder {
				if got, ok := target[t]; ok {
					attrs = append(attrs, AttrDiff{Name: t, Got: got})
				}
			}
		}
		return attrs, false
	}
	for _, t := range r.Copy.SetOrder {
		if got, want := target[t], vals[t]; !value.Equal(got, want) {
			attrs = append(attrs, AttrDiff{Name: t, Got: got, Want: want})
		}
	}
	return attrs, false
}

// mirrorDiff compares a mirror with the expected item: the attributes the stream
// processor writes (keys rendered from the source, the type attribute, the listed
// attributes). Other attributes (copies by other rules) are not the mirror's business.
func mirrorDiff(spec table.Spec, r *rules.CompiledRule, got, want record.Item) []AttrDiff {
	var attrs []AttrDiff
	for _, k := range sortedAttrs(want) {
		if k == spec.PartitionKey || k == spec.SortKey {
			continue
		}
		if !value.Equal(got[k], want[k]) {
			attrs = append(attrs, AttrDiff{Name: k, Got: got[k], Want: want[k]})
		}
	}
	for _, a := range r.Mirror.Attributes {
		if _, ok := want[a]; !ok && got[a] != nil {
			attrs = append(attrs, AttrDiff{Name: a, Got: got[a]})
		}
	}
	return attrs
}

// counterDiff compares a counter target's attribute with its true total. An absent
// attribute is right for a zero total.
func counterDiff(r *rules.CompiledRule, target record.Item, total value.Number) (AttrDiff, bool) {
	attr := r.Agg.Attribute
	got := target[attr]
	if got == nil && total.IsZero() {
		return AttrDiff{}, false
	}
	if n, ok := got.(*types.AttributeValueMemberN); ok {
		if v, err := value.ParseNumber(n.Value); err == nil && v.Sub(total).IsZero() {
			return AttrDiff{}, false
		}
	}
	return AttrDiff{Name: attr, Got: got, Want: numberAV(total)}, true
}

func numberAV(n value.Number) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: n.String()}
}

// targetKey reports whether k has the shape of r's target keys.
func targetKey(r *rules.CompiledRule, k plan.Key) bool {
	if _, ok := r.Target.PK.Match(k.PK, nil); !ok {
		return false
	}
	if r.Target.SK == nil {
		return k.SK == ""
	}
	_, ok := r.Target.SK.Match(k.SK, nil)
	return ok
}
