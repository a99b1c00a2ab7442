// Package local runs Denorm's whole pipeline on one machine: the table (created from the
// rules file), the event source mapping emulator over its stream, and the stream
// processor, in process or as the real bootstrap binary behind a local Runtime API.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/processor"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/runtimeapi"
	"github.com/denorm/denorm/internal/streamclient"
)

// Config describes a local pipeline.
type Config struct {
	RulesPath string
	Endpoint  string // DynamoDB endpoint (DynamoDB Local)
	Table     string // created when missing; the caller deletes it
	// Bootstrap is the path of a built stream processor (dist/streamproc/bootstrap built for
	// this machine's OS and architecture); empty runs the handler in process.
	Bootstrap string
	// Mapping holds the event source mapping settings; StreamARN and, when empty,
	// FilterCriteria are filled in.
	Mapping esm.Config
	// Apply tunes the in-process executor.
	Apply apply.Options
	// Metrics receives the in-process handler's EMF lines (nil: none).
	Metrics io.Writer
	// WrapAPI wraps the in-process executor's DynamoDB client, to inject faults (nil: the
	// client itself).
	WrapAPI func(apply.API) apply.API
	// WrapInvoker wraps the function as the mapping invokes it (nil: the function itself).
	WrapInvoker func(esm.Invoker) esm.Invoker
	Logger      *slog.Logger
}

// Pipeline is a running local pipeline.
type Pipeline struct {
	File      *rules.File
	Set       *rules.Set
	DB        *dynamodb.Client
	Streams   *dynamodbstreams.Client
	Table     string
	StreamARN string
	Mapping   *esm.Mapping
	fn        *runtimeapi.Function
	inv       esm.Invoker
	mc        esm.Config
	cancel    context.CancelFunc
	done      chan error
	before    esm.Stats // the counters of the mappings Replay replaced
}

// Start creates the table if needed and starts the mapping in the background.
func Start(ctx context.Context, cfg Config) (*Pipeline, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
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
	db, streams := awsconf.DynamoDB(awsCfg, cfg.Endpoint != ""), streamclient.New(awsCfg, cfg.Endpoint != "")
	desc, err := provision.Ensure(ctx, db, cfg.Table, set.Table)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{File: file, Set: set, DB: db, Streams: streams, Table: cfg.Table, StreamARN: aws.ToString(desc.LatestStreamArn)}
	if cfg.Bootstrap != "" {
		rulesAbs, err := filepath.Abs(cfg.RulesPath)
		if err != nil {
			return nil, err
		}
		p.fn, err = runtimeapi.Start(ctx, runtimeapi.Config{
			BinaryPath: cfg.Bootstrap,
			Env: append(os.Environ(), "DENORM_TABLE="+cfg.Table, "DENORM_RULES="+rulesAbs,
				"DENORM_ENDPOINT="+cfg.Endpoint, "AWS_REGION="+awsCfg.Region),
			Timeout: 60 * time.Second,
			Logger:  cfg.Logger,
		})
		if err != nil {
			return nil, fmt.Errorf("starting %s: %w", cfg.Bootstrap, err)
		}
		p.inv = p.fn
	} else {
		var api apply.API = db
		if cfg.WrapAPI != nil {
			api = cfg.WrapAPI(db)
		}
		h := processor.New(api, cfg.Table, set, processor.Options{Logger: cfg.Logger, Metrics: cfg.Metrics, Apply: cfg.Apply})
		p.inv = lambda.NewHandler(h.Handle)
	}
	if cfg.WrapInvoker != nil {
		p.inv = cfg.WrapInvoker(p.inv)
	}
	p.mc = cfg.Mapping
	p.mc.StreamARN = p.StreamARN
	if p.mc.Logger == nil {
		p.mc.Logger = cfg.Logger
	}
	if p.mc.FilterCriteria == nil {
		if p.mc.FilterCriteria, err = set.FilterPatterns(); err != nil {
			p.Close()
			return nil, err
		}
	}
	if err := p.run(ctx, p.mc); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// run starts a mapping with mc in the background, once it has started (or ctx ends).
func (p *Pipeline) run(ctx context.Context, mc esm.Config) error {
	m, err := esm.New(p.Streams, p.inv, mc)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p.Mapping, p.cancel, p.done = m, cancel, make(chan error, 1)
	go func() { p.done <- m.Run(runCtx) }()
	// A mapping that cannot start (its checkpoint held by another run, no stream) fails
	// Start at once, rather than leaving the caller waiting on a run that never began.
	select {
	case <-m.Started():
		return nil
	case <-ctx.Done(): // Start given up on, while the mapping still tried to start
		cancel()
		p.cancel = nil
		<-p.done
		return ctx.Err()
	case err := <-p.done:
		cancel()
		p.cancel = nil
		if err == nil {
			err = errors.New("the event source mapping stopped as it started")
		}
		return err
	}
}

// Replay stops the mapping and starts a new one at TRIM_HORIZON without a checkpoint, as
// when the event source mapping is deleted and created again (a redeploy that replaces
// it): every record the stream holds is delivered again.
func (p *Pipeline) Replay() error {
	if err := p.stop(); err != nil {
		return err
	}
	p.before = addStats(p.before, p.Mapping.Stats())
	mc := p.mc
	mc.CheckpointFile, mc.StartingPosition = "", esm.TrimHorizon
	return p.run(context.Background(), mc)
}

// Stats adds up the counters of every mapping the pipeline ran.
func (p *Pipeline) Stats() esm.Stats { return addStats(p.before, p.Mapping.Stats()) }

func addStats(a, b esm.Stats) esm.Stats {
	return esm.Stats{Batches: a.Batches + b.Batches, Records: a.Records + b.Records, Invocations: a.Invocations + b.Invocations,
		Failures: a.Failures + b.Failures, Retries: a.Retries + b.Retries, Bisects: a.Bisects + b.Bisects,
		OnFailure: a.OnFailure + b.OnFailure, Filtered: a.Filtered + b.Filtered}
}

// Drain waits until the stream has been processed and nothing new arrived for idle.
func (p *Pipeline) Drain(ctx context.Context, idle time.Duration) error {
	return p.Mapping.Drain(ctx, idle)
}

// Close stops the mapping (saving its checkpoint) and the function.
func (p *Pipeline) Close() error {
	err := p.stop()
	if p.fn != nil {
		p.fn.Close()
		p.fn = nil
	}
	return err
}

// stop stops the mapping and reports how its Run ended.
func (p *Pipeline) stop() error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.cancel = nil
	if err := <-p.done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
