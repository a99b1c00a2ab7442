package ops

import (
	"context"
	"errors"
	"sync"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// A distinct rule's state is its reference items (plan.DistinctRef: how many sources of a
// target hold a value) and the target's state item, which holds how many of them are above
// zero. The sources pass totals the reference items (Expected.Totals, keyed by reference
// item); the targets pass checks each reference item it meets as a counter whose state item
// is itself, and each target against the number of its values (DistinctTotal).
//
// A repair writes the reference items only, with the conditional state write of counts
// (setState): each such write reaches the stream, and the processor moves the target's count
// by its record when the number crosses zero, as for its own writes. The target's state is
// never set directly, so the two cannot both move it: a target whose state differs from its
// values' number follows its reference items' records, and a verify once the stream has
// drained shows it right.

// distinctTotals are the distinct counts of the targets of Expected's distinct rules,
// worked out once from the reference items' totals after the sources pass.
type distinctTotals struct {
	once sync.Once
	m    []map[plan.Key]int64
}

// DistinctTotal is how many different values the sources of distinct rule i's target k
// hold.
func (e *Expected) DistinctTotal(i int, k plan.Key) value.Number {
	e.distinct.once.Do(func() {
		e.distinct.m = make([]map[plan.Key]int64, len(e.Totals))
		for j, refs := range e.Totals {
			if e.kinds[j] != rules.KindDistinct {
				continue
			}
			e.distinct.m[j] = map[plan.Key]int64{}
			for ref, n := range refs {
				if t, _, ok := plan.ParseDistinctRef(ref); ok && n.Sign() > 0 {
					e.distinct.m[j][t]++
				}
			}
		}
	})
	return value.Int(e.distinct.m[i][k])
}

// refRule returns the distinct rule among which whose reference item item is, and its
// key.
func (w *Worker) refRule(item record.Item, which []int) (int, plan.Key, bool) {
	k := itemKey(w.ev.spec, item)
	_, name, ok := plan.ParseDistinctRef(k)
	if !ok {
		return 0, k, false
	}
	for _, i := range which {
		if r := w.ev.rules[i].r; r.Kind == rules.KindDistinct && r.Name == name {
			return i, k, true
		}
	}
	return 0, k, false
}

// distinct repairs a distinct target whose copy differs from the number of its values
// (the reference items are decided as counters, runner.counters): when its state holds
// that number, the state is copied onto it; otherwise the state follows the records of
// the reference items (written by this run where they differed, or still on the stream),
// and the target is left to them.
func (rp *repairer) distinct(ctx context.Context, d *Drift) (Outcome, error) {
	r := rp.w.ev.rules[d.Rule].r
	state, err := rp.db.getState(ctx, d.Key)
	if err != nil {
		return Failed, err
	}
	if !value.NumberOf(state[r.Agg.Attribute]).Sub(d.Total).IsZero() {
		return Resolved, errFollowsRefs
	}
	if err := rp.db.copyState(ctx, []*rules.CompiledRule{r}, d.Key, state); err != nil {
		return Failed, err
	}
	return Repaired, nil
}

// errFollowsRefs is the note of a distinct target whose state does not hold the number of
// its values yet.
var errFollowsRefs = errors.New("its state moves with the stream records of its reference items (repaired by this run where they differed): verify once the stream has drained")
