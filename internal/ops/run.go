// Package ops is the engine of `denorm backfill` and `denorm verify`: it computes every copy,
// mirror, count and sum of an existing table from its sources and compares (and, when asked,
// repairs) the targets.
//
// A run is one or more rounds. Each round takes a group of rules and makes two parallel
// scans: the first reads the sources and builds what they expect (copy values per source,
// mirror items, counter totals), the second reads the targets, compares, and repairs with
// conditional writes. A repairing round with count or sum rules scans once more, first:
// the versions of the state items, which decide whether the scan's totals can be written
// (counters.go). Repairing runs the rules level by level (a mirror before the counts of
// the items it creates), so a backfill of a table the rules were never applied to
// converges in one command. The pure part (Evaluator: Observe, Check, Missing) does no I/O.
package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/retry"
)

// Config is one run.
type Config struct {
	API   API
	Table string
	Eval  *Evaluator
	// Mode names the run in the report ("verify", "backfill", ...).
	Mode string
	// Repair writes what differs; without it the run only reads.
	Repair bool
	// Segments is the parallel scan's TotalSegments (default 4).
	Segments int
	// PageSize is each Scan's Limit (0: DynamoDB's 1 MB pages).
	PageSize int32
	// MaxWCU caps the write capacity units repairs consume per second (0: no cap).
	MaxWCU float64
	// Examples is how many drifted items per rule the report shows (default 5).
	Examples int
	// Concurrency is how many repairs one segment has in flight (default 8).
	Concurrency int
	// Settle is how long a counter recount waits between reading a target's sources and
	// writing its total, so that deltas of source writes still on the stream land first
	// and are noticed (0: no wait). Set it above the stream's lag: the event source
	// mapping's IteratorAge plus its batching window. See docs/operations.md.
	Settle time.Duration
	// Checkpoint is the file that makes the run resumable ("" for none). It is written
	// atomically after pages (at most every CheckpointEvery, default 2 s), when a segment
	// finishes and when the run stops, and removed when the run completes.
	Checkpoint      string
	CheckpointEvery time.Duration
	// RulesID identifies the rules (a hash of the file): a checkpoint of other rules is refused.
	RulesID string
	// Progress receives a progress bar with ETA (nil: none).
	Progress io.Writer
	// OnSegmentDone is called when a segment of a pass finishes (round and pass from 0).
	OnSegmentDone func(round, pass, segment int)
}

func (c *Config) defaults() {
	if c.Segments <= 0 {
		c.Segments = 4
	}
	if c.Examples < 0 {
		c.Examples = 0
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.CheckpointEvery <= 0 {
		c.CheckpointEvery = 2 * time.Second
	}
	if c.Mode == "" {
		c.Mode = "verify"
	}
}

// runner is the state of one Run.
type runner struct {
	cfg    Config
	st     *state
	db     *db
	bar    *progress
	start  time.Time
	saveMu sync.Mutex
	saved  time.Time
	mu     sync.Mutex // guards report
	report *Report
	// exampleList is the examples kept so far, in the order found.
	exampleList []namedExample
	scanned     int64
	rcu         float64
}

type namedExample struct {
	rule string
	Example
}

// Run executes cfg and returns its report. On an error once scanning started (an
// interruption included) the report holds what was done so far and the checkpoint, if any,
// the place to resume; an error before (no such table, a checkpoint of another run) comes
// without a report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	ev := cfg.Eval
	rounds := [][]int{ev.All()}
	if cfg.Repair {
		rounds = ev.Levels()
	}
	r := &runner{cfg: cfg, start: time.Now(),
		db:     &db{api: cfg.API, table: cfg.Table, spec: ev.spec, lim: newLimiter(cfg.MaxWCU), split: ev.split},
		report: &Report{Scan: Scan{Table: cfg.Table, Mode: cfg.Mode}}}
	r.st = newState(cfg.Table, cfg.RulesID, cfg.Segments, cfg.Repair, ev, rounds)
	if cfg.Checkpoint != "" {
		loaded, err := loadState(cfg.Checkpoint, r.st, ev)
		if err != nil {
			return nil, err
		}
		if loaded != nil {
			r.st, r.report.Resumed = loaded, true
		}
	}
	count, err := r.describe(ctx)
	if err != nil {
		return nil, err
	}
	scans := 0
	for ri := range r.st.Rounds {
		scans += len(r.passesOf(ri))
	}
	r.bar = newProgress(cfg.Progress, count*int64(scans), r.st.scanned())
	err = r.run(ctx)
	r.bar.finish()
	if cfg.Checkpoint != "" {
		if err == nil {
			if rmErr := os.Remove(cfg.Checkpoint); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
				err = fmt.Errorf("removing finished checkpoint: %w", rmErr)
			}
		} else if saveErr := r.save(true); saveErr != nil {
			err = errors.Join(err, saveErr)
		}
	}
	r.finishReport()
	return r.report, err
}

// describe checks that the table has the rules' keys and returns its approximate item
// count (for the progress bar; DynamoDB updates it about every six hours).
func (r *runner) describe(ctx context.Context) (int64, error) {
	out, err := r.cfg.API.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(r.cfg.Table)})
	if err != nil {
		return 0, fmt.Errorf("describing table %s: %w", r.cfg.Table, err)
	}
	spec := r.cfg.Eval.spec
	for _, ks := range out.Table.KeySchema {
		want := spec.PartitionKey
		if ks.KeyType == types.KeyTypeRange {
			want = spec.SortKey
		}
		if aws.ToString(ks.AttributeName) != want {
			return 0, fmt.Errorf("table %s has %s key %s, the rules say %q", r.cfg.Table, ks.KeyType, aws.ToString(ks.AttributeName), want)
		}
	}
	return aws.ToInt64(out.Table.ItemCount), nil
}

func (r *runner) run(ctx context.Context) error {
	ev := r.cfg.Eval
	for ri, rs := range r.st.Rounds {
		if rs.Done {
			r.skipRound(ri)
			continue
		}
		which := make([]int, 0, len(rs.Rules))
		for _, name := range rs.Rules {
			i, err := ev.index(name)
			if err != nil {
				return err
			}
			which = append(which, i)
		}
		// A repairing round with counts or sums first reads the state items' versions, and
		// waits a settle after each scan before the next: see counters.go.
		counts := r.cfg.Repair && ev.hasCounters(which)
		sv := stateVersions{rs: rs}
		if counts {
			if err := r.pass(ctx, ri, passStates, which, nil, sv); err != nil {
				return err
			}
			sv.read = map[plan.Key]uint64{}
			for _, s := range rs.Passes[passStates] {
				for k, v := range s.vers {
					if t, ok := r.stateTarget(k); ok {
						sv.read[t] += v // a split target's items can be in several segments
					}
				}
			}
			if err := r.settle(ctx, rs.Passes[passSources]); err != nil {
				return err
			}
		}
		if err := r.pass(ctx, ri, passSources, which, nil, sv); err != nil {
			return err
		}
		exp := ev.NewExpected()
		final := map[string]*RuleStats{}
		for _, s := range rs.Passes[passSources] {
			for _, p := range exp.Merge(s.exp) {
				r.problem(final, p)
			}
		}
		if counts {
			if err := r.settle(ctx, rs.Passes[passTargets]); err != nil {
				return err
			}
		}
		if err := r.pass(ctx, ri, passTargets, which, exp, sv); err != nil {
			return err
		}
		seen := ev.NewSeen()
		for _, s := range rs.Passes[passTargets] {
			seen.Merge(s.seen)
		}
		var states map[plan.Key]uint64
		if counts {
			states = sv.read
		}
		drifts, skipped := ev.Missing(which, exp, seen, states)
		for i, n := range skipped {
			if n > 0 {
				r.stats(final, i).MissingTargets += n
			}
		}
		if err := r.repairAll(ctx, drifts, exp, sv, final); err != nil {
			return err
		}

		rs.Final, rs.Done = final, true
		// A finished round's expectations are no longer needed: keep them out of memory
		// and out of every later checkpoint.
		for _, p := range rs.Passes {
			for _, s := range p {
				s.mu.Lock()
				s.exp, s.seen, s.vers = nil, nil, nil
				s.mu.Unlock()
			}
		}
		rs.mu.Lock()
		rs.written = nil
		rs.mu.Unlock()
		if err := r.save(true); err != nil {
			return err
		}
	}
	return nil
}

// settle waits Settle before a pass whose segments are not all done yet: the deltas of
// the writes the scans before it read land first (counters.go).
func (r *runner) settle(ctx context.Context, next []*segState) error {
	for _, s := range next {
		if !s.Done {
			return retry.Sleep(ctx, r.cfg.Settle)
		}
	}
	return nil
}

func (r *runner) skipRound(ri int) {
	for _, p := range r.passesOf(ri) {
		r.passReport(ri, p).Skipped = r.cfg.Segments
	}
}

// passesOf is the passes round ri makes.
func (r *runner) passesOf(ri int) []int {
	which := make([]int, 0, len(r.st.Rounds[ri].Rules))
	for _, name := range r.st.Rounds[ri].Rules {
		if i, err := r.cfg.Eval.index(name); err == nil {
			which = append(which, i)
		}
	}
	if r.cfg.Repair && r.cfg.Eval.hasCounters(which) {
		return []int{passStates, passSources, passTargets}
	}
	return []int{passSources, passTargets}
}

// passReport returns this run's report entry for a pass, creating it.
func (r *runner) passReport(ri, p int) *PassReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.report.Passes {
		if pr := &r.report.Passes[i]; pr.Round == ri+1 && pr.Pass == p {
			return pr
		}
	}
	r.report.Passes = append(r.report.Passes, PassReport{Round: ri + 1, Pass: p})
	return &r.report.Passes[len(r.report.Passes)-1]
}

// stats returns rule i's counters in m, creating them.
func (r *runner) stats(m map[string]*RuleStats, i int) *RuleStats {
	name := r.cfg.Eval.rules[i].r.Name
	s := m[name]
	if s == nil {
		s = &RuleStats{}
		m[name] = s
	}
	return s
}

func (r *runner) problem(m map[string]*RuleStats, p Problem) {
	r.stats(m, p.Rule).Problems++
	r.example(p.Rule, Example{PK: p.Key.PK, SK: p.Key.SK, Problem: "cannot evaluate", Note: p.Msg})
}

// example keeps the first Examples per rule.
func (r *runner) example(rule int, ex Example) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := r.cfg.Eval.rules[rule].r.Name
	n := 0
	for _, e := range r.exampleList {
		if e.rule == name {
			n++
		}
	}
	if n < r.cfg.Examples {
		r.exampleList = append(r.exampleList, namedExample{rule: name, Example: ex})
	}
}

// save writes the checkpoint, at most every CheckpointEvery unless forced.
func (r *runner) save(force bool) error {
	if r.cfg.Checkpoint == "" {
		return nil
	}
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	if !force && time.Since(r.saved) < r.cfg.CheckpointEvery {
		return nil
	}
	r.saved = time.Now()
	return r.st.save(r.cfg.Checkpoint)
}

// scanned is how many items the state's passes have read (for a resumed progress bar).
func (st *state) scanned() int64 {
	var n int64
	for _, rs := range st.Rounds {
		for _, p := range rs.Passes {
			for _, s := range p {
				n += s.Scanned
			}
		}
	}
	return n
}

// finishReport adds up every segment's and round's counters, in rule order.
func (r *runner) finishReport() {
	ev := r.cfg.Eval
	sum := map[string]*RuleStats{}
	for _, rs := range r.st.Rounds {
		for _, p := range rs.Passes {
			for _, s := range p {
				s.mu.Lock()
				for name, st := range s.Stats {
					addStats(sum, name, st)
				}
				s.mu.Unlock()
			}
		}
		for name, st := range rs.Final {
			addStats(sum, name, st)
		}
	}
	rep := r.report
	rep.Rules = nil
	for _, rs := range ev.rules {
		rr := RuleReport{Rule: rs.r.Name, Kind: string(rs.r.Kind), Examples: []Example{}}
		if s := sum[rs.r.Name]; s != nil {
			rr.RuleStats = *s
		}
		for _, e := range r.exampleList {
			if e.rule == rs.r.Name {
				rr.Examples = append(rr.Examples, e.Example)
			}
		}
		rep.Rules = append(rep.Rules, rr)
	}
	r.db.mu.Lock()
	rep.finish(r.start, r.scanned, r.db.writes, r.db.wcu)
	rep.ConsumedRCU = r.db.rcu + r.rcu
	r.db.mu.Unlock()
	rep.totals(r.cfg.Repair)
}

func addStats(m map[string]*RuleStats, name string, s *RuleStats) {
	if m[name] == nil {
		m[name] = &RuleStats{}
	}
	m[name].add(s)
}

// stateTarget is the target whose state the item at k holds a share of, as getState reads
// it: the target of a state item, a distinct's reference item itself, and the target of a
// state part below the target's split; false for a part getState does not read (left by a
// split since lowered or removed). A key of neither kind is a target's own key (a
// checkpoint written before the states pass kept items by their own keys).
func (r *runner) stateTarget(k plan.Key) (plan.Key, bool) {
	if t, i, ok := plan.ParsePart(k); ok {
		return t, i < r.db.splitOf(t)
	}
	if t, ok := counter.TargetOf(k); ok {
		return t, true
	}
	return k, true
}
