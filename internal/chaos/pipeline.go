package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/processor"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/streamclient"
)

// PipelineConfig is local.Config with the seams fault injection needs: the executor's
// DynamoDB client and the invoker can be wrapped. (local.Start builds both itself.)
type PipelineConfig struct {
	Endpoint  string
	Table     string // created when missing; the caller deletes it
	RulesPath string
	// Mapping holds the event source mapping settings; StreamARN and, when empty,
	// FilterCriteria are filled in.
	Mapping esm.Config
	Apply   apply.Options
	// WrapAPI wraps the executor's DynamoDB client (nil: the client itself).
	WrapAPI func(apply.API) apply.API
	// WrapInvoker wraps the in-process function (nil: the function itself).
	WrapInvoker func(esm.Invoker) esm.Invoker
	// Metrics receives the handler's EMF lines.
	Metrics io.Writer
	Logger  *slog.Logger
}

// Pipeline is a running table + event source mapping + handler.
type Pipeline struct {
	DB        *dynamodb.Client
	Table     string
	StreamARN string
	Region    string
	Set       *rules.Set
	File      *rules.File
	Mapping   *esm.Mapping
	stop      context.CancelFunc
	done      chan error
	// What Replay needs to start the mapping again, and the counters of the mappings it
	// replaced.
	streams esm.StreamsAPI
	inv     esm.Invoker
	mc      esm.Config
	before  esm.Stats
	replays int
}

// StartPipeline provisions the table and runs the mapping in the background.
func StartPipeline(ctx context.Context, cfg PipelineConfig) (*Pipeline, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	file, err := rules.Load(cfg.RulesPath)
	if err != nil {
		return nil, err
	}
	set, err := rules.Compile(file)
	if err != nil {
		return nil, err
	}
	awsCfg, err := awsconf.Load(ctx, cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	db, streams := awsconf.DynamoDB(awsCfg, true), streamclient.New(awsCfg, true)
	desc, err := provision.Ensure(ctx, db, cfg.Table, set.Table)
	if err != nil {
		return nil, err
	}
	var api apply.API = db
	if cfg.WrapAPI != nil {
		api = cfg.WrapAPI(db)
	}
	h := processor.New(api, cfg.Table, set, processor.Options{Logger: cfg.Logger, Metrics: cfg.Metrics, Apply: cfg.Apply})
	var inv esm.Invoker = lambda.NewHandler(h.Handle)
	if cfg.WrapInvoker != nil {
		inv = cfg.WrapInvoker(inv)
	}
	mc := cfg.Mapping
	mc.StreamARN = aws.ToString(desc.LatestStreamArn)
	if mc.Logger == nil {
		mc.Logger = cfg.Logger
	}
	if mc.FilterCriteria == nil {
		if mc.FilterCriteria, err = set.FilterPatterns(); err != nil {
			return nil, err
		}
	}
	if mc.PollInterval == 0 {
		mc.PollInterval = 20 * time.Millisecond
	}
	m, err := esm.New(streams, inv, mc)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	p := &Pipeline{DB: db, Table: cfg.Table, StreamARN: mc.StreamARN, Region: awsCfg.Region, Set: set, File: file,
		Mapping: m, stop: stop, done: make(chan error, 1), streams: streams, inv: inv, mc: mc}
	go func() { p.done <- m.Run(runCtx) }()
	return p, nil
}

// Replay stops the mapping and starts a new one at TRIM_HORIZON without a checkpoint, as
// when the event source mapping is deleted and created again (a redeploy that replaces
// it): every record the stream holds is delivered again.
func (p *Pipeline) Replay() error {
	if err := p.Close(); err != nil {
		return err
	}
	p.before = addStats(p.before, p.Mapping.Stats())
	mc := p.mc
	mc.CheckpointFile, mc.StartingPosition = "", esm.TrimHorizon
	m, err := esm.New(p.streams, p.inv, mc)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(context.Background())
	p.Mapping, p.stop, p.done = m, stop, make(chan error, 1)
	p.replays++
	go func() { p.done <- m.Run(runCtx) }()
	return nil
}

// Stats adds up the counters of every mapping the pipeline ran.
func (p *Pipeline) Stats() esm.Stats { return addStats(p.before, p.Mapping.Stats()) }

// Replays is how many times Replay started the mapping again.
func (p *Pipeline) Replays() int { return p.replays }

func addStats(a, b esm.Stats) esm.Stats {
	return esm.Stats{Batches: a.Batches + b.Batches, Records: a.Records + b.Records, Invocations: a.Invocations + b.Invocations,
		Failures: a.Failures + b.Failures, Retries: a.Retries + b.Retries, Bisects: a.Bisects + b.Bisects,
		OnFailure: a.OnFailure + b.OnFailure, Filtered: a.Filtered + b.Filtered}
}

// Drain waits until the stream is processed and quiet for idle, or timeout passes.
func (p *Pipeline) Drain(ctx context.Context, idle, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.Mapping.Drain(ctx, idle); err != nil {
		return fmt.Errorf("draining the stream: %w", err)
	}
	return nil
}

// Close stops the mapping (it saves its checkpoint) and reports how Run ended.
func (p *Pipeline) Close() error {
	if p.stop == nil {
		return nil
	}
	p.stop()
	p.stop = nil
	if err := <-p.done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
