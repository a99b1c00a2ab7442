// Command streamproc is Denorm's stream processor Lambda function (provided.al2023). It
// builds the clients and the compiled rules once, then serves DynamoDB stream batches.
//
// Environment:
//
//	DENORM_TABLE     table name (required)
//	DENORM_RULES     rules file, relative to the binary's folder (default rules.yaml)
//	DENORM_ENDPOINT  DynamoDB endpoint override (DynamoDB Local, LocalStack)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/processor"
	"github.com/denorm/denorm/internal/rules"
)

func main() {
	log := slog.New(lambdacontext.NewLogHandler())
	h, err := build(context.Background(), log)
	if err != nil {
		// An init error: Lambda reports it and retries the batch; the message says what to fix.
		log.Error("init failed", "error", err)
		fmt.Fprintln(os.Stderr, "denorm streamproc:", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

func build(ctx context.Context, log *slog.Logger) (*handler.Handler, error) {
	table := os.Getenv("DENORM_TABLE")
	if table == "" {
		return nil, fmt.Errorf("DENORM_TABLE is not set")
	}
	path := os.Getenv("DENORM_RULES")
	if path == "" {
		path = "rules.yaml"
	}
	if !filepath.IsAbs(path) {
		exe, err := os.Executable()
		if err == nil {
			path = filepath.Join(filepath.Dir(exe), path)
		}
	}
	set, err := rules.LoadSet(path)
	if err != nil {
		return nil, fmt.Errorf("loading rules %s: %w", path, err)
	}
	endpoint := os.Getenv("DENORM_ENDPOINT")
	cfg, err := awsconf.Load(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	db := awsconf.DynamoDB(cfg, endpoint != "")
	// DENORM_PULL_READS: auto (default), always or never (apply.PullReads).
	pullReads, err := apply.ParsePullReads(os.Getenv("DENORM_PULL_READS"))
	if err != nil {
		return nil, fmt.Errorf("DENORM_PULL_READS: %w", err)
	}
	return processor.New(db, table, set, processor.Options{Logger: log, Metrics: os.Stdout,
		FunctionName: os.Getenv("AWS_LAMBDA_FUNCTION_NAME"), Apply: apply.Options{PullReads: pullReads}}), nil
}
