package esm

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// seen is an in-process function recording the pks it was given, across shards.
type seen struct {
	mu  sync.Mutex
	pks []string
}

func (s *seen) handler() lambda.Handler {
	return lambda.NewHandler(func(e events.DynamoDBEvent) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range e.Records {
			s.pks = append(s.pks, r.Change.Keys["pk"].String())
		}
		return nil
	})
}

func (s *seen) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pks)
}

func fakeConfig(t *testing.T) Config {
	cfg := Config{StreamARN: fakeARN, PollInterval: 5 * time.Millisecond, RetryBackoff: time.Millisecond, BatchSize: 2}
	cfg.Logger = (&stack{t: t}).fastConfig().Logger
	return cfg
}

func drainFake(t *testing.T, m *Mapping) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Drain(ctx, 30*time.Millisecond); err != nil {
		t.Fatalf("Drain: %v (stats %+v)", err, m.Stats())
	}
}

// A child shard starts only after its parent is read to its end, whatever order
// DescribeStream lists them in; unrelated shards run meanwhile; shards found later are
// picked up; an expired or rejected iterator resumes after the last record read.
func TestShardLineage(t *testing.T) {
	now := time.Now()
	f := newFakeStream()
	f.add("child", "parent", now, "child-1", "child-2", "child-3")
	f.add("parent", "", now, "parent-1", "parent-2", "parent-3")
	f.add("other", "", now, "other-1", "other-2")
	f.close("parent")
	f.expire["child"] = 2  // after the first batch
	f.invalid["other"] = 2 // likewise
	s := &seen{}
	m := start(t, f, s.handler(), fakeConfig(t))
	drainFake(t, m)

	// The other lineage splits while the mapping runs.
	f.add("other", "", now, "other-3")
	f.close("other")
	f.add("grandchild", "other", now, "grandchild-1")
	drainFake(t, m)

	got := s.get()
	before := func(a, b string) bool { return slices.Index(got, a) < slices.Index(got, b) }
	for _, pk := range []string{"parent-1", "parent-2", "parent-3", "child-1", "child-2", "child-3", "other-1", "other-2", "other-3", "grandchild-1"} {
		if n := count(got, pk); n != 1 {
			t.Errorf("%s delivered %d times, want once: %v", pk, n, got)
		}
	}
	for _, pair := range [][2]string{
		{"parent-1", "parent-2"}, {"parent-2", "parent-3"}, {"parent-3", "child-1"}, {"child-1", "child-2"},
		{"child-2", "child-3"}, {"other-2", "other-3"}, {"other-3", "grandchild-1"},
	} {
		if !before(pair[0], pair[1]) {
			t.Errorf("%s after %s: %v", pair[0], pair[1], got)
		}
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// LATEST without checkpoint skips closed shards and what open shards hold; a restart with
// the checkpoint does not go back to them.
func TestStartingPositionLatest(t *testing.T) {
	now := time.Now()
	f := newFakeStream()
	f.add("old", "", now, "old-1")
	f.close("old")
	f.add("live", "old", now, "live-1")
	cfg := fakeConfig(t)
	cfg.StartingPosition = Latest
	cfg.CheckpointFile = filepath.Join(t.TempDir(), "ckpt.json")
	s := &seen{}
	m, err := New(f, s.handler(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, m)
	drainFake(t, m)
	f.add("live", "", now, "live-2")
	drainFake(t, m)
	stop()
	if got := s.get(); !slices.Equal(got, []string{"live-2"}) {
		t.Fatalf("delivered %v, want only live-2", got)
	}

	f.add("live", "", now, "live-3")
	s2 := &seen{}
	m2 := start(t, f, s2.handler(), cfg)
	drainFake(t, m2)
	if got := s2.get(); !slices.Equal(got, []string{"live-3"}) {
		t.Errorf("after restart delivered %v, want only live-3", got)
	}
}

// Records older than MaximumRecordAge go to the on-failure destination uninvoked.
func TestMaximumRecordAge(t *testing.T) {
	f := newFakeStream()
	f.add("s", "", time.Now().Add(-time.Hour), "stale-1", "stale-2")
	f.add("s", "", time.Now(), "fresh-1")
	cfg := fakeConfig(t)
	cfg.BatchSize = 10
	cfg.MaximumRecordAge = time.Minute
	cfg.OnFailureDir = t.TempDir()
	s := &seen{}
	m := start(t, f, s.handler(), cfg)
	drainFake(t, m)
	if got := s.get(); !slices.Equal(got, []string{"fresh-1"}) {
		t.Errorf("delivered %v, want fresh-1", got)
	}
	frs := failureRecords(t, cfg.OnFailureDir)
	if len(frs) != 1 || frs[0].RequestContext.Condition != RecordAgeExceeded || frs[0].DDBStreamBatchInfo.BatchSize != 2 ||
		frs[0].RequestContext.ApproximateInvokeCount != 0 || frs[0].ResponseContext.StatusCode != 0 {
		t.Errorf("on-failure records %+v, want one RecordAgeExceeded for 2 records, never invoked", frs)
	}
}

// A batch stops before the record that would make the event exceed Lambda's 6 MB payload;
// that record starts the next batch.
func TestPayloadLimit(t *testing.T) {
	f := newFakeStream()
	pks := items("BIG", 5)
	f.add("s", "", time.Now(), pks...)
	blob := strings.Repeat("x", 1_500_000) // four fit in 6 MiB, five do not
	for _, r := range f.shard("s").records {
		r.Dynamodb.NewImage = map[string]types.AttributeValue{"blob": &types.AttributeValueMemberS{Value: blob}}
	}
	var sizes []int
	var mu sync.Mutex
	inv := lambda.NewHandler(func(e events.DynamoDBEvent) error {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(e.Records))
		return nil
	})
	cfg := fakeConfig(t)
	cfg.BatchSize = 10
	m := start(t, f, inv, cfg)
	drainFake(t, m)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(sizes, []int{4, 1}) {
		t.Errorf("batch sizes %v, want [4 1]", sizes)
	}
	if st := m.Stats(); st.Records != 5 || st.Batches != 2 {
		t.Errorf("stats %+v, want 5 records in 2 batches", st)
	}
}

// Cancelling Run stops every shard goroutine, saves the checkpoint and returns nil; a
// Mapping does not run twice.
func TestRunStopsCleanly(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	f := newFakeStream()
	f.add("a", "", time.Now(), "a-1")
	f.add("b", "", time.Now(), "b-1")
	cfg := fakeConfig(t)
	cfg.CheckpointFile = filepath.Join(t.TempDir(), "ckpt.json")
	m, err := New(f, (&seen{}).handler(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, m)
	drainFake(t, m)
	stop() // fails the test if Run returned an error
	if err := m.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
	if err := m.Drain(context.Background(), time.Millisecond); !errors.Is(err, ErrStopped) {
		t.Errorf("Drain after Run: %v, want ErrStopped", err)
	}
	if cp := readCheckpoint(t, cfg.CheckpointFile); len(cp.Shards) != 2 || cp.StreamARN != fakeARN {
		t.Errorf("checkpoint %+v, want both shards", cp)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && runtime.NumGoroutine() > goroutines {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after Run returned, %d before", n, goroutines)
	}
}
