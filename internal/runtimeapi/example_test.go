package runtimeapi_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/runtimeapi"
)

// The compiled bootstrap binary consumes a stream through the event source mapping emulator.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	fn, err := runtimeapi.Start(ctx, runtimeapi.Config{
		BinaryPath: "dist/streamproc/bootstrap",
		Env:        append(os.Environ(), "TABLE_NAME=app"), // nothing is inherited otherwise
		Timeout:    30 * time.Second,
		MemoryMB:   512,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer fn.Close()

	var streams *dynamodbstreams.Client // streamclient.New(cfg, true) for DynamoDB Local
	m, err := esm.New(streams, fn, esm.Config{
		StreamARN:               "arn:aws:dynamodb:ddblocal:000000000000:table/app/stream/2024-01-01T00:00:00.000",
		ReportBatchItemFailures: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
