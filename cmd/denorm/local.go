package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/denorm/denorm/internal/ddblocal"
	"github.com/denorm/denorm/internal/deployed"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
)

func init() {
	register(command{name: "local", summary: "run the stream processor on DynamoDB Local through the event source mapping emulator", run: runLocal})
}

// mappingFlags are the event source mapping settings, named as the ESM names them.
type mappingFlags struct {
	batchSize, retries       int
	window, maxAge           time.Duration
	bisect, reportFailures   bool
	onFailureDir, checkpoint string
	startingPosition         string
}

func (m *mappingFlags) register(fs *flag.FlagSet) {
	// The defaults are what the CDK construct deploys.
	fs.IntVar(&m.batchSize, "batch-size", deployed.BatchSize, "BatchSize: records per invocation (1-10000)")
	fs.DurationVar(&m.window, "maximum-batching-window", deployed.MaxBatchingWindow, "MaximumBatchingWindow: wait up to this long to fill a batch")
	fs.IntVar(&m.retries, "maximum-retry-attempts", deployed.RetryAttempts, "MaximumRetryAttempts (-1 = until the record expires)")
	fs.BoolVar(&m.bisect, "bisect-batch-on-function-error", true, "BisectBatchOnFunctionError: split a failing batch in halves")
	fs.DurationVar(&m.maxAge, "maximum-record-age", deployed.MaxRecordAge, "MaximumRecordAge (0 = unlimited)")
	fs.BoolVar(&m.reportFailures, "report-batch-item-failures", true, "FunctionResponseTypes ReportBatchItemFailures")
	fs.StringVar(&m.onFailureDir, "on-failure-dir", ".cache/local/failures", "on-failure destination: a folder of DDBStreamBatchInfo JSON files")
	fs.StringVar(&m.checkpoint, "checkpoint", "", "per-shard checkpoint file (default .cache/local/<table>.checkpoint.json)")
	fs.StringVar(&m.startingPosition, "starting-position", "TRIM_HORIZON", "StartingPosition: TRIM_HORIZON or LATEST")
}

func (m *mappingFlags) config(table string) esm.Config {
	cp := m.checkpoint
	if cp == "" {
		cp = filepath.Join(".cache", "local", table+".checkpoint.json")
	}
	return esm.Config{
		StartingPosition: esm.StartingPosition(strings.ToUpper(m.startingPosition)),
		BatchSize:        m.batchSize, MaximumBatchingWindow: m.window,
		MaximumRetryAttempts: esm.Int(m.retries), BisectBatchOnFunctionError: m.bisect,
		MaximumRecordAge: m.maxAge, ReportBatchItemFailures: m.reportFailures,
		OnFailureDir: m.onFailureDir, CheckpointFile: cp,
	}
}

func runLocal(ctx context.Context, args []string) error {
	fs := newFlags("local", "(FILE | --rules FILE) [--endpoint URL] [--table NAME] [--bootstrap PATH] [mapping flags]")
	rulesFlag := fs.String("rules", "", "rules file (or give it as the argument FILE)")
	endpoint := fs.String("endpoint", os.Getenv("DENORM_DYNAMODB_ENDPOINT"), "DynamoDB endpoint; empty starts DynamoDB Local (scripts/dynamodb-local.sh)")
	table := fs.String("table", "denorm-local", "table name (created from the rules file's table section if missing)")
	bootstrap := fs.String("bootstrap", "", "run this built stream processor binary behind a local Lambda Runtime API instead of in process")
	var mf mappingFlags
	mf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	rulesPath, err := rulesArg(fs, *rulesFlag, pos, "")
	if err != nil {
		return err
	}
	if err := tableArg(fs, *table); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ep, stop, err := ensureEndpoint(ctx, *endpoint)
	if err != nil {
		return err
	}
	defer stop()
	p, err := local.Start(ctx, local.Config{RulesPath: rulesPath, Endpoint: ep, Table: *table, Bootstrap: *bootstrap,
		Mapping: mf.config(*table), Logger: log})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "denorm local: table %s on %s, stream %s; Ctrl-C to stop\n", *table, ep, p.StreamARN)
	<-ctx.Done()
	err = p.Close()
	st := p.Mapping.Stats()
	fmt.Fprintf(os.Stderr, "denorm local: stopped after %d batches, %d records, %d failures, %d sent to %s\n",
		st.Batches, st.Records, st.Failures, st.OnFailure, mf.onFailureDir)
	return err
}

// ensureEndpoint returns endpoint, or starts DynamoDB Local with the repository's script
// and returns its URL and a function that stops it.
func ensureEndpoint(ctx context.Context, endpoint string) (string, func(), error) {
	if endpoint != "" {
		return endpoint, func() {}, nil
	}
	return ddblocal.Start(ctx, ddblocal.Script)
}
