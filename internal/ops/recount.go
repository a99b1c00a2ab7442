package ops

import (
	"context"
	"sync"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
)

// A counter repaired from the scan's total races with the stream processor: the total is
// the sources as the first pass saw them, the counter what the processor applied by the
// time the second pass read it, and the two disagree on every source written in between.
// When a target's sources can be read from the target itself (they share its partition,
// or a global index is keyed by the target's variables), the repair recounts instead, in
// an order that leaves no such window (docs/operations.md, "Counters while the stream
// runs", has the argument):
//
//  1. read the target's state item (strongly consistent): its value and version;
//  2. read its sources (a strongly consistent query; a global index is eventually
//     consistent, so its query waits Settle first);
//  3. wait Settle, so that the deltas of source writes the query saw, still on the stream,
//     land now and move the state;
//  4. SET the state's value to the recount, on condition that its version is still as
//     read in 1 (or, when the recount equals the value, read the state again and check
//     just that), then copy the state onto the target. A failed condition starts again
//     from 1.
//
// Every delta the processor applies raises the state's version, so an unchanged state has
// had no delta since 1: everything applied to it was written before 1, hence seen by the
// query; and every source write the query saw has been applied, unless its delta took
// longer than Settle to land.

// sourceQuery reads the sources of a count or sum target from the target's key.
type sourceQuery struct {
	index      string         // "" for the table
	pkAttr     string         // the queried partition key
	pk         *keys.Template // the source's template on it: rendered from the target's key
	skAttr     string
	skPrefix   string // the source's literal prefix on the sort key ("" for none)
	consistent bool
}

// Recountable reports whether the backfill recounts rule r's targets from a query of their
// sources (exact while the stream runs, docs/operations.md) rather than from a scan's total.
func Recountable(spec table.Spec, r *rules.CompiledRule) bool { return sourceQueryOf(spec, r) != nil }

// sourceQueryOf returns how the sources of count or sum rule r are queried from one of its
// targets, or nil when only a scan finds them. Every variable of the queried partition key
// must be a variable of the target's key templates: a source adding to a target has the
// target's values for them, so it is in the partition the target renders.
func sourceQueryOf(spec table.Spec, r *rules.CompiledRule) *sourceQuery {
	if !r.Kind.Aggregate() {
		return nil
	}
	// A target's key may hold a variable only as a time bucket ({createdAt:day}), which
	// renders a partition holding the same bucket, not one holding the time itself.
	vars := keyVars(r.Target.PK, r.Target.SK)
	covered := func(t *keys.Template) bool { return rendersFrom(t, vars) }
	if covered(r.Source.PK) {
		q := &sourceQuery{pkAttr: spec.PartitionKey, pk: r.Source.PK, skAttr: spec.SortKey, consistent: true}
		if r.Source.SK != nil {
			q.skPrefix = r.Source.SK.Prefix()
		}
		return q
	}
	for _, g := range spec.GlobalIndexes {
		idx, _ := spec.Index(g.Name)
		if idx.Projection != table.ProjectAll {
			continue // the planner needs every attribute a rule reads
		}
		pk, sk := keyTemplate(r.Source, idx.PartitionKey), keyTemplate(r.Source, idx.SortKey)
		// A source without the index's keys is not in the index: they must be on every source.
		if pk == nil || pk.Sparse || !covered(pk.T) || idx.SortKey != "" && (sk == nil || sk.Sparse) {
			continue
		}
		q := &sourceQuery{index: g.Name, pkAttr: idx.PartitionKey, pk: pk.T, skAttr: idx.SortKey}
		if sk != nil {
			q.skPrefix = sk.T.Prefix()
		}
		return q
	}
	return nil
}

func keyTemplate(e *rules.EntityType, attr string) *rules.KeyTemplate {
	for i := range e.Keys {
		if e.Keys[i].Attr == attr {
			return &e.Keys[i]
		}
	}
	return nil
}

// recountTotal reads the sources of rule i's target k and returns their count or sum.
func (rp *repairer) recountTotal(ctx context.Context, i int, k plan.Key) (value.Number, error) {
	rs := rp.w.ev.rules[i]
	r, q := rs.r, rs.query
	vals, ok := r.Target.PK.Match(k.PK, nil)
	if ok && r.Target.SK != nil {
		vals, ok = r.Target.SK.Match(k.SK, vals)
	}
	total := value.Int(0)
	if !ok {
		return total, nil // not a target of the rule: nothing adds to it
	}
	pk, err := q.pk.Render(func(name string) (string, bool) {
		for j := 0; j+1 < len(vals); j += 2 {
			if vals[j] == name {
				return vals[j+1], true
			}
		}
		return "", false
	})
	if err != nil {
		return total, err
	}
	items, err := rp.db.query(ctx, q.index, q.pkAttr, pk, q.skAttr, q.skPrefix, q.consistent)
	if err != nil {
		return total, err
	}
	for _, it := range items {
		if rp.w.entity(it) != r.Source.Name {
			continue
		}
		// An item the rule cannot evaluate adds nothing, as in the scan (it is reported there).
		p, err := rp.w.insert(i, it)
		if err != nil {
			continue
		}
		for _, d := range p.Deltas {
			if d.Target == k {
				total = total.Add(d.Amount)
			}
		}
	}
	return total, nil
}

// recountAttempts bounds the recounts of one target in one run: a target that is written
// more often than once per settle keeps moving, and is left for the next run (a conflict).
const recountAttempts = 5

// recountJob is one counter target being recounted.
type recountJob struct {
	d     *Drift
	snap  record.Item // the target's state item as read in step 1 (nil: none)
	total value.Number
	out   Outcome
	err   error
	done  bool
}

// recount repairs the counter drifts of rules whose sources are queryable, all at once so
// that one settle covers them, and fills outcomes and errs at their indexes.
func (r *runner) recount(ctx context.Context, pool chan *repairer, drifts []Drift, which []int, outcomes []Outcome, errs []error) {
	jobs := make([]*recountJob, len(which))
	eventual := false
	for n, i := range which {
		jobs[n] = &recountJob{d: &drifts[i]}
		if !r.cfg.Eval.rules[drifts[i].Rule].query.consistent {
			eventual = true
		}
	}
	pending := append([]*recountJob(nil), jobs...)
	for attempt := 0; attempt < recountAttempts && len(pending) > 0 && ctx.Err() == nil; attempt++ {
		each(pool, pending, func(rp *repairer, j *recountJob) {
			j.snap, j.err = rp.db.getState(ctx, j.d.Key)
		})
		if eventual {
			// Writes applied to a target before it was read reach a global index within
			// about this long.
			_ = retry.Sleep(ctx, r.cfg.Settle)
		}
		each(pool, pending, func(rp *repairer, j *recountJob) {
			if j.err == nil {
				j.total, j.err = rp.recountTotal(ctx, j.d.Rule, j.d.Key)
			}
		})
		_ = retry.Sleep(ctx, r.cfg.Settle)
		each(pool, pending, func(rp *repairer, j *recountJob) {
			if j.err != nil {
				j.out, j.done = Failed, true
				return
			}
			j.out, j.done, j.err = rp.recountWrite(ctx, j)
		})
		next := pending[:0]
		for _, j := range pending {
			if !j.done {
				next = append(next, j)
			}
		}
		pending = next
	}
	for n, i := range which {
		j := jobs[n]
		if !j.done {
			j.out = Conflict
			if j.err == nil {
				j.err = ctx.Err()
			}
		}
		if j.out == Repaired || j.out == Resolved {
			j.err = nil
		}
		outcomes[i], errs[i] = j.out, j.err
		if j.out == Repaired || j.out == Resolved {
			// The report shows the recount, not the scan's total.
			drifts[i].Total = j.total
			if len(drifts[i].Attrs) == 1 {
				drifts[i].Attrs[0].Want = numberAV(j.total)
			}
		}
	}
}

// recountWrite is step 4: done false means the state moved since it was read (try again).
func (rp *repairer) recountWrite(ctx context.Context, j *recountJob) (Outcome, bool, error) {
	r := rp.w.ev.rules[j.d.Rule].r
	attr := r.Agg.Attribute
	if value.NumberOf(j.snap[attr]).Sub(j.total).IsZero() {
		// The state is right as read; still right if nothing moved it since. Then only the
		// target's copy can be wrong.
		now, err := rp.db.getState(ctx, j.d.Key)
		if err != nil {
			return Failed, true, err
		}
		if !value.Equal(now[rules.StateVersionAttr], j.snap[rules.StateVersionAttr]) {
			return Conflict, false, nil
		}
		target, err := rp.db.get(ctx, j.d.Key)
		if err != nil {
			return Failed, true, err
		}
		if _, drift := counterDiff(r, target, j.total); !drift || target == nil && r.Agg.MissingTarget != rules.MissingCreate {
			return Resolved, true, nil // right, or no target to show it
		}
		if err := rp.db.copyState(ctx, r, j.d.Key, now); err != nil {
			return Failed, true, err
		}
		return Repaired, true, nil
	}
	state, err := rp.db.setState(ctx, r, j.d.Key, j.total, j.snap[rules.StateVersionAttr])
	switch {
	case err == nil:
		if err := rp.db.copyState(ctx, r, j.d.Key, state); err != nil {
			return Failed, true, err
		}
		return Repaired, true, nil
	case retry.Refused(err):
		return Conflict, false, nil
	default:
		return Failed, true, err
	}
}

// each runs f for every job, in parallel on the pool's repairers.
func each(pool chan *repairer, jobs []*recountJob, f func(*repairer, *recountJob)) {
	var wg sync.WaitGroup
	for _, j := range jobs {
		rp := <-pool
		wg.Add(1)
		go func() {
			defer func() { pool <- rp; wg.Done() }()
			f(rp, j)
		}()
	}
	wg.Wait()
}
