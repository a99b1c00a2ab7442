package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/denorm/denorm/internal/bench"
	"github.com/denorm/denorm/internal/ddblocal"
)

func init() {
	register(command{name: "bench", summary: "records/s per shard, lag, dollars per million writes and write cost: Denorm against a hand-written handler on DynamoDB Local, with AWS latency modelled", run: runBench})
}

func runBench(ctx context.Context, args []string) error {
	fs := newFlags("bench", "[FILE | --rules FILE] [--endpoint URL] [--workloads a,b] [--reps N] [--size full|smoke|tiny] [--batch-size N] [--latency default|none|SPEC] [--rate N] [--batching-window D] [--out DIR]")
	endpoint := fs.String("endpoint", os.Getenv("DENORM_DYNAMODB_ENDPOINT"), "DynamoDB Local endpoint; empty starts one")
	rulesFlag := fs.String("rules", "", "the social example's rules file, or the argument FILE (default "+exampleRules+"; workloads use subsets of it)")
	workloads := fs.String("workloads", "", "comma-separated workloads (default all: comment-storm, posts-per-user, membership-churn, rename, social-mix, hot-target, daily-buckets, latest-n, large-files, distinct-roles, daily-top-files)")
	reps := fs.Int("reps", 2, "runs per system and workload (Denorm and the baseline alternate)")
	size := fs.String("size", "full", "full (what docs/benchmarks.md reports), smoke (a few minutes) or tiny (seconds, for tests)")
	seed := fs.Uint64("seed", 1, "workload seed")
	batch := fs.Int("batch-size", 100, "records per batch, the same for both systems (the CDK stack deploys 200)")
	ceiling := fs.Duration("ceiling", 3*time.Second, "duration of each raw ceiling measurement (0 skips it)")
	out := fs.String("out", "", "directory for bench.json and bench.md (default: print the tables only); tools/benchplot draws bench.png from bench.json")
	keep := fs.Bool("keep-tables", false, "keep the benchmark tables (default: delete each after its run)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	perRun := fs.Bool("emulator-per-run", true, "start a fresh DynamoDB Local (scripts/dynamodb-local.sh) for every run and the ceiling, so that no run inherits the items and stream records of the runs before it; false uses --endpoint for all")
	latency := fs.String("latency", "default", "delay of every DynamoDB call the handlers and the mapping make: default (in-region AWS figures, docs/benchmarks.md), none (DynamoDB Local's own speed), or OP=MEDIAN[/P99],... e.g. 'default,Query=8ms/30ms'")
	rate := fs.Float64("rate", 0, "pace every workload's live writes at this many per second (0: each workload's own rate)")
	window := fs.Duration("batching-window", 0, "the mappings' MaximumBatchingWindow (Lambda's default 0; the construct deploys 1s)")
	warm := fs.Duration("warmup", 3*time.Second, "warm each run's emulator with each request shape this long first (0: none)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	rulesPath, err := rulesArg(fs, *rulesFlag, pos, exampleRules)
	if err != nil {
		return err
	}
	if *batch < 1 || *batch > 10000 {
		return fmt.Errorf("--batch-size %d: want 1 to 10000, the range of a DynamoDB event source mapping", *batch)
	}
	model, err := bench.ParseLatency(*latency)
	if err != nil {
		return fmt.Errorf("--latency: %w", err)
	}
	if *rate < 0 || *window < 0 {
		return fmt.Errorf("--rate %v, --batching-window %v: want zero or more", *rate, *window)
	}
	cfg := bench.Config{RulesPath: rulesPath, Reps: *reps, Seed: *seed, BatchSize: *batch, KeepTables: *keep, Progress: os.Stderr,
		Latency: model, LiveRate: *rate, BatchingWindow: *window}
	switch *size {
	case "full":
		cfg.Size = bench.Full
	case "smoke":
		cfg.Size = bench.Smoke
	case "tiny":
		cfg.Size = bench.Tiny
	default:
		return fmt.Errorf("--size %q: want full, smoke or tiny", *size)
	}
	if *workloads != "" {
		cfg.Workloads = strings.Split(*workloads, ",")
	}
	cfg.Ceiling = *ceiling
	if *ceiling == 0 {
		cfg.Ceiling = -1
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cfg.WarmUp = *warm
	if *warm == 0 {
		cfg.WarmUp = -1
	}
	if *perRun {
		if _, err := os.Stat(ddblocal.Script); err != nil {
			return fmt.Errorf("--emulator-per-run needs %s: run from the repository root, or pass --emulator-per-run=false --endpoint URL", ddblocal.Script)
		}
		cfg.Emulator = bench.Fresh{Script: ddblocal.Script}
	} else {
		ep, stop, err := ensureEndpoint(ctx, *endpoint)
		if err != nil {
			return err
		}
		defer stop()
		cfg.Endpoint = ep
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := rep.WriteMarkdown(os.Stdout); err != nil {
		return err
	}
	if *out != "" {
		if err := writeBenchFiles(rep, *out); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: wrote %s\n", filepath.Join(*out, "bench.{json,md}"))
	}
	if !rep.AllVerified {
		return &exitError{code: 1, err: errors.New("a run did not verify clean (see the checks above and verify in bench.json): " +
			"a Denorm run means exactly-once or convergence broke; a baseline run means the comparison is not like for like")}
	}
	return nil
}

func writeBenchFiles(rep *bench.Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(f *os.File) error{
		"bench.json": func(f *os.File) error { return printJSON(f, rep) },
		"bench.md":   func(f *os.File) error { return rep.WriteMarkdown(f) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}
