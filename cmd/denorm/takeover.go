package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/streams"
	"github.com/denorm/denorm/internal/table"
)

func init() {
	register(command{name: "takeover", summary: "move Denorm's processing to this Region's stream of the table (a global table's processing Region moved)", run: runTakeOver})
}

// takeOverAPI is the part of the DynamoDB client takeover uses.
type takeOverAPI interface {
	streams.API
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// runTakeOver makes the table's stream in the configured Region (or --stream) the current
// one of its stream registry, at the next epoch. Exit status 0 when it is current, 1 when
// it cannot be, 2 for bad flags or rules.
func runTakeOver(ctx context.Context, args []string) error {
	fs := newFlags("takeover", "(FILE | --rules FILE) --table NAME [--stream ARN] [--endpoint URL]")
	lt := liveTableFlags(fs)
	stream := fs.String("stream", "", "the stream that takes over (default: the table's latest stream in this Region)")
	f, client, err := lt.open(ctx, fs, args)
	if err != nil {
		return err
	}
	return takeOver(ctx, os.Stdout, client, *lt.table, *stream, f.Table)
}

func takeOver(ctx context.Context, w io.Writer, api takeOverAPI, name, arn string, spec table.Spec) error {
	if arn == "" {
		dt, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("describing table %s: %w", name, err)}
		}
		if arn = aws.ToString(dt.Table.LatestStreamArn); arn == "" {
			return &exitError{code: 1, err: fmt.Errorf("table %s has no stream in this Region: enable its NEW_AND_OLD_IMAGES stream first", name)}
		}
	}
	before, epoch, err := streams.TakeOver(ctx, api, name, spec, arn)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	switch {
	case before != nil && before.Current == arn:
		fmt.Fprintf(w, "stream %s is already the current stream of %s, at epoch %d: nothing written\n", arn, name, epoch)
		return nil
	case before == nil:
		fmt.Fprintf(w, "stream %s is now the current stream of %s, at epoch %d (the table had no stream registry)\n", arn, name, epoch)
	default:
		fmt.Fprintf(w, "stream %s is now the current stream of %s, at epoch %d; %s (epoch %d) is retired, and its processor writes nothing from its next batch\n",
			arn, name, epoch, before.Current, before.Epoch)
	}
	fmt.Fprintf(w, "next: deploy the stack in this Region (if it is not), wait until its IteratorAge is near 0, then run denorm backfill here (docs/processor.md, \"Moving the processing Region\")\n")
	return nil
}
