package ops

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// CopyValues is what a copy rule's targets should hold: target attribute -> value. An
// attribute of the rule missing from the map should be absent (its source lacks it).
type CopyValues = record.Item

// MirrorWant is the mirror item a source asks for, and that source's key.
type MirrorWant struct {
	Source plan.Key
	Item   record.Item
}

// Expected is what the first pass learns from the sources, per rule (indexes into the
// Evaluator's rules; the maps of other kinds are nil).
type Expected struct {
	// Copies: source key -> the values its targets should hold.
	Copies []map[plan.Key]CopyValues
	// Mirrors: mirror key -> the mirror that should be there.
	Mirrors []map[plan.Key]MirrorWant
	// Totals: target key -> the count or sum of its members (zero totals are left out).
	// For a distinct rule: reference item key (plan.DistinctRef) -> how many sources hold
	// its value; DistinctTotal gives a target's count.
	Totals []map[plan.Key]value.Number
	// Extremes: target key -> the max or min of its sources' values (targets without a
	// source are left out).
	Extremes []map[plan.Key]types.AttributeValue
	// Latest: target key -> the source it copies, for latest rules.
	Latest []map[plan.Key]LatestWant
	// Tops: target key -> its list (the n greatest entries), for top rules.
	Tops  []map[plan.Key][]value.TopEntry
	kinds []rules.Kind // per rule, for merging extremes
	ns    []int        // per rule, for merging top lists
	// distinct is worked out from Totals once the sources pass is over (DistinctTotal).
	distinct distinctIndex
}

// LatestWant is the source a latest target copies: its by value, key and attributes.
type LatestWant struct {
	By     types.AttributeValue
	Key    string
	Set    []plan.AttrValue
	Remove []string
}

// NewExpected returns an empty Expected for ev's rules.
func (ev *Evaluator) NewExpected() *Expected {
	n := len(ev.rules)
	e := &Expected{Copies: make([]map[plan.Key]CopyValues, n), Mirrors: make([]map[plan.Key]MirrorWant, n),
		Totals: make([]map[plan.Key]value.Number, n), Extremes: make([]map[plan.Key]types.AttributeValue, n), Latest: make([]map[plan.Key]LatestWant, n),
		Tops: make([]map[plan.Key][]value.TopEntry, n), kinds: make([]rules.Kind, n), ns: make([]int, n)}
	for i, rs := range ev.rules {
		e.kinds[i] = rs.r.Kind
		switch rs.r.Kind {
		case rules.KindCopy:
			e.Copies[i] = map[plan.Key]CopyValues{}
		case rules.KindMirror:
			e.Mirrors[i] = map[plan.Key]MirrorWant{}
		case rules.KindCount, rules.KindSum, rules.KindDistinct:
			e.Totals[i] = map[plan.Key]value.Number{}
		case rules.KindMax, rules.KindMin:
			e.Extremes[i] = map[plan.Key]types.AttributeValue{}
		case rules.KindLatest:
			e.Latest[i] = map[plan.Key]LatestWant{}
		case rules.KindTop:
			e.Tops[i] = map[plan.Key][]value.TopEntry{}
			e.ns[i] = rs.r.Agg.N
		}
	}
	return e
}

// Problem is an item a rule cannot evaluate: the stream processor would fail its record too.
type Problem struct {
	Rule int
	Key  plan.Key
	Msg  string
}

// Observe adds what item, as a source of the rules in which, asks for.
func (w *Worker) Observe(item record.Item, which []int, exp *Expected) []Problem {
	name := w.entity(item)
	if name == "" {
		return nil
	}
	key := itemKey(w.ev.spec, item)
	var probs []Problem
	for _, i := range which {
		r := w.ev.rules[i].r
		if r.Source.Name != name {
			continue
		}
		rp, err := w.insert(i, item)
		if err != nil {
			probs = append(probs, Problem{Rule: i, Key: key, Msg: err.Error()})
			continue
		}
		switch r.Kind {
		case rules.KindCopy:
			for _, wr := range rp.Writes {
				exp.Copies[i][key] = valuesOf(wr.Set)
			}
			for _, f := range rp.FanOuts {
				exp.Copies[i][key] = valuesOf(f.Set)
			}
		case rules.KindMirror:
			for _, wr := range rp.Writes {
				if wr.Item == nil {
					continue
				}
				if prev, dup := exp.Mirrors[i][wr.Target]; dup && prev.Source != key {
					probs = append(probs, Problem{Rule: i, Key: key, Msg: fmt.Sprintf("mirrors to %s %s like %s %s", wr.Target.PK, wr.Target.SK, prev.Source.PK, prev.Source.SK)})
					continue
				}
				exp.Mirrors[i][wr.Target] = MirrorWant{Source: key, Item: wr.Item}
			}
		case rules.KindCount, rules.KindSum, rules.KindDistinct:
			for _, d := range rp.Deltas {
				addTotal(exp.Totals[i], d.Target, d.Amount)
			}
		case rules.KindMax, rules.KindMin:
			for _, x := range rp.Extremes {
				if x.Raise != nil { // what the item holds as a target is not what it gives as a source
					keepBetter(exp.Extremes[i], r.Kind, x.Target, x.Raise)
				}
			}
		case rules.KindLatest:
			for _, x := range rp.Extremes {
				if x.Raise != nil {
					keepLatest(exp.Latest[i], x.Target, LatestWant{By: x.Raise, Key: x.Key, Set: x.Set, Remove: x.Remove})
				}
			}
		case rules.KindTop:
			for _, x := range rp.Extremes {
				if x.Raise != nil {
					exp.Tops[i][x.Target] = value.TopKeep(exp.Tops[i][x.Target], plan.TopEntryOfRaise(x), r.Agg.N)
				}
			}
		default:
			probs = append(probs, Problem{Rule: i, Key: key, Msg: fmt.Sprintf("%v %q", ErrUnhandledKind, r.Kind)})
		}
	}
	return probs
}

// keepLatest keeps w for k if it comes after what m holds.
func keepLatest(m map[plan.Key]LatestWant, k plan.Key, w LatestWant) {
	if cur, ok := m[k]; !ok || value.LatestBetter(w.By, w.Key, cur.By, cur.Key) {
		m[k] = w
	}
}

// keepBetter keeps v for k if it beats what m holds under rule kind kind.
func keepBetter(m map[plan.Key]types.AttributeValue, kind rules.Kind, k plan.Key, v types.AttributeValue) {
	if value.Better(kind, v, m[k]) {
		m[k] = v
	}
}

func addTotal(m map[plan.Key]value.Number, k plan.Key, n value.Number) {
	sum := m[k].Add(n)
	if sum.IsZero() {
		delete(m, k)
		return
	}
	m[k] = sum
}

// Merge adds o into e (the partial expectations of scan segments). A mirror key two
// sources ask for is a problem, reported once.
func (e *Expected) Merge(o *Expected) []Problem {
	var probs []Problem
	for i := range e.Copies {
		for k, v := range o.Copies[i] {
			e.Copies[i][k] = v
		}
		for k, v := range o.Mirrors[i] {
			if prev, dup := e.Mirrors[i][k]; dup && prev.Source != v.Source {
				probs = append(probs, Problem{Rule: i, Key: v.Source, Msg: fmt.Sprintf("mirrors to %s %s like %s %s", k.PK, k.SK, prev.Source.PK, prev.Source.SK)})
				continue
			}
			e.Mirrors[i][k] = v
		}
		for k, v := range o.Totals[i] {
			addTotal(e.Totals[i], k, v)
		}
		for k, v := range o.Extremes[i] {
			keepBetter(e.Extremes[i], e.kinds[i], k, v)
		}
		for k, v := range o.Latest[i] {
			keepLatest(e.Latest[i], k, v)
		}
		for k, es := range o.Tops[i] {
			for _, x := range es {
				e.Tops[i][k] = value.TopKeep(e.Tops[i][k], x, e.ns[i])
			}
		}
	}
	return probs
}
