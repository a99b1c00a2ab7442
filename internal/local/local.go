// Package local runs Denorm's whole pipeline on one machine: the table (created from the
// rules file), the event source mapping emulator over its stream, and the stream
// processor, in process or as the real bootstrap binary behind a local Runtime API.
package local

import (
	"context"
	"errors"
	"fmt"
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
	Table     string
	// Bootstrap is the path of a built stream processor (dist/streamproc/bootstrap built for
	// this machine's OS and architecture); empty runs the handler in process.
	Bootstrap string
	// Mapping holds the event source mapping settings; StreamARN is filled in.
	Mapping esm.Config
	// Apply tunes the in-process executor.
	Apply  apply.Options
	Logger *slog.Logger
}

// Pipeline is a running local pipeline.
type Pipeline struct {
	Set       *rules.Set
	DB        *dynamodb.Client
	Streams   *dynamodbstreams.Client
	Table     string
	StreamARN string
	Mapping   *esm.Mapping
	fn        *runtimeapi.Function
	cancel    context.CancelFunc
	done      chan error
}

// Start creates the table if needed and starts the mapping in the background.
func Start(ctx context.Context, cfg Config) (*Pipeline, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	set, err := rules.LoadSet(cfg.RulesPath)
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
	p := &Pipeline{Set: set, DB: db, Streams: streams, Table: cfg.Table, StreamARN: aws.ToString(desc.LatestStreamArn)}
	var inv esm.Invoker
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
		inv = p.fn
	} else {
		inv = lambda.NewHandler(processor.New(db, cfg.Table, set, processor.Options{Logger: cfg.Logger, Apply: cfg.Apply}).Handle)
	}
	mc := cfg.Mapping
	mc.StreamARN = p.StreamARN
	if mc.Logger == nil {
		mc.Logger = cfg.Logger
	}
	if mc.FilterCriteria == nil {
		if mc.FilterCriteria, err = set.FilterPatterns(); err != nil {
			p.Close()
			return nil, err
		}
	}
	p.Mapping, err = esm.New(streams, inv, mc)
	if err != nil {
		p.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.done = make(chan error, 1)
	go func() { p.done <- p.Mapping.Run(runCtx) }()
	return p, nil
}

// Drain waits until the stream has been processed and nothing new arrived for idle.
func (p *Pipeline) Drain(ctx context.Context, idle time.Duration) error {
	return p.Mapping.Drain(ctx, idle)
}

// Close stops the mapping (saving its checkpoint) and the function.
func (p *Pipeline) Close() error {
	var err error
	if p.cancel != nil {
		p.cancel()
		if e := <-p.done; e != nil && !errors.Is(e, context.Canceled) {
			err = e
		}
		p.cancel = nil
	}
	if p.fn != nil {
		p.fn.Close()
		p.fn = nil
	}
	return err
}
