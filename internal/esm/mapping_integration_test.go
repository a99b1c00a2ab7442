package esm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/denorm/denorm/internal/record"
)

// Every record reaches the function once, in stream order, in batches of at most BatchSize,
// shaped as Lambda's DynamoDB event.
func TestDeliversInOrderInBatches(t *testing.T) {
	s := newStack(t)
	want := items("USER", 25)
	s.put(want...)

	var events0 []events.DynamoDBEventRecord
	rec := &recorder{decide: func(n int, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if n == 0 {
			events0 = e.Records
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	cfg := s.fastConfig()
	cfg.BatchSize = 10
	m := start(t, s.streams, rec.handler(), cfg)
	drain(t, m)

	if got := rec.processed(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	var sizes []int
	var seqs []string
	for _, c := range rec.snapshot() {
		sizes = append(sizes, len(c.pks))
		seqs = append(seqs, c.seqs...)
	}
	// All records were in the stream before the mapping started: full batches first.
	if !slices.Equal(sizes, []int{10, 10, 5}) {
		t.Errorf("batch sizes %v, want [10 10 5]", sizes)
	}
	if !slices.IsSortedFunc(seqs, record.CompareSeq) {
		t.Errorf("sequence numbers out of order: %v", seqs)
	}
	r := events0[0]
	if r.EventSource != "aws:dynamodb" || r.EventSourceArn != s.arn || r.EventName != "INSERT" ||
		r.EventVersion != "1.1" || r.Change.StreamViewType != "NEW_AND_OLD_IMAGES" ||
		r.Change.NewImage["pk"].String() != want[0] || r.Change.SequenceNumber == "" || r.EventID == "" {
		t.Errorf("first record has the wrong shape: %+v", r)
	}
	if st := m.Stats(); st.Batches != 3 || st.Records != 25 || st.Invocations != 3 || st.Failures != 0 {
		t.Errorf("stats %+v, want 3 batches, 25 records, 3 invocations, no failures", st)
	}
}

// A batch item failure checkpoints before the lowest failed record and retries from it; an
// identifier that is not in the batch fails the whole batch.
func TestBatchItemFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		// failed picks the itemIdentifiers the first call reports.
		failed func(seqs []string) []string
		// retried is the index of the first record the retry carries.
		retried int
	}{
		{"lowest of several", func(seqs []string) []string { return []string{seqs[6], seqs[4], seqs[8]} }, 4},
		{"first record", func(seqs []string) []string { return []string{seqs[0]} }, 0},
		{"unknown identifier", func(seqs []string) []string { return []string{seqs[6], "12345"} }, 0},
		{"empty identifier", func(seqs []string) []string { return []string{""} }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t)
			want := items("POST", 10)
			s.put(want...)
			rec := &recorder{decide: func(n int, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				var r events.DynamoDBEventResponse
				if n == 0 {
					var seqs []string
					for _, x := range e.Records {
						seqs = append(seqs, x.Change.SequenceNumber)
					}
					for _, id := range tc.failed(seqs) {
						r.BatchItemFailures = append(r.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: id})
					}
				}
				return r, nil
			}}
			cfg := s.fastConfig()
			cfg.ReportBatchItemFailures = true
			m := start(t, s.streams, rec.handler(), cfg)
			drain(t, m)

			calls := rec.snapshot()
			if len(calls) != 2 {
				t.Fatalf("%d calls, want 2: %+v", len(calls), calls)
			}
			if !slices.Equal(calls[0].pks, want) || !slices.Equal(calls[1].pks, want[tc.retried:]) {
				t.Errorf("calls carried %v then %v, want all then from #%d", calls[0].pks, calls[1].pks, tc.retried)
			}
			if st := m.Stats(); st.Failures != 1 || st.Retries != 1 || st.OnFailure != 0 {
				t.Errorf("stats %+v, want 1 failure, 1 retry", st)
			}
		})
	}
}

// A function error bisects the batch down to the poison record, which goes to the on-failure
// destination after its retries, while every record around it is delivered.
func TestBisectIsolatesPoisonRecord(t *testing.T) {
	s := newStack(t)
	want := items("FILE", 8)
	s.put(want...)
	poison := want[5]
	var poisonSeq string
	rec := &recorder{decide: func(n int, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range e.Records {
			if r.Change.Keys["pk"].String() == poison {
				poisonSeq = r.Change.SequenceNumber
				return events.DynamoDBEventResponse{}, errPoison
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	dir := t.TempDir()
	cfg := s.fastConfig()
	cfg.BisectBatchOnFunctionError = true
	cfg.MaximumRetryAttempts = Int(1)
	cfg.OnFailureDir = dir
	m := start(t, s.streams, rec.handler(), cfg)
	drain(t, m)

	wantDone := slices.Delete(slices.Clone(want), 5, 6)
	if got := rec.processed(); !slices.Equal(got, wantDone) {
		t.Errorf("processed %v, want %v", got, wantDone)
	}
	var sizes []int
	for _, c := range rec.snapshot() {
		sizes = append(sizes, len(c.pks))
	}
	// [0-7] fails; [0-3] ok; [4-7] fails; [4,5] fails; [4] ok; [5] fails twice; [6,7] ok.
	if wantSizes := []int{8, 4, 4, 2, 1, 1, 1, 2}; !slices.Equal(sizes, wantSizes) {
		t.Errorf("invocation sizes %v, want %v", sizes, wantSizes)
	}
	frs := failureRecords(t, dir)
	if len(frs) != 1 {
		t.Fatalf("%d on-failure records, want 1", len(frs))
	}
	fr := frs[0]
	info := fr.DDBStreamBatchInfo
	if info.StartSequenceNumber != poisonSeq || info.EndSequenceNumber != poisonSeq || info.BatchSize != 1 ||
		info.StreamARN != s.arn || info.ShardID == "" || info.ApproximateArrivalOfFirstRecord == "" {
		t.Errorf("batch info %+v, want the poison record %s alone", info, poisonSeq)
	}
	if rc := fr.RequestContext; rc.Condition != RetryAttemptsExhausted || rc.ApproximateInvokeCount != 2 || rc.RequestID == "" || rc.FunctionARN == "" {
		t.Errorf("request context %+v, want RetryAttemptsExhausted after 2 invocations", rc)
	}
	if fr.ResponseContext.FunctionError != "Unhandled" || fr.Version != "1.0" || fr.Timestamp == "" {
		t.Errorf("on-failure record %+v", fr)
	}
	if st := m.Stats(); st.Bisects != 3 || st.OnFailure != 1 || st.Retries != 1 {
		t.Errorf("stats %+v, want 3 bisects, 1 record on failure, 1 retry", st)
	}
}

// A partial batch response that fails the batch's first record bisects it, as a function
// error does (AWS: with BisectBatchOnFunctionError and ReportBatchItemFailures the batch is
// split at the returned sequence number): the poison record goes to the on-failure
// destination alone and the records behind it are delivered.
func TestBisectOnItemFailureAtHead(t *testing.T) {
	s := newStack(t)
	want := items("FILE", 8)
	s.put(want...)
	poison := want[2]
	var poisonSeq string
	rec := &recorder{decide: func(n int, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range e.Records {
			if r.Change.Keys["pk"].String() == poison {
				poisonSeq = r.Change.SequenceNumber
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: poisonSeq}}}, nil
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	dir := t.TempDir()
	cfg := s.fastConfig()
	cfg.BisectBatchOnFunctionError = true
	cfg.ReportBatchItemFailures = true
	cfg.MaximumRetryAttempts = Int(1)
	cfg.OnFailureDir = dir
	m := start(t, s.streams, rec.handler(), cfg)
	drain(t, m)

	if got, wantDone := rec.processed(), slices.Delete(slices.Clone(want), 2, 3); !slices.Equal(got, wantDone) {
		t.Errorf("processed %v, want %v", got, wantDone)
	}
	frs := failureRecords(t, dir)
	if len(frs) != 1 {
		t.Fatalf("%d on-failure records, want 1", len(frs))
	}
	if info := frs[0].DDBStreamBatchInfo; info.StartSequenceNumber != poisonSeq || info.BatchSize != 1 {
		t.Errorf("batch info %+v, want the poison record %s alone", info, poisonSeq)
	}
	if st := m.Stats(); st.Bisects == 0 || st.OnFailure != 1 {
		t.Errorf("stats %+v, want bisects and 1 record on failure", st)
	}
}

// MaximumRetryAttempts bounds the invocations of a failing batch; then the shard moves on.
func TestMaximumRetryAttempts(t *testing.T) {
	for _, retries := range []int{0, 2} {
		t.Run(fmt.Sprint("retries_", retries), func(t *testing.T) {
			s := newStack(t)
			bad := items("BAD", 3)
			s.put(bad...)
			rec := &recorder{decide: func(n int, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				if e.Records[0].Change.Keys["pk"].String() == bad[0] {
					return events.DynamoDBEventResponse{}, errPoison
				}
				return events.DynamoDBEventResponse{}, nil
			}}
			dir := t.TempDir()
			cfg := s.fastConfig()
			cfg.MaximumRetryAttempts = Int(retries)
			cfg.OnFailureDir = dir
			m := start(t, s.streams, rec.handler(), cfg)
			drain(t, m)
			s.put("GOOD#00")
			drain(t, m)

			calls := rec.snapshot()
			if len(calls) != retries+2 {
				t.Fatalf("%d calls, want %d with the bad batch and 1 after", len(calls), retries+2)
			}
			if last := calls[len(calls)-1]; !slices.Equal(last.pks, []string{"GOOD#00"}) || last.err != nil {
				t.Errorf("last call %+v, want GOOD#00 delivered", last)
			}
			frs := failureRecords(t, dir)
			if len(frs) != 1 || frs[0].DDBStreamBatchInfo.BatchSize != 3 || frs[0].RequestContext.ApproximateInvokeCount != retries+1 {
				t.Fatalf("on-failure records %+v, want one for 3 records after %d invocations", frs, retries+1)
			}
		})
	}
}

// FilterCriteria keep reserved _dn items from the function; they still count as processed.
func TestFilterCriteria(t *testing.T) {
	s := newStack(t)
	s.put("USER#1", "_dn#marker#1", "POST#1", "_dn#marker#2")
	rec := &recorder{}
	ckpt := filepath.Join(t.TempDir(), "checkpoint.json")
	cfg := s.fastConfig()
	cfg.FilterCriteria = []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"anything-but":{"prefix":"_dn"}}]}}}}`}
	cfg.CheckpointFile = ckpt
	m := start(t, s.streams, rec.handler(), cfg)
	drain(t, m)

	if got := rec.processed(); !slices.Equal(got, []string{"USER#1", "POST#1"}) {
		t.Errorf("delivered %v, want USER#1 and POST#1", got)
	}
	if st := m.Stats(); st.Filtered != 2 || st.Records != 2 {
		t.Errorf("stats %+v, want 2 filtered, 2 records", st)
	}
	// The checkpoint passes the trailing filtered record: a restart does not re-read it.
	cp := readCheckpoint(t, ckpt)
	if len(cp.Shards) != 1 {
		t.Fatalf("checkpoint %+v, want one shard", cp)
	}
	last := s.lastSeq()
	for _, sh := range cp.Shards {
		if sh.SequenceNumber != last {
			t.Errorf("checkpoint at %s, want %s (the last, filtered, record)", sh.SequenceNumber, last)
		}
	}
}

// A restart with the same checkpoint file delivers only what was not processed yet.
func TestRestartResumesFromCheckpoint(t *testing.T) {
	s := newStack(t)
	ckpt := filepath.Join(t.TempDir(), "checkpoint.json")
	cfg := s.fastConfig()
	cfg.CheckpointFile = ckpt

	first := items("A", 5)
	s.put(first...)
	rec1 := &recorder{}
	m1, err := New(s.streams, rec1.handler(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, m1)
	drain(t, m1)
	stop()
	if got := rec1.processed(); !slices.Equal(got, first) {
		t.Fatalf("first run delivered %v, want %v", got, first)
	}

	second := items("B", 3)
	s.put(second...)
	rec2 := &recorder{}
	m2 := start(t, s.streams, rec2.handler(), cfg)
	drain(t, m2)
	if got := rec2.processed(); !slices.Equal(got, second) {
		t.Errorf("second run delivered %v, want only %v", got, second)
	}
}

// Hooks see every delivery; DeliverTwice invokes each batch twice and the second outcome
// decides, so a lost first response does not lose records.
func TestHooksAndDeliverTwice(t *testing.T) {
	s := newStack(t)
	s.put(items("H", 3)...)
	rec := &recorder{}
	var seen [][]json.RawMessage
	cfg := s.fastConfig()
	cfg.Hooks = Hooks{
		DeliverTwice: true,
		BeforeInvoke: func(b []json.RawMessage) []json.RawMessage {
			seen = append(seen, b)
			return append(b, b[0]) // a duplicate, as a redelivery would bring
		},
		AfterInvoke: func(b []json.RawMessage, resp []byte, err error) ([]byte, error) {
			if len(seen) == 1 {
				return nil, errPoison // the first batch's response is "lost" both times
			}
			return resp, err
		},
	}
	m := start(t, s.streams, rec.handler(), cfg)
	drain(t, m)

	calls := rec.snapshot()
	if len(calls) != 4 {
		t.Fatalf("%d calls, want 4 (a failed batch and its retry, each delivered twice)", len(calls))
	}
	for _, c := range calls {
		if want := append(items("H", 3), "H#00"); !slices.Equal(c.pks, want) {
			t.Errorf("call carried %v, want %v", c.pks, want)
		}
	}
	if st := m.Stats(); st.Invocations != 4 || st.Failures != 1 || st.Retries != 1 {
		t.Errorf("stats %+v, want 4 invocations, 1 failure, 1 retry", st)
	}
}

// Tables created together share DynamoDB Local's sequence numbers, so a new table's first
// record comes after its shard's start, and DynamoDB Local refuses as trimmed the iterator a
// new mapping took while the shard was empty. Nothing is lost: each mapping delivers its
// table's records once, without warning of trimmed records.
func TestTablesStartedTogether(t *testing.T) {
	const tables = 4
	stacks := make([]*stack, tables)
	recs := make([]*recorder, tables)
	logs := make([]*logBuffer, tables)
	maps := make([]*Mapping, tables)
	for i := range stacks {
		stacks[i] = newStack(t)
	}
	for i, s := range stacks {
		cfg := s.fastConfig()
		logs[i] = captureWarnings(t, &cfg)
		recs[i] = &recorder{}
		maps[i] = start(t, s.streams, recs[i].handler(), cfg)
	}
	for _, m := range maps {
		drain(t, m) // every shard read while still empty
	}
	for j := range 3 {
		for i, s := range stacks {
			s.put(fmt.Sprintf("T%d#%d", i, j))
		}
	}
	for i, m := range maps {
		drain(t, m)
		want := []string{fmt.Sprintf("T%d#0", i), fmt.Sprintf("T%d#1", i), fmt.Sprintf("T%d#2", i)}
		if got := recs[i].processed(); !slices.Equal(got, want) {
			t.Errorf("table %d: delivered %v, want %v", i, got, want)
		}
		if strings.Contains(logs[i].String(), trimmedWarning) {
			t.Errorf("table %d: warned of trimmed records though none were lost:\n%s", i, logs[i])
		}
	}
}

// lastSeq reads the stream's last sequence number directly.
func (s *stack) lastSeq() string {
	s.t.Helper()
	var last string
	m, err := New(s.streams, lambda.NewHandler(func(e events.DynamoDBEvent) error {
		last = e.Records[len(e.Records)-1].Change.SequenceNumber
		return nil
	}), s.fastConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	stop := run(s.t, m)
	drain(s.t, m)
	stop()
	return last
}

func readCheckpoint(t *testing.T, path string) checkpointFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cp checkpointFile
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	return cp
}
