package ops

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
)

// pass scans every unfinished segment of pass p of round ri in parallel. Pass 0 adds each
// page's sources to the segment's expectations; pass 1 checks each page's targets against
// exp and repairs them. A segment's state (last key, counts, partial results) advances only
// after its page is fully handled, so a resumed run neither skips nor repeats a page's work.
func (r *runner) pass(ctx context.Context, ri, p int, which []int, exp *Expected) error {
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
		if p == 0 && seg.exp == nil {
			seg.exp = ev.NewExpected()
		}
		if p == 1 && seg.seen == nil {
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
			if err := r.segment(ctx, ri, p, s, seg, which, exp); err != nil {
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
func (r *runner) segment(ctx context.Context, ri, p, s int, seg *segState, which []int, exp *Expected) error {
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
		if p == 0 {
			r.observe(w, seg, which, out.Items)
		} else if err := r.check(ctx, w, pool, seg, which, exp, out.Items); err != nil {
			return err
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
func (r *runner) check(ctx context.Context, w *Worker, pool chan *repairer, seg *segState, which []int, exp *Expected, items []map[string]types.AttributeValue) error {
	ev := r.cfg.Eval
	seen := ev.NewSeen()
	stats := map[string]*RuleStats{}
	var drifts []Drift
	for _, it := range items {
		c := w.Check(record.Item(it), which, exp, seen)
		for _, i := range c.Rules {
			r.stats(stats, i).Checked++
		}
		for _, pb := range c.Problems {
			r.problem(stats, pb)
		}
		drifts = append(drifts, c.Drifts...)
	}
	if err := r.repairDrifts(ctx, pool, drifts, stats); err != nil {
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

// repairAll repairs the drift found after the second pass (missing mirrors and targets).
func (r *runner) repairAll(ctx context.Context, drifts []Drift, stats map[string]*RuleStats) error {
	ev := r.cfg.Eval
	pool := make(chan *repairer, r.cfg.Concurrency*r.cfg.Segments)
	for i := 0; i < cap(pool); i++ {
		pool <- &repairer{db: r.db, w: ev.NewWorker()}
	}
	for i := range drifts {
		r.stats(stats, drifts[i].Rule).Checked++
	}
	return r.repairDrifts(ctx, pool, drifts, stats)
}

// repairDrifts counts drifts in stats and, in repair mode, repairs them with the pool's
// repairers in parallel. An interruption returns the context's error.
func (r *runner) repairDrifts(ctx context.Context, pool chan *repairer, drifts []Drift, stats map[string]*RuleStats) error {
	outcomes := make([]Outcome, len(drifts))
	errs := make([]error, len(drifts))
	if r.cfg.Repair {
		var wg sync.WaitGroup
		var recounts []int
		for i := range drifts {
			if r.cfg.Eval.rules[drifts[i].Rule].query != nil {
				recounts = append(recounts, i)
				continue
			}
			rp := <-pool
			wg.Add(1)
			go func(i int) {
				defer func() { pool <- rp; wg.Done() }()
				outcomes[i], errs[i] = rp.repair(ctx, &drifts[i])
			}(i)
		}
		wg.Wait()
		if len(recounts) > 0 {
			r.recount(ctx, pool, drifts, recounts, outcomes, errs)
		}
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
