package esm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/table"
)

// stack is one test's table and clients on DynamoDB Local.
type stack struct {
	t       *testing.T
	db      *dynamodb.Client
	streams *dynamodbstreams.Client
	table   string
	arn     string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	db, streams := ddbtest.Clients(t)
	name, desc := ddbtest.NewTable(t, db, table.Spec{PartitionKey: "pk", SortKey: "sk"})
	return &stack{t: t, db: db, streams: streams, table: name, arn: aws.ToString(desc.LatestStreamArn)}
}

// put writes one item per pk, in order.
func (s *stack) put(pks ...string) {
	s.t.Helper()
	for _, pk := range pks {
		_, err := s.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &s.table, Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "x"},
		}})
		if err != nil {
			s.t.Fatal(err)
		}
	}
}

// items returns pk prefix#0 .. prefix#n-1.
func items(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s#%02d", prefix, i)
	}
	return out
}

// fastConfig is a mapping that polls often and retries at once: the tests share 2 CPUs,
// DynamoDB Local answers in milliseconds.
func (s *stack) fastConfig() Config {
	return Config{
		StreamARN: s.arn, PollInterval: 20 * time.Millisecond, RetryBackoff: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(s.t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// recorder is an in-process function that remembers every event it was invoked with and
// lets the test decide each outcome.
type recorder struct {
	mu    sync.Mutex
	calls []call
	// decide returns the response for the n-th call (0-based); nil means success.
	decide func(n int, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
}

type call struct {
	pks  []string
	seqs []string
	err  error
	resp events.DynamoDBEventResponse
}

func (r *recorder) handler() lambda.Handler {
	return lambda.NewHandler(func(ctx context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		c := call{}
		for _, rec := range e.Records {
			c.pks = append(c.pks, rec.Change.Keys["pk"].String())
			c.seqs = append(c.seqs, rec.Change.SequenceNumber)
		}
		if r.decide != nil {
			c.resp, c.err = r.decide(len(r.calls), e)
		}
		r.calls = append(r.calls, c)
		return c.resp, c.err
	})
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// processed returns the pks of successful calls, in call order, with the records a partial
// failure left unprocessed removed.
func (r *recorder) processed() []string {
	var out []string
	for _, c := range r.snapshot() {
		if c.err != nil {
			continue
		}
		done := len(c.pks)
		for _, f := range c.resp.BatchItemFailures {
			if i := slices.Index(c.seqs, f.ItemIdentifier); i >= 0 && i < done {
				done = i
			}
		}
		out = append(out, c.pks[:done]...)
	}
	return out
}

// start runs a mapping until the test ends and checks it stopped cleanly.
func start(t *testing.T, api StreamsAPI, inv Invoker, cfg Config) *Mapping {
	t.Helper()
	m, err := New(api, inv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, m)
	t.Cleanup(stop)
	return m
}

// run starts m.Run and returns a func that cancels it and waits for it.
func run(t *testing.T, m *Mapping) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

// drain waits until the mapping has processed everything written so far.
func drain(t *testing.T, m *Mapping) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Drain(ctx, 100*time.Millisecond); err != nil {
		t.Fatalf("Drain: %v (stats %+v)", err, m.Stats())
	}
}

// failureRecords reads the on-failure records in dir, oldest first.
func failureRecords(t *testing.T, dir string) []FailureRecord {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var out []FailureRecord
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var fr FailureRecord
		if err := json.Unmarshal(b, &fr); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out = append(out, fr)
	}
	return out
}

var errPoison = errors.New("poison record")
