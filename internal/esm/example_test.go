package esm_test

import (
	"context"
	"log"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/denorm/denorm/internal/esm"
)

// A handler runs in process against a table's stream, with the options Denorm deploys.
func Example() {
	var streams *dynamodbstreams.Client // streamclient.New(cfg, true) for DynamoDB Local
	handler := func(ctx context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, nil
	}
	m, err := esm.New(streams, lambda.NewHandler(handler), esm.Config{
		StreamARN:                  "arn:aws:dynamodb:ddblocal:000000000000:table/app/stream/2024-01-01T00:00:00.000",
		BatchSize:                  100,
		BisectBatchOnFunctionError: true,
		MaximumRetryAttempts:       esm.Int(10),
		ReportBatchItemFailures:    true,
		FilterCriteria:             []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"anything-but":{"prefix":"_dn"}}]}}}}`},
		OnFailureDir:               ".denorm/failures",
		CheckpointFile:             ".denorm/checkpoint.json",
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	// ... write items, then wait until their records (and the writes they cause) are processed:
	if err := m.Drain(ctx, 200*time.Millisecond); err != nil {
		log.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	log.Printf("%+v", m.Stats())
}
