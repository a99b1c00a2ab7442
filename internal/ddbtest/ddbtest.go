// Package ddbtest connects integration tests to the DynamoDB Local that `make test` starts
// once per run (DENORM_DYNAMODB_ENDPOINT). Without it the tests skip and say how to run them.
package ddbtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/streamclient"
	"github.com/denorm/denorm/internal/table"
)

// EnvEndpoint names the environment variable holding the DynamoDB Local URL.
const EnvEndpoint = "DENORM_DYNAMODB_ENDPOINT"

// Endpoint returns the emulator's URL or skips the test with instructions.
func Endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv(EnvEndpoint)
	if ep == "" {
		t.Skipf("integration test: %s is not set; run `make test`, or `scripts/dynamodb-local.sh run -- go test ./...`", EnvEndpoint)
	}
	return ep
}

// Config returns an SDK configuration for the emulator.
func Config(t testing.TB) aws.Config {
	t.Helper()
	cfg, err := awsconf.Load(context.Background(), Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Clients returns DynamoDB and DynamoDB Streams clients for the emulator.
func Clients(t testing.TB) (*dynamodb.Client, *dynamodbstreams.Client) {
	cfg := Config(t)
	return awsconf.DynamoDB(cfg, true), streamclient.New(cfg, true)
}

var seq atomic.Int64

// TableName returns a name no other test of this run uses.
func TableName(t testing.TB) string {
	// Table names allow [A-Za-z0-9_.-]; test and subtest names may hold anything.
	name := strings.Map(func(r rune) rune {
		if r == '_' || r == '.' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, t.Name())
	if len(name) > 150 {
		name = name[:150]
	}
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano()%1e9, seq.Add(1))
}

// NewTable creates a table from spec with a unique name and deletes it when the test ends.
func NewTable(t testing.TB, db *dynamodb.Client, spec table.Spec) (string, *types.TableDescription) {
	t.Helper()
	name := TableName(t)
	ctx := context.Background()
	desc, err := provision.Ensure(ctx, db, name, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := provision.Delete(context.Background(), db, name); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return name, desc
}

// NewRawTable creates a table from in, under a unique name that replaces in.TableName, and
// enables TTL on ttlAttribute unless it is empty; the table is deleted when the test ends.
// It is for tables Denorm would not create (no stream, other keys), which provision refuses.
func NewRawTable(t testing.TB, db *dynamodb.Client, in *dynamodb.CreateTableInput, ttlAttribute string) string {
	t.Helper()
	name := TableName(t)
	in.TableName = aws.String(name)
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, in); err != nil {
		t.Fatalf("creating table %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := provision.Delete(context.Background(), db, name); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		t.Fatalf("waiting for table %s: %v", name, err)
	}
	if ttlAttribute != "" {
		_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(ttlAttribute), Enabled: aws.Bool(true)}})
		if err != nil {
			t.Fatalf("enabling TTL on %s: %v", name, err)
		}
	}
	return name
}
