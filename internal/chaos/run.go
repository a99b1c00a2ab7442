package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/replicator"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/streams"
	"github.com/denorm/denorm/internal/workload"
)

// Config is one chaos run.
type Config struct {
	Endpoint  string // DynamoDB Local
	Table     string // created when missing; the caller deletes it
	RulesPath string // rules/social.yaml: the oracle knows its rules
	Seed      uint64
	// Ops is the number of application operations (about: rounds are whole).
	Ops    int
	Faults Faults
	// Workload shapes the generated operations.
	Workload Options
	// BatchSize of the event source mapping (default 100).
	BatchSize int
	// Workers write the workload in parallel, each item's operations in order (default 4).
	Workers int
	// OnFailureDir receives the on-failure records (required).
	OnFailureDir string
	// Logger receives the handler's and the mapping's logs (default: none).
	Logger *slog.Logger
	// Progress receives a line every ProgressEvery (default 30 s) while the run goes on.
	Progress      io.Writer
	ProgressEvery time.Duration
	// DrainTimeout bounds the wait for the stream to drain after the last write
	// (default 10 minutes).
	DrainTimeout time.Duration
	// Replica, when set, names a second table kept a replica of Table by internal/replicator,
	// as a global table's replica in a second Region: the application writes each item in one
	// of the two, picked by its key, and the pipeline runs on Table's stream alone (created
	// when missing, deleted at the end).
	Replica string
	// ReplicationDelay is the replicator's delay (default 500 ms). The replica's Region is
	// cut off (nothing replicated either way) while the second third of the operations is
	// written, and comes back.
	ReplicationDelay time.Duration
	// HomeWrites makes the application write the items Denorm writes into (every target of a
	// copy or an aggregate) in Table's Region only, and spread the others.
	HomeWrites bool
	// Move moves the processing to Replica's Region (requires Replica; no Poison, no Replay).
	// While the second third of the operations is written, Table's Region is down: its
	// processor stops with records unread, nothing is replicated to or from it, and the
	// application writes in the replica's Region only. `denorm takeover` moves the
	// processing and the processor is deployed on the replica's stream (TRIM_HORIZON); once
	// it has drained, `denorm backfill` runs on the replica under the probe. Then Table's
	// Region comes back: replication resumes, and once the stream registry has reached it,
	// its processor starts again at TRIM_HORIZON, and must write nothing. Once everything
	// has drained, `denorm verify --repair` runs on the replica under the probe, and the
	// application writes the last third in both Regions (docs/processor.md, "Moving the
	// processing Region", steps 1 to 4).
	Move bool
	// BackAtOnce (with Move) starts Table's processor as soon as its Region comes back, as
	// Lambda's would, before the stream registry has reached it: it applies what it reads
	// until then (and until its last read of the registry is older than StreamCheck), and
	// the repair after the comeback decides what it wrote.
	BackAtOnce bool
}

// FunctionStats add up the handler's per-invocation metrics (its EMF lines).
type FunctionStats struct {
	Invocations, Records, Effects, Writes, DuplicatesSkipped, Retries, Failures, FanOutPages int64
	WCU                                                                                      float64
	// Copies of count and sum states written onto their targets, and targets the
	// application wrote whose state was read to put their copy back.
	CopiesWritten, TargetsRefreshed int64
	// SkippedRecords counts the records of batches skipped because their stream is not the
	// current one of the stream registry.
	SkippedRecords int64
}

// Result is what a run did and found.
type Result struct {
	Ops, Rounds, Expiries int
	// Items is the number of items in the table at the end.
	Items         int
	Duration      time.Duration
	WriteDuration time.Duration
	DrainDuration time.Duration
	Mapping       esm.Stats
	// Replays is how many times the mapping was created again at TRIM_HORIZON (Faults.Replay).
	Replays  int
	Function FunctionStats
	Injected Counts
	// PoisonExpected is how many records of the workload can never be applied; Poison the
	// ones the hooks saw, by sequence number.
	PoisonExpected int
	Poison         map[string]string
	// Touched names, by sequence number, the records of items an application-class case
	// touched (Faults.Application), with the cases: what an on-failure record was.
	Touched  map[string]string
	Failures []esm.FailureRecord
	Verify   *ops.Report
	Oracle   []Mismatch
	// OracleReported is set when the oracle's mismatches are reported, and only those of
	// files are problems: with a Replica and the application writing Denorm's targets in
	// both Regions, some of its writes lose to Denorm's under last writer wins, and the
	// oracle expects them all. With Move none are problems: writes the first Region had not
	// replicated when it went down lose to later ones under last writer wins, files too.
	// The verify engine on each table and the tables' equality are the checks.
	OracleReported bool
	// With a Replica: what the replicator did, the verify engine's report on the replica,
	// and every item in which the two tables differ at the end.
	Replication   replicator.Stats
	ReplicaVerify *ops.Report
	ReplicaDiffs  []string
	// With Move: what the procedure of docs/processor.md found and did.
	Move *MoveResult
	// Evidence shows, for each counter the checks found drifted, its target and state item
	// in each table, for whoever looks into it.
	Evidence []string
}

// MoveResult is what moving the processing Region did (Config.Move), step by step as
// docs/processor.md, "Moving the processing Region", tells an operator to.
type MoveResult struct {
	// Backfill is step 3's report: `denorm backfill` in the new processing Region once its
	// processor has caught up, the first Region still down.
	Backfill *ops.Report
	// Repairs are step 4's reports: `denorm verify --repair` there once the first Region
	// is back and replication has drained, run again while it leaves targets unrepaired.
	Repairs []*ops.Report
	// Comeback is what the first Region's processor did once it came back: it must skip
	// its retired stream's batches, and write nothing unless it started before the
	// registry reached its Region (BackAtOnce).
	Comeback   FunctionStats
	BackAtOnce bool
}

// Repair is step 4's last report (nil before it ran): what it left unrepaired.
func (m *MoveResult) Repair() *ops.Report {
	if len(m.Repairs) == 0 {
		return nil
	}
	return m.Repairs[len(m.Repairs)-1]
}

// Run provisions the table, starts the event source mapping emulator over its stream with
// the real handler and executor (wrapped in the fault injectors), writes the generated
// workload as an application would, waits for the stream to drain, and checks the table:
// the verify engine, the oracle, the on-failure destination. It returns an error only when
// the run could not be made; what the checks found is in the Result (see Result.Problems).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.OnFailureDir == "" {
		return nil, errors.New("chaos: OnFailureDir is required")
	}
	if cfg.Move && (cfg.Replica == "" || cfg.Faults.Poison || cfg.Faults.Replay) {
		return nil, errors.New("chaos: Move needs a Replica, and runs without Poison and Replay")
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 100
	}
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 10 * time.Minute
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = 30 * time.Second
	}
	start := time.Now()
	plan := Generate(cfg.Seed, cfg.Ops, cfg.Faults, cfg.Workload)
	res := &Result{Ops: len(plan.Ops) + len(plan.Final), Rounds: plan.Rounds, Expiries: plan.Expiries, PoisonExpected: plan.PoisonRecords}
	counts := &counters{}
	budget := newBudget(cfg.Faults.MaxPerBatch)
	margin := 50 * time.Millisecond
	sink := &emfSink{}
	hooks := newHooks(cfg.Faults, cfg.Seed, budget, counts)
	if cfg.Faults.Application {
		hooks.cases = plan.Model.Cases
	}
	// start runs the stream processor on table's stream, as the function and its event
	// source mapping deployed in that table's Region.
	startIn := func(table, onFailureDir string, metrics io.Writer, h *Hooks) (*local.Pipeline, error) {
		shift := cfg.Move && table == cfg.Table
		return local.Start(ctx, local.Config{
			Endpoint: cfg.Endpoint, Table: table, RulesPath: cfg.RulesPath, Logger: cfg.Logger, Metrics: metrics,
			// Small pages and one inline page: renames go through fan-out jobs under faults too.
			Apply:   apply.Options{PageSize: 20, InlinePages: 1, DeadlineMargin: margin},
			WrapAPI: func(db apply.API) apply.API { return NewAPI(db, cfg.Faults, cfg.Seed, counts) },
			WrapInvoker: func(next esm.Invoker) esm.Invoker {
				if shift {
					next = seqShift{next}
				}
				return &Invoker{next: next, faults: cfg.Faults, dice: newDice(cfg.Seed, 3), budget: budget,
					counts: counts, margin: margin}
			},
			Mapping: esm.Config{
				BatchSize: cfg.BatchSize,
				// More than MaxPerBatch: injected faults alone never exhaust it.
				MaximumRetryAttempts: esm.Int(budget.max + 1), BisectBatchOnFunctionError: true,
				ReportBatchItemFailures: true, OnFailureDir: onFailureDir,
				RetryBackoff: 10 * time.Millisecond, PollInterval: 20 * time.Millisecond, Hooks: h.ESM(),
			},
		})
	}
	p, err := startIn(cfg.Table, cfg.OnFailureDir, sink, hooks)
	if err != nil {
		return nil, err
	}
	db := p.DB
	var repl *replicator.Replicator
	if cfg.Replica != "" {
		defer func() { _ = provision.Delete(context.Background(), db, cfg.Replica) }()
		if repl, err = startReplica(ctx, p, cfg); err != nil {
			_ = p.Close()
			return nil, err
		}
		defer repl.Close()
		hooks.mu.Lock()
		hooks.replicated = func(keys, old record.Item) bool { return repl.Replicated(0, keys, old) }
		hooks.mu.Unlock()
	}

	var written atomic.Int64
	if cfg.Progress != nil {
		tick := time.NewTicker(cfg.ProgressEvery)
		defer tick.Stop()
		quit := make(chan struct{})
		defer close(quit)
		go func() {
			for {
				select {
				case <-quit:
					return
				case <-tick.C:
					st, f := p.Stats(), sink.stats()
					fmt.Fprintf(cfg.Progress, "chaos: %s ops %d/%d records %d batches %d invocations %d onFailure %d writes %d copies %d refreshes %d\n",
						time.Since(start).Round(time.Second), written.Load(), len(plan.Ops)+len(plan.Final), st.Records, st.Batches, st.Invocations, st.OnFailure,
						f.Writes, f.CopiesWritten, f.TargetsRefreshed)
				}
			}
		}()
	}

	t0 := time.Now()
	var app workload.Writer = newAppWriter(db, counts)
	regions := &twoRegions{w: app, replica: cfg.Replica, home: cfg.HomeWrites}
	if cfg.Replica != "" {
		app = regions
	}
	parts := [][]workload.Op{plan.Ops}
	switch {
	case cfg.Faults.Replay:
		// Halfway, the mapping is created again at TRIM_HORIZON while the writers go on.
		parts = [][]workload.Op{plan.Ops[:len(plan.Ops)/2], plan.Ops[len(plan.Ops)/2:]}
	case cfg.Move:
		n := len(plan.Ops)
		parts = [][]workload.Op{plan.Ops[:n/3], plan.Ops[n/3 : 2*n/3], plan.Ops[2*n/3:]}
	}
	cut := repl
	var moved, back *local.Pipeline // with Move: the replica's processor, the first Region's once back
	comeback := &emfSink{}
	defer func() {
		for _, q := range []*local.Pipeline{moved, back} {
			if q != nil {
				_ = q.Close()
			}
		}
	}()
	if cfg.Move {
		cut = nil // the first Region's outage replaces the replica's cut-off
		res.Move = &MoveResult{BackAtOnce: cfg.BackAtOnce}
	}
	for i, part := range parts {
		switch {
		case i > 0 && cfg.Faults.Replay:
			if err := p.Replay(); err != nil {
				return res, fmt.Errorf("re-creating the event source mapping: %w", err)
			}
			res.Replays++
		case i == 1 && cfg.Move:
			// The first Region goes down, its processor with it; the processing moves.
			repl.Pause(0, true)
			regions.down.Store(true)
			if err := p.Close(); err != nil {
				return res, fmt.Errorf("stopping the first Region's processor: %w", err)
			}
			rh := newHooks(cfg.Faults, cfg.Seed+1, budget, counts)
			rh.replicated = func(keys, old record.Item) bool { return repl.Replicated(1, keys, old) }
			rh.cases = hooks.cases
			// `denorm takeover` in the replica's Region, then the deploy there.
			desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cfg.Replica)})
			if err != nil {
				return res, err
			}
			if _, _, err := streams.TakeOver(ctx, db, cfg.Replica, p.Set.Table, aws.ToString(desc.Table.LatestStreamArn)); err != nil {
				return res, fmt.Errorf("takeover: %w", err)
			}
			if moved, err = startIn(cfg.Replica, filepath.Join(cfg.OnFailureDir, "moved"), sink, rh); err != nil {
				return res, fmt.Errorf("deploying the processor in the replica's Region: %w", err)
			}
		case i == 2 && cfg.Move:
			// Step 3: once the new processor has caught up, the backfill decides every
			// counter it counted again from its stream's start, under the probe. (Nothing
			// replicates while the first Region is down: the replicator holds its writes.)
			dctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
			err := drain(dctx, nil, moved)
			cancel()
			if err != nil {
				return res, fmt.Errorf("draining the replica's stream: %w", err)
			}
			if res.Move.Backfill, err = repair(ctx, db, cfg.Replica, moved.File, "backfill"); err != nil {
				return res, err
			}
			// The first Region comes back. Its processor starts once the registry is there,
			// or at once.
			repl.Pause(0, false)
			if !cfg.BackAtOnce {
				if err := awaitRegistry(ctx, db, cfg.Table, moved.Set.Table, moved.StreamARN); err != nil {
					return res, err
				}
			}
			if back, err = startIn(cfg.Table, filepath.Join(cfg.OnFailureDir, "back"), comeback, hooks); err != nil {
				return res, fmt.Errorf("restarting the first Region's processor: %w", err)
			}
			// Step 4: once replication has drained, verify --repair in the processing
			// Region. What the first Region wrote before it went down and had not
			// replicated arrives only now, Denorm's writes among it: they were made from
			// records the new processor applies again as they arrive. Then the application
			// writes in both Regions again.
			dctx, cancel = context.WithTimeout(ctx, cfg.DrainTimeout)
			err = drain(dctx, repl, moved, back)
			cancel()
			if err != nil {
				return res, fmt.Errorf("draining after the first Region came back: %w", err)
			}
			// As an operator does when verify reports targets it could not repair (a target
			// still receiving deltas: a conflict), it runs again, up to three times.
			for len(res.Move.Repairs) < 3 && (len(res.Move.Repairs) == 0 || res.Move.Repair().Unrepaired > 0) {
				rep, err := repair(ctx, db, cfg.Replica, moved.File, "verify --repair")
				if err != nil {
					return res, err
				}
				res.Move.Repairs = append(res.Move.Repairs, rep)
			}
			regions.down.Store(false)
		}
		if err := workload.Write(ctx, app, cfg.Table, part, cfg.Workers, func() { cutOff(cut, written.Add(1), len(plan.Ops)) }); err != nil {
			_ = p.Close()
			return res, err
		}
	}
	if cfg.Move {
		p = moved // the processing Region's pipeline, for the drain and the stats
	}
	res.WriteDuration = time.Since(t0)
	t1 := time.Now()
	dctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
	defer cancel()
	pipes := []*local.Pipeline{p}
	if back != nil {
		pipes = append(pipes, back)
	}
	if err := drain(dctx, repl, pipes...); err != nil {
		_ = p.Close()
		return res, fmt.Errorf("draining the stream: %w", err)
	}
	if len(plan.Final) > 0 {
		if err := workload.Write(ctx, app, cfg.Table, plan.Final, cfg.Workers, func() { written.Add(1) }); err != nil {
			_ = p.Close()
			return res, err
		}
		if err := drain(dctx, repl, pipes...); err != nil {
			_ = p.Close()
			return res, fmt.Errorf("draining the stream after the final writes: %w", err)
		}
	}
	if cfg.Move {
		res.Move.Comeback = comeback.stats()
	}
	res.DrainDuration = time.Since(t1)
	if err := p.Close(); err != nil {
		return res, fmt.Errorf("event source mapping: %w", err)
	}
	res.Duration = time.Since(start)
	res.Mapping = p.Stats()
	res.Function = sink.stats()
	res.Injected = counts.snapshot()
	res.Injected.Application = plan.Application
	res.Poison = hooks.Poison()
	res.Touched = map[string]string{}
	for seq, k := range hooks.Touched() {
		res.Touched[seq] = k.PK + " " + k.SK + " [application: " + strings.Join(plan.Model.Cases(k), "; ") + "]"
	}
	for _, dir := range []string{cfg.OnFailureDir, filepath.Join(cfg.OnFailureDir, "moved"), filepath.Join(cfg.OnFailureDir, "back")} {
		frs, err := ReadFailures(dir)
		if err != nil {
			return res, err
		}
		res.Failures = append(res.Failures, frs...)
	}

	ev, err := ops.NewEvaluator(p.File, "")
	if err != nil {
		return res, err
	}
	if res.Verify, err = ops.Run(ctx, ops.Config{API: db, Table: cfg.Table, Eval: ev, Examples: 10}); err != nil {
		return res, fmt.Errorf("verify: %w", err)
	}
	table, err := Scan(ctx, db, cfg.Table)
	if err != nil {
		return res, err
	}
	res.Items = len(table)
	res.Oracle = Oracle(plan.Model, table)
	res.OracleReported = cfg.Replica != "" && (!cfg.HomeWrites || cfg.Move)
	if repl != nil {
		res.Replication = repl.Stats()
		if res.ReplicaVerify, err = ops.Run(ctx, ops.Config{API: db, Table: cfg.Replica, Eval: ev, Examples: 10}); err != nil {
			return res, fmt.Errorf("verify of the replica: %w", err)
		}
		replica, err := Scan(ctx, db, cfg.Replica)
		if err != nil {
			return res, err
		}
		res.ReplicaDiffs = diffTables(table, replica)
	}
	res.Evidence = evidence(ctx, db, []string{cfg.Table, cfg.Replica}, res.Verify, res.ReplicaVerify)
	return res, nil
}

// evidence reads the target and the state item of every drifted count or sum the reports
// show, in each table.
func evidence(ctx context.Context, db *dynamodb.Client, tables []string, reps ...*ops.Report) []string {
	var out []string
	seen := map[Key]bool{}
	for _, rep := range reps {
		if rep == nil {
			continue
		}
		for _, rr := range rep.Rules {
			if rr.Kind != "count" && rr.Kind != "sum" {
				continue
			}
			for _, ex := range rr.Examples {
				k := Key{PK: ex.PK, SK: ex.SK}
				if seen[k] {
					continue
				}
				seen[k] = true
				for _, tb := range tables {
					for _, key := range []Key{k, {PK: rules.StatePrefix + k.PK, SK: k.SK}} {
						if tb == "" {
							continue
						}
						got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tb), ConsistentRead: aws.Bool(true), Key: keyItem(key)})
						if err == nil {
							out = append(out, fmt.Sprintf("%s: %s %s {%s}", tb, key.PK, key.SK, brief(got.Item)))
						}
					}
				}
			}
		}
	}
	return out
}

// Problems lists every check the run failed; none means Denorm kept every invariant.
func (r *Result) Problems() []string {
	var out []string
	if r.Verify != nil && !r.Verify.Clean() {
		out = append(out, fmt.Sprintf("verify: drift %d, problems %d", r.Verify.Drift, r.Verify.Problems))
	}
	if !r.OracleReported {
		out = append(out, oracleProblems(r.Oracle)...)
	} else if r.Move == nil {
		// Files are written by the application alone, each from one Region, and no rule
		// writes into them: no write of theirs can lose under last writer wins. With Move
		// they can: the first Region's files are written in the replica's while it is down,
		// over versions it had not replicated yet, which win or lose when it comes back.
		var files []Mismatch
		for _, m := range r.Oracle {
			if KindOf(m.Key, nil) == File {
				files = append(files, m)
			}
		}
		out = append(out, oracleProblems(files)...)
	}
	if m := r.Move; m != nil {
		for _, step := range []struct {
			name string
			rep  *ops.Report
		}{{"backfill in the new processing Region", m.Backfill}, {"verify --repair after the first Region came back", m.Repair()}} {
			if step.rep == nil {
				out = append(out, step.name+": not run")
			} else if step.rep.Unrepaired+step.rep.Problems > 0 {
				out = append(out, fmt.Sprintf("%s: %d left unrepaired, %d problems", step.name, step.rep.Unrepaired, step.rep.Problems))
			}
		}
		if m.Comeback.SkippedRecords == 0 || m.Comeback.Writes > 0 && !m.BackAtOnce {
			out = append(out, fmt.Sprintf("the first Region's processor, back: %d records skipped as of a retired stream, %d writes; want some skipped and none written",
				m.Comeback.SkippedRecords, m.Comeback.Writes))
		}
	}
	if r.ReplicaVerify != nil && !r.ReplicaVerify.Clean() {
		out = append(out, fmt.Sprintf("verify of the replica: drift %d, problems %d", r.ReplicaVerify.Drift, r.ReplicaVerify.Problems))
	}
	for i, d := range r.ReplicaDiffs {
		if i == 10 {
			out = append(out, fmt.Sprintf("replica: %d more items differ", len(r.ReplicaDiffs)-10))
			break
		}
		out = append(out, "replica: "+d)
	}
	if len(r.Poison) != r.PoisonExpected {
		out = append(out, fmt.Sprintf("poison: the hooks saw %d poison records, the workload has %d", len(r.Poison), r.PoisonExpected))
	}
	out = append(out, checkFailures(r.Failures, r.Poison, r.Touched)...)
	// A mapping created again reads the poison records again, and discards them again.
	if int(r.Mapping.OnFailure) != len(r.Poison) && (r.Replays == 0 || int(r.Mapping.OnFailure) != len(r.Failures)) {
		out = append(out, fmt.Sprintf("on-failure: %d records discarded, want exactly the %d poison records", r.Mapping.OnFailure, len(r.Poison)))
	}
	return out
}

// CheckFailures checks that the on-failure destination holds each poison record alone and
// nothing else: no record behind a poison record was discarded with it.
func CheckFailures(frs []esm.FailureRecord, poison map[string]string) []string {
	return checkFailures(frs, poison, nil)
}

// checkFailures is CheckFailures naming the item of a record touched names.
func checkFailures(frs []esm.FailureRecord, poison, touched map[string]string) []string {
	var out []string
	got := map[string]bool{}
	for _, fr := range frs {
		info := fr.DDBStreamBatchInfo
		if _, ok := poison[info.StartSequenceNumber]; !ok || info.BatchSize != 1 || info.EndSequenceNumber != info.StartSequenceNumber {
			msg := fmt.Sprintf("on-failure: batch %s..%s (%d records, %s) is not one poison record",
				info.StartSequenceNumber, info.EndSequenceNumber, info.BatchSize, fr.RequestContext.Condition)
			if item, ok := touched[info.StartSequenceNumber]; ok {
				msg += ": its first record is of " + item
			}
			out = append(out, msg)
			continue
		}
		got[info.StartSequenceNumber] = true
	}
	var missing []string
	for seq := range poison {
		if !got[seq] {
			missing = append(missing, seq+" ("+poison[seq]+")")
		}
	}
	sort.Strings(missing)
	for _, s := range missing {
		out = append(out, "on-failure: poison record "+s+" is not in the destination")
	}
	return out
}

// ReadFailures reads the on-failure records of dir.
func ReadFailures(dir string) ([]esm.FailureRecord, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []esm.FailureRecord
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var fr esm.FailureRecord
		if err := json.Unmarshal(b, &fr); err != nil {
			return nil, fmt.Errorf("reading on-failure record %s: %w", p, err)
		}
		out = append(out, fr)
	}
	return out, nil
}

// Scan reads the whole table with strongly consistent reads.
func Scan(ctx context.Context, db *dynamodb.Client, table string) (map[Key]record.Item, error) {
	out := map[Key]record.Item{}
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scanning %s: %w", table, err)
		}
		for _, it := range page.Items {
			out[keyOf(it)] = it
		}
	}
	return out, nil
}

// WriteSummary writes the run's figures.
func (r *Result) WriteSummary(w io.Writer) {
	drift, problems := int64(-1), int64(-1)
	if r.Verify != nil {
		drift, problems = r.Verify.Drift, r.Verify.Problems
	}
	f, mp, in := r.Function, r.Mapping, r.Injected
	fmt.Fprintf(w, "operations            %d (%d chaos rounds, %d TTL expiries)\n", r.Ops, r.Rounds, r.Expiries)
	fmt.Fprintf(w, "stream records        %d read, %d filtered out; %d batches, %d invocations (%d retries, %d bisects); mapping re-created at TRIM_HORIZON %d time(s)\n",
		mp.Records, mp.Filtered, mp.Batches, mp.Invocations, mp.Retries, mp.Bisects, r.Replays)
	fmt.Fprintf(w, "function              %d records handled, %d writes, %.0f WCU, %d duplicates skipped, %d client retries, %d fan-out pages\n",
		f.Records, f.Writes, f.WCU, f.DuplicatesSkipped, f.Retries, f.FanOutPages)
	fmt.Fprintf(w, "faults injected       %d throttles, %d conflicts, %d crashes (%d lost writes), %d short deadlines (%d overran), %d lost responses, %d TTL records, %d poison records\n",
		in.Throttles, in.Conflicts, in.Crashes, in.LostWrites, in.Timeouts, in.TimedOut, in.LostResponses, in.TTLRecords, in.Poisoned)
	if in.Application.Total() > 0 {
		fmt.Fprintf(w, "application writes    %s; %d re-puts carried Denorm's attributes read earlier\n", in.Application, in.StaleDenorm)
		fmt.Fprintf(w, "counter copies        %d written; %d targets the application wrote refreshed from their state\n",
			f.CopiesWritten, f.TargetsRefreshed)
	}
	fmt.Fprintf(w, "failed invocations    %d (function errors and batch item failures)\n", mp.Failures)
	fmt.Fprintf(w, "on-failure            %d records in %d files (%d poison records expected)\n", mp.OnFailure, len(r.Failures), r.PoisonExpected)
	fmt.Fprintf(w, "duration              %s (writing %s, draining after the last write %s)\n",
		r.Duration.Round(time.Second), r.WriteDuration.Round(time.Second), r.DrainDuration.Round(time.Second))
	fmt.Fprintf(w, "table                 %d items\n", r.Items)
	fmt.Fprintf(w, "verify                drift %d, problems %d\n", drift, problems)
	if r.OracleReported {
		fmt.Fprintf(w, "oracle                %d mismatches (reported: application writes can lose to Denorm's in another Region)\n", len(r.Oracle))
	} else {
		fmt.Fprintf(w, "oracle                %d mismatches\n", len(r.Oracle))
	}
	if m := r.Move; m != nil {
		// A step's drift is what its first run found; what is left, its last run's.
		step := func(runs ...*ops.Report) string {
			if len(runs) == 0 || runs[0] == nil {
				return "not run"
			}
			last := runs[len(runs)-1]
			s := fmt.Sprintf("drift %d, unrepaired %d, problems %d", runs[0].Drift, last.Unrepaired, last.Problems)
			if len(runs) > 1 {
				s += fmt.Sprintf(" (after %d runs)", len(runs))
			}
			return s
		}
		fmt.Fprintf(w, "moved                 backfill in the new processing Region: %s; the first Region's processor back: %d invocations, %d records skipped (stream retired), %d writes; verify --repair after: %s\n",
			step(m.Backfill), m.Comeback.Invocations, m.Comeback.SkippedRecords, m.Comeback.Writes, step(m.Repairs...))
	}
	for _, e := range r.Evidence {
		fmt.Fprintf(w, "drifted counter       %s\n", e)
	}
	if r.ReplicaVerify != nil {
		rs := r.Replication
		fmt.Fprintf(w, "replica               %d local writes read, %d replicated (%d held while the Region was cut off), %d conflicts (last writer wins), %d repairs; drift %d, problems %d; %d items differ\n",
			rs.Local, rs.Replicated, rs.Held, rs.Conflicts, rs.Repairs, r.ReplicaVerify.Drift, r.ReplicaVerify.Problems, len(r.ReplicaDiffs))
	}
}

// emfSink adds up the handler's Embedded Metric Format lines.
type emfSink struct {
	mu sync.Mutex
	s  FunctionStats
}

func (e *emfSink) Write(p []byte) (int, error) {
	var line struct {
		Records, Effects, Writes, DuplicatesSkipped, Retries, Failures, FanOutPages int64
		CopiesWritten, TargetsRefreshed                                             int64
		ConsumedWCU                                                                 float64
		RecordsOfOtherStreams                                                       int64
	}
	if json.Unmarshal(p, &line) == nil {
		e.mu.Lock()
		e.s.Invocations++
		e.s.Records += line.Records
		e.s.Effects += line.Effects
		e.s.Writes += line.Writes
		e.s.DuplicatesSkipped += line.DuplicatesSkipped
		e.s.Retries += line.Retries
		e.s.Failures += line.Failures
		e.s.FanOutPages += line.FanOutPages
		e.s.WCU += line.ConsumedWCU
		e.s.CopiesWritten += line.CopiesWritten
		e.s.TargetsRefreshed += line.TargetsRefreshed
		e.s.SkippedRecords += line.RecordsOfOtherStreams
		e.mu.Unlock()
	}
	return len(p), nil
}

func (e *emfSink) stats() FunctionStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.s
}
