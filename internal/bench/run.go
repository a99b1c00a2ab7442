package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/processor"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/streamclient"
	"github.com/denorm/denorm/internal/workload"
)

// Systems compared.
const (
	Denorm   = "denorm"
	Naive    = "baseline"
	setupIdl = 300 * time.Millisecond
)

// Config is one benchmark run.
type Config struct {
	// Emulator gives each run its DynamoDB Local (default: Shared(Endpoint)).
	Emulator  Emulator
	Endpoint  string // DynamoDB Local, when Emulator is nil
	RulesPath string // rules/social.yaml
	Workloads []string
	Reps      int // runs per system and workload (default 2)
	Size      Size
	Seed      uint64
	// BatchSize and PollInterval configure both event source mappings (default 100, 50 ms).
	BatchSize    int
	PollInterval time.Duration
	// Ceiling is how long each shape and concurrency of the raw write ceiling runs (default
	// 3 s; negative skips it).
	Ceiling time.Duration
	// WarmUp is how long each request shape warms a run's emulator before the run (default
	// 3 s: DynamoDB Local's JIT needs ~8 s of load to reach its speed; negative: none).
	WarmUp     time.Duration
	KeepTables bool
	// Latency delays every DynamoDB and DynamoDB Streams call the handlers and the event
	// source mapping make to what it would take on AWS (nil: calls take what DynamoDB Local
	// takes). The setup, the application's writes and verify are not delayed.
	Latency *LatencyModel
	// BatchingWindow is the mappings' MaximumBatchingWindow (default 0, Lambda's default).
	BatchingWindow time.Duration
	// LiveRate, when positive, paces every workload's live writes at this many per second
	// instead of the workload's own rate.
	LiveRate float64
	// Prices bill Lambda duration, requests and capacity (default USEast1).
	Prices *Prices
	// Progress receives one line per step (nil: none).
	Progress io.Writer
}

func (c *Config) defaults() {
	if c.Reps <= 0 {
		c.Reps = 2
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 50 * time.Millisecond
		if c.Latency != nil {
			// Lambda polls a DynamoDB stream's shard 4 times per second.
			c.PollInterval = 250 * time.Millisecond
		}
	}
	if c.Prices == nil {
		p := USEast1
		c.Prices = &p
	}
	if c.Ceiling == 0 {
		c.Ceiling = 3 * time.Second
	}
	if c.WarmUp == 0 {
		c.WarmUp = 3 * time.Second
	}
	if c.Emulator == nil {
		c.Emulator = Shared(c.Endpoint)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// Run measures every workload through both systems, alternating, and the raw ceiling.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	dir, err := os.MkdirTemp("", "denorm-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	r := &runner{cfg: cfg, dir: dir}
	rep := &Report{Machine: machineInfo(ctx, cfg.Endpoint), Started: time.Now().UTC(), Reps: cfg.Reps,
		BatchSize: cfg.BatchSize, PollIntervalMs: ms(cfg.PollInterval), Seed: cfg.Seed, WarmUpSeconds: cfg.WarmUp.Seconds(),
		Latency: cfg.Latency.Describe(), LatencyModel: cfg.Latency, BatchingWindowMs: ms(cfg.BatchingWindow), LiveRate: cfg.LiveRate,
		Prices: *cfg.Prices}
	if _, fresh := cfg.Emulator.(Fresh); fresh {
		rep.Emulator = "a fresh DynamoDB Local per run and for the ceiling"
	} else {
		rep.Emulator = "one shared DynamoDB Local"
	}
	rep.Machine.LoadBefore = loadAvg()
	sz := cfg.Size
	if cfg.LiveRate > 0 {
		// Enough live writes to pace for 2 seconds at that rate.
		sz = sz.WithLive(int(2 * cfg.LiveRate))
	}
	all := Workloads(cfg.Seed, sz)
	var chosen []Workload
	for _, w := range all {
		if len(cfg.Workloads) == 0 || contains(cfg.Workloads, w.Name) {
			chosen = append(chosen, w)
		}
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("no workload named %s (have %s)", strings.Join(cfg.Workloads, ", "), names(all))
	}
	_, set, err := ruleSubset(cfg.RulesPath, nil, false, 0)
	if err != nil {
		return nil, err
	}
	ceiling := func() (c Ceiling, err error) {
		err = r.withEmulator(ctx, set, func(db *dynamodb.Client, _ *dynamodbstreams.Client) error {
			c, err = measureCeiling(ctx, db, set.Table, cfg.Ceiling)
			return err
		})
		return c, err
	}
	if cfg.Ceiling > 0 {
		fmt.Fprintf(cfg.Progress, "ceiling: raw DynamoDB Local writes, %s per shape and concurrency\n", cfg.Ceiling)
		if rep.Ceiling, err = ceiling(); err != nil {
			return nil, err
		}
	}
	for _, w := range chosen {
		wr, err := r.workload(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w", w.Name, err)
		}
		rep.Workloads = append(rep.Workloads, *wr)
	}
	if cfg.Ceiling > 0 {
		fmt.Fprintf(cfg.Progress, "ceiling again, after the workloads\n")
		after, err := ceiling()
		if err != nil {
			return nil, err
		}
		rep.CeilingAfter = &after
	}
	rep.Machine.LoadAfter = loadAvg()
	rep.Finished = time.Now().UTC()
	rep.summarize()
	return rep, nil
}

type runner struct {
	cfg Config
	dir string
	// db and streams are the clients of the current run's emulator; hdb and hstreams are
	// the handlers' and the measured mapping's, through the latency model.
	db       *dynamodb.Client
	streams  *dynamodbstreams.Client
	hdb      *dynamodb.Client
	hstreams *dynamodbstreams.Client
}

// withEmulator runs fn on an emulator of its own (fresh or shared), warmed up.
func (r *runner) withEmulator(ctx context.Context, set *rules.Set, fn func(*dynamodb.Client, *dynamodbstreams.Client) error) error {
	ep, stop, err := r.cfg.Emulator.Start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	awsCfg, err := awsconf.Load(ctx, ep)
	if err != nil {
		return err
	}
	db, streams := awsconf.DynamoDB(awsCfg, true), streamclient.New(awsCfg, true)
	if r.cfg.WarmUp > 0 {
		if err := warmUp(ctx, db, set.Table, r.cfg.WarmUp); err != nil {
			return fmt.Errorf("warming up %s: %w", ep, err)
		}
	}
	r.db, r.streams = db, streams
	r.hdb = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true
		o.APIOptions = append(o.APIOptions, r.cfg.Latency.AddTo)
	})
	r.hstreams = streamclient.New(awsCfg, true, func(o *dynamodbstreams.Options) {
		o.APIOptions = append(o.APIOptions, r.cfg.Latency.AddTo)
	})
	return fn(db, streams)
}

func (r *runner) workload(ctx context.Context, w Workload) (*WorkloadResult, error) {
	f, set, err := ruleSubset(r.cfg.RulesPath, w.Rules, w.ParallelizationFactor > 1, w.Split)
	if err != nil {
		return nil, err
	}
	wr := &WorkloadResult{Name: w.Name, Description: w.Description, Rules: ruleNames(set), Targets: w.Targets,
		SetupOps: len(w.Setup), Ops: len(w.Measure), LiveOps: len(w.Live), LiveRate: r.liveRate(w), CopyLag: w.CopyLag,
		ParallelizationFactor: max(1, w.ParallelizationFactor), Deltas: w.Deltas, NoBaseline: w.NoBaseline}
	systems := []string{Denorm, Naive}
	if w.NoBaseline {
		systems = systems[:1]
	}
	for rep := 0; rep < r.cfg.Reps; rep++ {
		for _, sys := range systems {
			fmt.Fprintf(r.cfg.Progress, "%s: %s run %d/%d ...", w.Name, sys, rep+1, r.cfg.Reps)
			t := time.Now()
			var res *RunResult
			err := r.withEmulator(ctx, set, func(*dynamodb.Client, *dynamodbstreams.Client) (err error) {
				res, err = r.once(ctx, w, f, set, sys, rep)
				return err
			})
			if err != nil {
				fmt.Fprintln(r.cfg.Progress, " failed")
				return nil, fmt.Errorf("%s run %d: %w", sys, rep+1, err)
			}
			fmt.Fprintf(r.cfg.Progress, " %.0f records/s, %.0f WCU, lag p50 %.0f ms, verify %s (%s)\n",
				res.RecordsPerSec, res.Usage.WCU, res.Lag.P50, res.Verify.verdict(), time.Since(t).Round(time.Second))
			wr.Runs = append(wr.Runs, *res)
		}
	}
	return wr, nil
}

// once runs w through sys on a fresh table.
func (r *runner) once(ctx context.Context, w Workload, f *rules.File, set *rules.Set, sys string, rep int) (*RunResult, error) {
	name := fmt.Sprintf("bench-%s-%s-%d-%06x", w.Name, sys, rep, rand.Uint32()&0xffffff)
	phases := map[string]float64{}
	lap := time.Now()
	phase := func(name string) {
		now := time.Now()
		phases[name] = now.Sub(lap).Seconds()
		lap = now
	}
	desc, err := provision.Ensure(ctx, r.db, name, set.Table)
	if err != nil {
		return nil, err
	}
	if !r.cfg.KeepTables {
		defer func() { _ = provision.Delete(context.WithoutCancel(ctx), r.db, name) }()
	}
	arn := aws.ToString(desc.LatestStreamArn)
	filters, err := set.FilterPatterns()
	if err != nil {
		return nil, err
	}
	mc := esm.Config{StreamARN: arn, BatchSize: r.cfg.BatchSize, PollInterval: r.cfg.PollInterval, MaximumBatchingWindow: r.cfg.BatchingWindow,
		ParallelizationFactor: w.ParallelizationFactor, // both systems: like for like
		MaximumRetryAttempts:  esm.Int(5), BisectBatchOnFunctionError: true, ReportBatchItemFailures: true,
		FilterCriteria: filters, CheckpointFile: filepath.Join(r.dir, name+".json"),
		OnFailureDir: filepath.Join(r.dir, name+"-failures"), Logger: quiet()}

	// Setup: written, then skipped on the stream (nothing derived from it yet).
	phase("create table")
	if err := writeSetup(ctx, r.db, name, w.Setup); err != nil {
		return nil, err
	}
	phase("write setup")
	skip, err := startMapping(r.streams, nopInvoker{}, mc)
	if err != nil {
		return nil, err
	}
	if err := skip.drain(ctx, setupIdl); err != nil {
		return nil, fmt.Errorf("skipping setup records: %w", err)
	}
	if err := skip.stop(); err != nil {
		return nil, err
	}
	phase("skip setup records")

	// The measured backlog, written while no mapping runs. A fan-out workload has none: its
	// one record is measured live, where its copies' lag is.
	if err := workload.Write(ctx, r.db, name, w.Measure, 8, nil); err != nil {
		return nil, err
	}
	phase("write backlog")
	api := newMeteredAPI(r.hdb, set.Table.PartitionKey, set.Table.SortKey)
	hook := &visibleHook{}
	logs := &captureLog{}
	var floor *floorCounter
	var inner esm.Invoker
	switch sys {
	case Denorm:
		// As in the function, the handler writes an EMF line per invocation (here to
		// nowhere); the executor's own logs stay out of the handler's counts.
		h := processor.New(api, name, set, processor.Options{Logger: slog.New(logs), Metrics: io.Discard,
			Apply: apply.Options{Logger: quiet()}})
		inner = lambda.NewHandler(h.Handle)
	default:
		floor = newFloorCounter()
		b := &Baseline{DB: api, Table: name, Rules: map[string]bool{}, Floor: floor, Applied: hook.call}
		for _, rn := range ruleNames(set) {
			b.Rules[rn] = true
		}
		inner = lambda.NewHandler(b.Handle)
	}
	mi := &meteredInvoker{inv: inner, floor: floor, prices: *r.cfg.Prices}
	res := &RunResult{System: sys, Rep: rep + 1, Table: name}
	// measured fills the cost and throughput figures from what happened since start.
	measured := func(start time.Time, records int) {
		st, u := mi.take(), api.take()
		res.Usage, res.Invocations, res.Overlapped = u, st.Invocations, st.Overlapped
		// With a latency model, Lambda is billed for what the invocations would take on AWS
		// (their critical path by the model), not for DynamoDB Local's queueing here.
		billed := st.BilledMs
		if r.cfg.Latency != nil {
			billed = st.ModelMs
		}
		res.Cost = r.cfg.Prices.cost(records, st.Invocations, billed, u.WCU, u.RCU)
		res.Cost.BilledHereMs = st.BilledMs
		res.Path = st.Path
		// One shard by the model: each batch read (GetRecords), then invoked, in turn.
		res.ModelDrainSeconds = (st.ModelMs + float64(st.Invocations)*ms(r.cfg.Latency.For("GetRecords").Median)) / 1000
		res.ModelRecordsPerSec = div(float64(records), res.ModelDrainSeconds)
		if !st.LastEnd.IsZero() {
			res.DrainSeconds = st.LastEnd.Sub(start).Seconds()
		}
		if floor != nil {
			res.FloorWrites, res.FloorWCU = floor.take(api.writeCost)
		}
		if res.DrainSeconds > 0 {
			res.RecordsPerSec = float64(records) / res.DrainSeconds
			res.ItemWritesPerSec = float64(u.ItemWrites) / res.DrainSeconds
		}
		if records > 0 {
			res.CPUPerRecordUs = float64(st.CPU.Microseconds()) / float64(records)
		}
		res.HandlerWall = st.Wall.Seconds()
		res.HandlerWCU, res.HandlerWarnings, res.Refused, res.PullsSkipped = logs.take()
	}
	t0 := time.Now()
	m, err := startMapping(r.hstreams, mi, mc)
	if err != nil {
		return nil, err
	}
	defer m.stop()
	if err := m.drain(ctx, 500*time.Millisecond); err != nil {
		return nil, fmt.Errorf("draining the backlog: %w", err)
	}
	phase("drain backlog")
	if len(w.Measure) > 0 {
		measured(t0, len(w.Measure))
		res.Delivered = m.m.Stats().Records
	} else {
		mi.take()
		api.take()
		floor.take(api.writeCost)
	}

	// Live: paced writes with the mapping running, for lag.
	obs := newLagObserver(w.Live)
	if sys == Denorm {
		mi.setVisible(obs.observe)
	} else {
		hook.set(obs.observe)
	}
	if w.CopyLag {
		api.trackWrites(true)
	}
	before := m.m.Stats().Records
	rate := r.liveRate(w)
	acks, err := writePaced(ctx, r.db, name, w.Live, rate, 16)
	if err != nil {
		return nil, err
	}
	if err := m.drain(ctx, 500*time.Millisecond); err != nil {
		return nil, fmt.Errorf("draining the live writes: %w", err)
	}
	phase("live writes")
	if w.CopyLag {
		var lags []time.Duration
		for k, t := range api.trackWrites(false) {
			if strings.HasPrefix(k[1], "COMMENT#") && !acks[0].IsZero() {
				lags = append(lags, max(0, t.Sub(acks[0])))
			}
		}
		res.Lag = distOf(lags)
		// Priced per copy: the one source write is the rename.
		measured(acks[0], len(lags))
		res.Delivered = m.m.Stats().Records - before
		// The work is the copies: timed to the last one written; CPU and cost per copy.
		if res.Lag.Max > 0 {
			res.DrainSeconds = res.Lag.Max / 1000
			res.RecordsPerSec = float64(len(w.Live)) / res.DrainSeconds
			res.ItemWritesPerSec = float64(res.Usage.ItemWrites) / res.DrainSeconds
		}
	} else {
		lags, unseen := obs.recordLags(acks)
		res.Lag, res.LiveUnseen = distOf(lags), unseen
		res.LiveRate = achievedRate(acks)
		live := mi.take()
		res.LiveInvocations = live.Invocations
		lu := api.take()
		res.LiveUsage = &lu
		floor.take(api.writeCost)
		_, w2, _, _ := logs.take()
		res.HandlerWarnings += w2
	}
	if err := m.stop(); err != nil {
		return nil, err
	}

	// Exactly once: recompute every target from its sources.
	ev, err := ops.NewEvaluator(f, "")
	if err != nil {
		return nil, err
	}
	vr, err := ops.Run(ctx, ops.Config{API: r.db, Table: name, Eval: ev, Examples: 3})
	if err != nil {
		return nil, fmt.Errorf("verifying %s: %w", name, err)
	}
	phase("verify")
	res.PhaseSeconds = phases
	res.Verify = Verify{Clean: vr.Clean(), Drift: vr.Drift, Problems: vr.Problems}
	for _, rr := range vr.Rules {
		res.Verify.Checked += rr.Checked
		for _, ex := range rr.Examples {
			res.Verify.Examples = append(res.Verify.Examples, fmt.Sprintf("%s: %s %s %s %s", rr.Rule, ex.PK, ex.SK, ex.Attribute, ex.Problem))
		}
	}
	return res, nil
}

// liveRate is the rate w's live writes are paced at.
func (r *runner) liveRate(w Workload) float64 {
	if r.cfg.LiveRate > 0 && !w.CopyLag {
		return r.cfg.LiveRate
	}
	return w.LiveRate
}

// achievedRate is the rate the live writes were acknowledged at: the paced rate, unless
// the emulator could not take them that fast.
func achievedRate(acks []time.Time) float64 {
	var first, last time.Time
	n := 0
	for _, t := range acks {
		if t.IsZero() {
			continue
		}
		n++
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	if n < 2 || !last.After(first) {
		return 0
	}
	return float64(n-1) / last.Sub(first).Seconds()
}

// mapping is a running event source mapping.
type mapping struct {
	m      *esm.Mapping
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func startMapping(streams esm.StreamsAPI, inv esm.Invoker, cfg esm.Config) (*mapping, error) {
	m, err := esm.New(streams, inv, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	mp := &mapping{m: m, cancel: cancel, done: make(chan error, 1)}
	go func() { mp.done <- m.Run(ctx) }()
	return mp, nil
}

func (mp *mapping) drain(ctx context.Context, idle time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	return mp.m.Drain(ctx, idle)
}

func (mp *mapping) stop() error {
	mp.once.Do(func() {
		mp.cancel()
		if err := <-mp.done; err != nil && !errors.Is(err, context.Canceled) {
			mp.err = err
		}
	})
	return mp.err
}

// visibleHook lets the baseline report applied records to whichever observer is current.
type visibleHook struct {
	mu sync.Mutex
	f  func(*events.DynamoDBEventRecord, time.Time)
}

func (h *visibleHook) set(f func(*events.DynamoDBEventRecord, time.Time)) {
	h.mu.Lock()
	h.f = f
	h.mu.Unlock()
}

func (h *visibleHook) call(rec *events.DynamoDBEventRecord, at time.Time) {
	h.mu.Lock()
	f := h.f
	h.mu.Unlock()
	if f != nil {
		f(rec, at)
	}
}

// captureLog is the Denorm handler's logger: it adds up the write capacity the handler
// itself reports (apply.Stats), to cross-check the metered figure, and counts warnings.
type captureLog struct {
	mu       sync.Mutex
	wcu      float64
	warnings int
	refused  map[string]int // writes refused by their condition, per guard
	skipped  int            // pulls not written: a read showed their condition would refuse them
}

func (c *captureLog) Enabled(context.Context, slog.Level) bool { return true }
func (c *captureLog) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *captureLog) WithGroup(string) slog.Handler            { return c }
func (c *captureLog) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Level >= slog.LevelWarn {
		c.warnings++
	}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "wcu":
			c.wcu += a.Value.Float64()
		case "pullsSkipped":
			c.skipped += int(a.Value.Int64())
		case "refused":
			for _, g := range a.Value.Group() {
				if c.refused == nil {
					c.refused = map[string]int{}
				}
				c.refused[g.Key] += int(g.Value.Int64())
			}
		}
		return true
	})
	return nil
}

func (c *captureLog) take() (float64, int, map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, n, ref, sk := c.wcu, c.warnings, c.refused, c.skipped
	c.wcu, c.warnings, c.refused, c.skipped = 0, 0, nil, 0
	return w, n, ref, sk
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
}

func ruleNames(set *rules.Set) []string {
	var out []string
	for _, r := range set.Compiled() {
		out = append(out, r.Name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func names(ws []Workload) string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Name)
	}
	return strings.Join(out, ", ")
}
