package runtimeapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/table"
)

// The real binary behind the event source mapping: a record that makes the function panic
// is bisected out to the on-failure destination, the process restarted after every panic,
// and the shard moves on. Needs DynamoDB Local (skips otherwise).
func TestMappingInvokesBinary(t *testing.T) {
	db, streams := ddbtest.Clients(t)
	name, desc := ddbtest.NewTable(t, db, table.Spec{PartitionKey: "pk", SortKey: "sk"})
	for _, pk := range []string{"A#1", "PANIC#2", "A#3", "A#4"} {
		_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &name, Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "x"},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	fn := startEcho(t, Config{Output: &syncBuffer{}, Logger: log})
	dir := t.TempDir()
	m, err := esm.New(streams, fn, esm.Config{
		StreamARN: aws.ToString(desc.LatestStreamArn), PollInterval: 20 * time.Millisecond, RetryBackoff: time.Millisecond,
		BisectBatchOnFunctionError: true, MaximumRetryAttempts: esm.Int(0), OnFailureDir: dir, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	if err := m.Drain(dctx, 100*time.Millisecond); err != nil {
		t.Fatalf("Drain: %v (stats %+v)", err, m.Stats())
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("%d on-failure records, want 1 (stats %+v)", len(files), m.Stats())
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var fr esm.FailureRecord
	if err := json.Unmarshal(b, &fr); err != nil {
		t.Fatal(err)
	}
	if info := fr.DDBStreamBatchInfo; info.BatchSize != 1 || info.StartSequenceNumber != info.EndSequenceNumber {
		t.Errorf("on-failure batch %+v, want the poison record alone", info)
	}
	// [1-4] fails, [1,2] fails, [1] ok, [2] fails once (no retries), [3,4] ok.
	if st := m.Stats(); st.Invocations != 5 || st.Bisects != 2 || st.OnFailure != 1 {
		t.Errorf("stats %+v, want 5 invocations, 2 bisects, 1 record on failure", st)
	}
}
