package ops

import (
	"context"
	"errors"
	"sync"

	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// A repairing run decides every count and sum target it meets, not only those whose copy
// differs from the scan's total: while the stream processor runs, a counter can equal a
// stale total and still be wrong (a rule just deployed counts only the changes since; the
// scan's total misses the changes after it read the sources: the two can agree). What
// decides is the target's state item (docs/operations.md, "Counters while the stream
// runs", has the argument):
//
//  1. the states pass, before the sources pass, reads every state item's version (an
//     eventually consistent scan: a stale version only makes a target look moved);
//  2. the sources pass totals each target; then the run waits Settle, so that the deltas
//     of the writes it read land;
//  3. for each target the targets pass meets (and each missing one the rules create), the
//     state is read (strongly consistent). A version unchanged since 1 means that no
//     delta landed between 1 and now: no source of the target was written between 1 and
//     the end of 2 (unless its delta took longer than Settle), so the scan's totals are
//     the truth. The state is set to them on condition that the version is still that one
//     (or, when it holds them already, left as it is), then copied onto the target;
//  4. a target whose version moved was written during the run. If its sources can be read
//     from the target (they share its partition, or a global index is keyed by the
//     target's variables) it is recounted (below); otherwise nothing can tell what is
//     right, and it is left as a conflict: the run does not claim it.
//
// The recount of a target, all targets of a page together so that one settle covers them:
//
//  1. read the target's state item (strongly consistent): its values and version;
//  2. read its sources (a strongly consistent query; a global index is eventually
//     consistent, so its query waits Settle first);
//  3. wait Settle, so that the deltas of source writes the query saw, still on the stream,
//     land now and move the state;
//  4. SET the state's values to the recount, on condition that its version is still as
//     read in 1 (or, when the recount equals the values, read the state again and check
//     just that), then copy the state onto the target. A failed condition starts again
//     from 1, up to recountAttempts times; then the target is a conflict.
//
// Every delta the processor applies raises the state's version, so an unchanged state has
// had no delta since 1: everything applied to it was written before 1, hence seen by the
// query; and every source write the query saw has been applied, unless its delta took
// longer than Settle to land. The rules of one target are decided together, in one read
// and one write of its state: a write for one rule would otherwise move the version the
// other's decision rests on.

// recountAttempts bounds the recounts of one target in one run: a target that is written
// more often than once per settle keeps moving, and is left for the next run (a conflict).
const recountAttempts = 5

// errMovedUncountable is the note of a target written during the run whose sources only a
// scan finds: left alone.
var errMovedUncountable = errors.New("written during the run; its sources are found only by a scan, so nothing tells what is right: run again when they are not written")

// counterTarget is one count or sum target being decided: the drifts of its rules (one
// each, Attrs set when the scanned copy differs from the scan's total).
type counterTarget struct {
	key   plan.Key
	ds    []*Drift
	out   []Outcome
	errs  []error
	found []bool // the item was wrong (or could not be confirmed): reported as drift
	// The recount: which of ds are still being recounted, the state as read in step 1,
	// and the totals.
	todo      []int
	snap      record.Item
	totals    []value.Number
	recounted []bool
	err       error
}

func (t *counterTarget) rules(ev *Evaluator, which []int) []*rules.CompiledRule {
	rs := make([]*rules.CompiledRule, len(which))
	for n, i := range which {
		rs[n] = ev.rules[t.ds[i].Rule].r
	}
	return rs
}

func (t *counterTarget) set(i int, o Outcome, err error) {
	t.out[i], t.errs[i] = o, err
	t.found[i] = len(t.ds[i].Attrs) > 0 || o == Repaired || o == Conflict || o == Failed
}

// counterTargets groups count and sum drifts by target, in order.
func counterTargets(drifts []Drift) []*counterTarget {
	var out []*counterTarget
	at := map[plan.Key]*counterTarget{}
	for i := range drifts {
		d := &drifts[i]
		t := at[d.Key]
		if t == nil {
			t = &counterTarget{key: d.Key}
			at[d.Key] = t
			out = append(out, t)
		}
		t.ds = append(t.ds, d)
		t.out = append(t.out, Resolved)
		t.errs = append(t.errs, nil)
		t.found = append(t.found, false)
	}
	return out
}

// counters decides the count and sum targets in ts by the versions of their states, sv.
func (r *runner) counters(ctx context.Context, pool chan *repairer, ts []*counterTarget, sv stateVersions) {
	each(pool, ts, func(rp *repairer, t *counterTarget) { rp.confirm(ctx, t, sv) })
	var pending []*counterTarget
	for _, t := range ts {
		if len(t.todo) > 0 {
			pending = append(pending, t)
		}
	}
	r.recount(ctx, pool, pending, sv)
}

// confirm is step 3: it decides t from the scan's totals when its state has not moved
// since the states pass read it, and otherwise leaves the recountable rules to the recount
// (t.todo) and the others as conflicts. A state at the version this round's own write left
// (a page handled again after an interruption) holds what that write decided, exactly.
func (rp *repairer) confirm(ctx context.Context, t *counterTarget, sv stateVersions) {
	ev := rp.w.ev
	state, err := rp.db.getState(ctx, t.key)
	if err != nil {
		for i := range t.ds {
			t.set(i, Failed, err)
		}
		return
	}
	v := counter.Version(state[rules.StateVersionAttr])
	if v != sv.read[t.key] && sv.ours(t.key, v) {
		rp.copyIfBehind(ctx, t, allOf(t.ds), state)
		return
	}
	if v == sv.read[t.key] {
		var which []int
		var totals []value.Number
		for i, d := range t.ds {
			if !value.NumberOf(state[ev.rules[d.Rule].r.Agg.Attribute]).Sub(d.Total).IsZero() {
				which, totals = append(which, i), append(totals, d.Total)
			}
		}
		if len(which) == 0 {
			rp.copyIfBehind(ctx, t, allOf(t.ds), state)
			return
		}
		now, err := rp.db.setState(ctx, t.rules(ev, which), t.rules(ev, allOf(t.ds)), t.key, totals, state[rules.StateVersionAttr])
		switch {
		case err == nil:
			sv.wrote(t.key, counter.Version(now[rules.StateVersionAttr]))
			rp.copied(ctx, t, allOf(t.ds), which, now)
			return
		case !retry.Refused(err):
			for _, i := range which {
				t.set(i, Failed, err)
			}
			return
		}
		// A delta landed since the read: moved.
	}
	if decided(state, t.rules(ev, allOf(t.ds))) {
		// Moved, but an earlier run set these values and only the processor's exactly-once
		// deltas moved them since: they are as exact as that run's decision. (A quiet
		// target, above, is decided again from the scan, which also mends that decision.)
		rp.copyIfBehind(ctx, t, allOf(t.ds), state)
		return
	}
	for i, d := range t.ds {
		if ev.rules[d.Rule].query != nil {
			t.todo = append(t.todo, i)
		} else {
			t.set(i, Conflict, errMovedUncountable)
		}
	}
}

func allOf(ds []*Drift) []int {
	out := make([]int, len(ds))
	for i := range out {
		out[i] = i
	}
	return out
}

// copied copies state, just written with the values of t's drifts in which, onto the
// target, and settles the drifts in scope: those written are Repaired, and so is any
// other whose scanned copy differed.
func (rp *repairer) copied(ctx context.Context, t *counterTarget, scope, which []int, state record.Item) {
	err := rp.db.copyState(ctx, t.rules(rp.w.ev, allOf(t.ds)), t.key, state)
	written := map[int]bool{}
	for _, i := range which {
		written[i] = true
	}
	for _, i := range scope {
		d := t.ds[i]
		switch {
		case err != nil && (written[i] || len(d.Attrs) > 0):
			t.set(i, Failed, err)
		case written[i] || len(d.Attrs) > 0:
			t.set(i, Repaired, nil)
		default:
			t.set(i, Resolved, nil)
		}
	}
}

// copyIfBehind settles t's drifts in which, whose state holds what they should: only the
// target's copy can be wrong (behind the state, or written by the application with its
// record still on the stream). It is read again and copied if it differs.
func (rp *repairer) copyIfBehind(ctx context.Context, t *counterTarget, which []int, state record.Item) {
	ev := rp.w.ev
	var target record.Item
	read := false
	var behind []int
	for _, i := range which {
		d := t.ds[i]
		r := ev.rules[d.Rule].r
		if len(d.Attrs) == 0 && d.Got != nil && value.NumberOf(state[r.Agg.Attribute]).Sub(d.Total).IsZero() {
			// The copy showed this value when the targets pass read it, after the settle:
			// what the application wrote to it since is on the stream, and the processor
			// puts the copy back.
			t.set(i, Resolved, nil)
			continue
		}
		if !read {
			var err error
			if target, err = rp.db.get(ctx, t.key); err != nil {
				for _, j := range which {
					t.set(j, Failed, err)
				}
				return
			}
			read = true
		}
		if _, drift := counterDiff(r, target, value.NumberOf(state[r.Agg.Attribute])); !drift || target == nil && r.Agg.MissingTarget != rules.MissingCreate {
			t.set(i, Resolved, nil) // right, or no target to show it
			continue
		}
		behind = append(behind, i)
	}
	if len(behind) == 0 {
		return
	}
	err := rp.db.copyState(ctx, t.rules(ev, allOf(t.ds)), t.key, state)
	for _, i := range behind {
		if err != nil {
			t.set(i, Failed, err)
		} else {
			t.set(i, Repaired, nil)
		}
	}
}

// recount repairs the targets in ts whose todo rules are recounted from their sources
// (steps 1 to 4 above), all at once so that one settle covers them.
func (r *runner) recount(ctx context.Context, pool chan *repairer, ts []*counterTarget, sv stateVersions) {
	eventual := false
	for _, t := range ts {
		t.totals, t.recounted = make([]value.Number, len(t.ds)), make([]bool, len(t.ds))
		for _, i := range t.todo {
			if !r.cfg.Eval.rules[t.ds[i].Rule].query.consistent {
				eventual = true
			}
		}
	}
	pending := append([]*counterTarget(nil), ts...)
	for attempt := 0; attempt < recountAttempts && len(pending) > 0 && ctx.Err() == nil; attempt++ {
		each(pool, pending, func(rp *repairer, t *counterTarget) {
			t.snap, t.err = rp.db.getState(ctx, t.key)
		})
		if eventual {
			// Writes applied to a target before it was read reach a global index within
			// about this long.
			_ = retry.Sleep(ctx, r.cfg.Settle)
		}
		each(pool, pending, func(rp *repairer, t *counterTarget) {
			for _, i := range t.todo {
				if t.err == nil {
					t.totals[i], t.err = rp.recountTotal(ctx, t.ds[i].Rule, t.key)
					t.recounted[i] = t.err == nil
				}
			}
		})
		_ = retry.Sleep(ctx, r.cfg.Settle)
		each(pool, pending, func(rp *repairer, t *counterTarget) {
			if t.err != nil {
				for _, i := range t.todo {
					t.set(i, Failed, t.err)
				}
				t.todo = nil
				return
			}
			rp.recountWrite(ctx, t, sv)
		})
		next := pending[:0]
		for _, t := range pending {
			if len(t.todo) > 0 {
				next = append(next, t)
			}
		}
		pending = next
	}
	for _, t := range pending {
		err := ctx.Err()
		for _, i := range t.todo {
			t.set(i, Conflict, err)
		}
		t.todo = nil
	}
	for _, t := range ts {
		for i, d := range t.ds {
			if o := t.out[i]; (o == Repaired || o == Resolved) && t.recounted[i] {
				// The report shows the recount, not the scan's total.
				d.Total = t.totals[i]
			}
		}
	}
}

// recountWrite is step 4; the target's todo is left as it was when its state moved since
// it was read (try again).
func (rp *repairer) recountWrite(ctx context.Context, t *counterTarget, sv stateVersions) {
	ev := rp.w.ev
	var which []int
	var totals []value.Number
	for _, i := range t.todo {
		if !value.NumberOf(t.snap[ev.rules[t.ds[i].Rule].r.Agg.Attribute]).Sub(t.totals[i]).IsZero() {
			which, totals = append(which, i), append(totals, t.totals[i])
		}
	}
	if len(which) == 0 {
		// The state is right as read; still right if nothing moved it since. Then only
		// the target's copy can be wrong.
		now, err := rp.db.getState(ctx, t.key)
		if err != nil {
			for _, i := range t.todo {
				t.set(i, Failed, err)
			}
			t.todo = nil
			return
		}
		if !value.Equal(now[rules.StateVersionAttr], t.snap[rules.StateVersionAttr]) {
			return
		}
		todo := t.todo
		t.todo = nil
		rp.copyIfBehind(ctx, t, todo, now)
		return
	}
	state, err := rp.db.setState(ctx, t.rules(ev, which), t.rules(ev, t.todo), t.key, totals, t.snap[rules.StateVersionAttr])
	if retry.Refused(err) {
		return
	}
	todo := t.todo
	t.todo = nil
	if err != nil {
		for _, i := range todo {
			t.set(i, Failed, err)
		}
		return
	}
	sv.wrote(t.key, counter.Version(state[rules.StateVersionAttr]))
	rp.copied(ctx, t, todo, which, state)
}

// each runs f for every target, in parallel on the pool's repairers.
func each(pool chan *repairer, ts []*counterTarget, f func(*repairer, *counterTarget)) {
	var wg sync.WaitGroup
	for _, t := range ts {
		rp := <-pool
		wg.Add(1)
		go func() {
			defer func() { pool <- rp; wg.Done() }()
			f(rp, t)
		}()
	}
	wg.Wait()
}
