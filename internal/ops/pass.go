package ops

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// The passes of a round, in the order they run; a report numbers them so (the states pass
// is 0: only repairing rounds with count or sum rules make it).
const (
	passStates  = 0 // the versions of the state items
	passSources = 1 // the sources: what the targets should hold
	passTargets = 2 // the targets: compared, and repaired
)

// pass scans every unfinished segment of pass p of round ri in parallel. The states pass
// keeps each page's state item versions; the sources pass adds each page's sources to the
// segment's expectations; the targets pass checks each page's targets against exp and
// repairs them (counters by versions). A segment's state (last key, counts, partial
// results) advances only after its page is fully handled, so a resumed run neither skips
// nor repeats a page's work.
func (r *runner) pass(ctx context.Context, ri, p int, which []int, exp *Expected, sv stateVersions) error {
	ev := r.cfg.Eval
	segs := r.st.Rounds[ri].Passes[p]
	pr := r.passReport(ri, p)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var first error
	for s, seg := range segs {
		if seg.Done {
			r.mu.Lock()
			pr.Skipped++
			r.mu.Unlock()
			continue
		}
		seg.mu.Lock()
		if p == passStates && seg.vers == nil {
			seg.vers = map[plan.Key]uint64{}
		}
		if p == passSources && seg.exp == nil {
			seg.exp = ev.NewExpected()
		}
		if p == passTargets && seg.seen == nil {
			seg.seen = ev.NewSeen()
		}
		if seg.Stats == nil {
			seg.Stats = map[string]*RuleStats{}
		}
		seg.ev = ev
		seg.mu.Unlock()
		r.mu.Lock()
		pr.Segments++
		r.mu.Unlock()
		wg.Add(1)
		go func(s int, seg *segState) {
			defer wg.Done()
			if err := r.segment(ctx, ri, p, s, seg, which, exp, sv); err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
				cancel()
			}
		}(s, seg)
	}
	wg.Wait()
	if err := r.save(true); err != nil && first == nil {
		first = err
	}
	return first
}

// segment scans one segment to its end.
func (r *runner) segment(ctx context.Context, ri, p, s int, seg *segState, which []int, exp *Expected, sv stateVersions) error {
	ev := r.cfg.Eval
	w := ev.NewWorker()
	pool := make(chan *repairer, r.cfg.Concurrency)
	for i := 0; i < r.cfg.Concurrency; i++ {
		pool <- &repairer{db: r.db, w: ev.NewWorker()}
	}
	pr := r.passReport(ri, p)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		seg.mu.Lock()
		start := seg.LastKey
		seg.mu.Unlock()
		in := &dynamodb.ScanInput{TableName: aws.String(r.cfg.Table), Segment: aws.Int32(int32(s)),
			TotalSegments: aws.Int32(int32(r.cfg.Segments)), ExclusiveStartKey: start,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
		if r.cfg.PageSize > 0 {
			in.Limit = aws.Int32(r.cfg.PageSize)
		}
		var out *dynamodb.ScanOutput
		err := withRetry(ctx, "scanning segment", func(ctx context.Context) error {
			var err error
			out, err = r.cfg.API.Scan(ctx, in)
			return err
		})
		if err != nil {
			return err
		}
		switch p {
		case passStates:
			r.observeStates(seg, out.Items)
		case passSources:
			r.observe(w, seg, which, out.Items)
		default:
			if err := r.check(ctx, w, pool, seg, which, exp, sv, out.Items); err != nil {
				return err
			}
		}
		n := int64(len(out.Items))
		seg.mu.Lock()
		seg.LastKey = itemJSON(out.LastEvaluatedKey)
		seg.Scanned += n
		seg.Done = len(out.LastEvaluatedKey) == 0
		done := seg.Done
		seg.mu.Unlock()
		r.mu.Lock()
		r.scanned += n
		pr.Scanned += n
		if out.ConsumedCapacity != nil && out.ConsumedCapacity.CapacityUnits != nil {
			r.rcu += *out.ConsumedCapacity.CapacityUnits
		}
		r.mu.Unlock()
		r.bar.add(n)
		if done {
			if err := r.save(true); err != nil {
				return err
			}
			if r.cfg.OnSegmentDone != nil {
				r.cfg.OnSegmentDone(ri, p, s)
			}
			return nil
		}
		if err := r.save(false); err != nil {
			return err
		}
	}
}

// observeStates keeps the version of each state item and state part of a page, by its own
// key: a page scanned again after a resume sets the same entries again. stateVersions adds
// a split target's up.
func (r *runner) observeStates(seg *segState, items []map[string]types.AttributeValue) {
	spec := r.cfg.Eval.spec
	seg.mu.Lock()
	defer seg.mu.Unlock()
	for _, it := range items {
		k := itemKey(spec, record.Item(it))
		if _, ok := counter.TargetOf(k); ok {
			seg.vers[k] = counter.Version(it[rules.StateVersionAttr])
		}
	}
}

// observe adds a page's sources to the segment's expectations.
func (r *runner) observe(w *Worker, seg *segState, which []int, items []map[string]types.AttributeValue) {
	seg.mu.Lock()
	defer seg.mu.Unlock()
	for _, it := range items {
		for _, pb := range w.Observe(record.Item(it), which, seg.exp) {
			r.problem(seg.Stats, pb)
		}
	}
}

// check compares a page's targets and repairs them. If the run is interrupted while
// repairing, the page is left unrecorded and a resumed run handles it again (its repairs
// are idempotent: each re-checks before it writes).
func (r *runner) check(ctx context.Context, w *Worker, pool chan *repairer, seg *segState, which []int, exp *Expected, sv stateVersions, items []map[string]types.AttributeValue) error {
	ev := r.cfg.Eval
	seen := ev.NewSeen()
	stats := map[string]*RuleStats{}
	var drifts, counters, distinct []Drift
	for _, it := range items {
		c := w.Check(record.Item(it), which, exp, seen)
		for _, i := range c.Rules {
			r.stats(stats, i).Checked++
		}
		for _, pb := range c.Problems {
			r.problem(stats, pb)
		}
		if r.cfg.Repair {
			// A distinct's reference items are decided with their target.
			drifts, counters, distinct = append(drifts, c.Drifts...), append(counters, c.Counters...), append(distinct, c.Distinct...)
		} else {
			drifts = append(drifts, c.Differing()...)
		}
	}
	if err := r.repairDrifts(ctx, pool, drifts, stats); err != nil {
		return err
	}
	if err := r.decideCounters(ctx, pool, counters, sv, stats); err != nil {
		return err
	}
	if err := r.decideDistinct(ctx, pool, distinct, exp, sv, stats); err != nil {
		return err
	}
	seg.mu.Lock()
	defer seg.mu.Unlock()
	seg.seen.Merge(seen)
	for name, s := range stats {
		addStats(seg.Stats, name, s)
	}
	return nil
}

// repairAll repairs the drift found after the targets pass (missing mirrors and targets).
func (r *runner) repairAll(ctx context.Context, drifts []Drift, exp *Expected, sv stateVersions, stats map[string]*RuleStats) error {
	ev := r.cfg.Eval
	pool := make(chan *repairer, r.cfg.Concurrency*r.cfg.Segments)
	for i := 0; i < cap(pool); i++ {
		pool <- &repairer{db: r.db, w: ev.NewWorker()}
	}
	var others, counters, distinct []Drift
	for i := range drifts {
		if r.cfg.Repair && ev.rules[drifts[i].Rule].r.Kind == rules.KindDistinct {
			// A missing reference item of a target that exists was decided with its target
			// in the targets pass; a target that does not exist is decided here.
			if drifts[i].NoTarget {
				distinct = append(distinct, drifts[i])
			}
			continue
		}
		if !drifts[i].NoTarget {
			r.stats(stats, drifts[i].Rule).Checked++
		}
		if r.cfg.Repair && ev.rules[drifts[i].Rule].r.Kind.Aggregate() {
			counters = append(counters, drifts[i])
		} else {
			others = append(others, drifts[i])
		}
	}
	if err := r.repairDrifts(ctx, pool, others, stats); err != nil {
		return err
	}
	if err := r.decideCounters(ctx, pool, counters, sv, stats); err != nil {
		return err
	}
	return r.decideDistinct(ctx, pool, distinct, exp, sv, stats)
}

// decideCounters decides the count and sum targets in counters (runner.counters) and
// reports those that were wrong or could not be confirmed as drift, with what was done.
// An interruption returns the context's error.
func (r *runner) decideCounters(ctx context.Context, pool chan *repairer, counters []Drift, sv stateVersions, stats map[string]*RuleStats) error {
	if len(counters) == 0 {
		return nil
	}
	ts := counterTargets(counters)
	r.counters(ctx, pool, ts, sv)
	for _, t := range ts {
		for _, err := range t.errs {
			if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return err
			}
		}
	}
	for _, t := range ts {
		for i, d := range t.ds {
			if !t.found[i] || d.NoTarget && (t.out[i] == Repaired || t.out[i] == Resolved) {
				continue
			}
			s := r.stats(stats, d.Rule)
			s.Drift++
			s.outcome(t.out[i])
			if len(d.Attrs) == 0 {
				// The copy equalled the scan's total, and was wrong or could not be confirmed.
				attr := r.cfg.Eval.rules[d.Rule].r.Agg.Attribute
				d.Attrs = []AttrDiff{{Name: attr, Got: d.Got[attr], Want: numberAV(d.Total)}}
			} else if len(d.Attrs) == 1 && (t.out[i] == Repaired || t.out[i] == Resolved) {
				d.Attrs[0].Want = numberAV(d.Total) // the recount's, when it recounted
			}
			note := t.out[i].String()
			if t.errs[i] != nil {
				note = t.errs[i].Error()
			}
			if d.NoTarget {
				note = "no target; its state item: " + note
			}
			r.exampleDrift(d, note)
		}
	}
	return nil
}

// repairDrifts counts drifts in stats and, in repair mode, repairs them with the pool's
// repairers in parallel. An interruption returns the context's error.
func (r *runner) repairDrifts(ctx context.Context, pool chan *repairer, drifts []Drift, stats map[string]*RuleStats) error {
	outcomes := make([]Outcome, len(drifts))
	errs := make([]error, len(drifts))
	if r.cfg.Repair {
		var wg sync.WaitGroup
		for i := range drifts {
			rp := <-pool
			wg.Add(1)
			go func(i int) {
				defer func() { pool <- rp; wg.Done() }()
				outcomes[i], errs[i] = rp.repair(ctx, &drifts[i])
			}(i)
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return err
			}
		}
	}
	for i := range drifts {
		d := &drifts[i]
		s := r.stats(stats, d.Rule)
		s.Drift++
		note := ""
		if r.cfg.Repair {
			s.outcome(outcomes[i])
			note = outcomes[i].String()
			if errs[i] != nil {
				note = errs[i].Error()
			}
		}
		r.exampleDrift(d, note)
	}
	return nil
}

// exampleDrift keeps a drift as examples: one per attribute, or one for a missing or
// extra item.
func (r *runner) exampleDrift(d *Drift, note string) {
	if len(d.Attrs) == 0 || d.Kind == Extra {
		r.example(d.Rule, Example{PK: d.Key.PK, SK: d.Key.SK, Problem: d.Kind, Note: note})
		return
	}
	for _, a := range d.Attrs {
		r.example(d.Rule, Example{PK: d.Key.PK, SK: d.Key.SK, Problem: d.Kind, Attribute: a.Name,
			Got: avJSON{a.Got}, Want: avJSON{a.Want}, Note: note})
	}
}
