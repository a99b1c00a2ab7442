package bench

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"
)

func TestParseLatency(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		op      string
		want    Latency
		wantErr string
	}{
		{spec: "none"},
		{spec: "default", op: "TransactWriteItems", want: DefaultLatency().Ops["TransactWriteItems"]},
		{spec: "GetItem=2ms/6ms", op: "GetItem", want: Latency{2 * time.Millisecond, 6 * time.Millisecond}},
		{spec: "GetItem=2ms/6ms", op: "Query", want: Latency{}},
		{spec: "*=4ms,GetItem=1ms", op: "Query", want: Latency{4 * time.Millisecond, 4 * time.Millisecond}},
		{spec: "default,Query=8ms/30ms", op: "Query", want: Latency{8 * time.Millisecond, 30 * time.Millisecond}},
		{spec: "default,Query=8ms/30ms", op: "GetItem", want: DefaultLatency().Ops["GetItem"]},
		{spec: "GetItem", wantErr: "want OP=MEDIAN[/P99]"},
		{spec: "GetItem=fast", wantErr: `median "fast"`},
		{spec: "GetItem=5ms/1ms", wantErr: `p99 "1ms"`},
		{spec: "GetItem=-1ms", wantErr: `median "-1ms"`},
	} {
		m, err := ParseLatency(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.spec, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if tc.op == "" {
			if m != nil {
				t.Errorf("%q: a model, want none", tc.spec)
			}
			continue
		}
		if got := m.For(tc.op); got != tc.want {
			t.Errorf("%q: %s is %v, want %v", tc.spec, tc.op, got, tc.want)
		}
	}
}

// TestLatencySample draws many latencies and finds the median and p99 the model was given.
func TestLatencySample(t *testing.T) {
	m := &LatencyModel{Ops: map[string]Latency{"Query": {5 * time.Millisecond, 15 * time.Millisecond}}, Other: Latency{2 * time.Millisecond, 2 * time.Millisecond}}
	const n = 20000
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = m.draw("Query")
	}
	slices.Sort(ds)
	near := func(got, want time.Duration) bool { return math.Abs(float64(got-want)) <= 0.05*float64(want) }
	if med, p99 := ds[n/2], ds[n*99/100]; !near(med, 5*time.Millisecond) || !near(p99, 15*time.Millisecond) {
		t.Errorf("Query: median %v, p99 %v; want 5ms and 15ms within 5%%", med, p99)
	}
	if d := m.draw("GetItem"); d != 2*time.Millisecond {
		t.Errorf("GetItem (other, constant): %v, want 2ms", d)
	}
}

// TestLatencyMiddleware runs calls through the middleware on a stack whose handler takes
// 40 ms: each call takes the model's latency in total (50 ms), not that plus the handler's
// time (90 ms),
// and the trace of the context notes it under its operation's name.
func TestLatencyMiddleware(t *testing.T) {
	m, err := ParseLatency("GetItem=50ms,UpdateItem=60ms")
	if err != nil {
		t.Fatal(err)
	}
	stack := middleware.NewStack("test", func() any { return nil })
	if err := m.AddTo(stack); err != nil {
		t.Fatal(err)
	}
	h := middleware.DecorateHandler(middleware.HandlerFunc(func(context.Context, any) (any, middleware.Metadata, error) {
		time.Sleep(40 * time.Millisecond)
		return nil, middleware.Metadata{}, nil
	}), stack)
	ctx, tr := withTrace(context.Background())
	do := func(op string) {
		if _, _, err := h.Handle(middleware.WithOperationName(ctx, op), nil); err != nil {
			t.Error(err)
		}
	}
	t0 := time.Now()
	do("GetItem")
	if d := time.Since(t0); d < 50*time.Millisecond || d >= 85*time.Millisecond {
		t.Errorf("GetItem took %v, want 50ms (not 90ms: the handler's 40ms are part of it)", d)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); do("UpdateItem") }()
	}
	wg.Wait()
	do("GetItem")
	rs := tr.rounds()
	var labels []string
	for _, r := range rs {
		labels = append(labels, r.label())
	}
	if got := strings.Join(labels, " → "); got != "GetItem → UpdateItem×3 → GetItem" {
		t.Errorf("rounds %q, want GetItem → UpdateItem×3 → GetItem", got)
	}
}

// TestRounds: calls that overlap, directly or through another call, are one round.
func TestRounds(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(a, b int) (time.Time, time.Time) {
		return t0.Add(time.Duration(a) * time.Millisecond), t0.Add(time.Duration(b) * time.Millisecond)
	}
	tr := &trace{}
	for _, c := range []struct {
		op   string
		a, b int
	}{
		{"UpdateItem", 12, 20}, // added out of order
		{"GetItem", 0, 5},
		{"GetItem", 1, 4},
		{"Query", 5, 10}, // starts as the first round ends: a new round
		{"UpdateItem", 9, 15},
		{"TransactWriteItems", 30, 40},
	} {
		s, e := at(c.a, c.b)
		tr.add(c.op, s, e, e.Sub(s))
	}
	// The critical path: GetItem 0-5, Query 5-10, UpdateItem 12-20, TransactWriteItems.
	calls, took := tr.chain()
	if calls != 4 || took != 28*time.Millisecond {
		t.Errorf("chain of %d calls, %v; want 4 calls, 28ms", calls, took)
	}
	var p pathStats
	p.add(tr.rounds(), calls, took)
	other := &trace{}
	s, e := at(0, 3)
	other.add("GetItem", s, e, 5*time.Millisecond) // by the model: 5 ms
	oc, ot := other.chain()
	p.add(other.rounds(), oc, ot)
	p.add(nil, 0, 0) // a batch with no call
	cp := p.take()
	want := "GetItem×2 → Query+UpdateItem×2 → TransactWriteItems"
	if cp.Longest != want || cp.RoundsMax != 3 || cp.RoundsMean != 2 || cp.Calls != 7 || cp.Invocations != 3 || cp.Empty != 1 {
		t.Errorf("path %+v, want longest %q, 3 rounds at most, 2 on average, 7 calls, 3 invocations, 1 empty", cp, want)
	}
	if cp.ChainCalls != 2.5 || cp.ChainMs != 16.5 {
		t.Errorf("chain per batch %.1f calls, %.1f ms; want 2.5 and 16.5", cp.ChainCalls, cp.ChainMs)
	}
	if cp.RoundsByOp["UpdateItem"] != 0.5 || cp.RoundsByOp["GetItem"] != 1 {
		t.Errorf("rounds by op %v, want UpdateItem 0.5 and GetItem 1 (over the two batches with calls)", cp.RoundsByOp)
	}
	if again := p.take(); again.Invocations != 0 || again.Longest != "" {
		t.Errorf("take did not start again: %+v", again)
	}
}
