package bench

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/denorm/denorm/internal/esm"
)

// meteredInvoker times every invocation of a handler: wall time, and the process's CPU time
// spent inside it (with ParallelizationFactor 1 the mapping delivers one batch at a time and
// waits for it, and nothing else runs in the process during a measured drain, so that CPU is
// the handler's; overlapping invocations, flagged Overlapped, count shared CPU twice: decoding,
// planning, building requests, the SDK's signing and HTTP). What it does around the call
// (lag bookkeeping) is not timed.
type meteredInvoker struct {
	inv   esm.Invoker
	floor *floorCounter
	// visible, when set, is called with the records of every invocation and its end time,
	// except records the response reported as failed (Denorm's lag).
	visible func(rec *events.DynamoDBEventRecord, at time.Time)
	// prices bills each invocation's duration; paths adds up the rounds of DynamoDB calls
	// each invocation waited on (the latency middleware notes the calls).
	prices Prices
	paths  pathStats

	mu          sync.Mutex
	billedMs    float64
	modelMs     float64
	invocations int
	cpu, wall   time.Duration
	lastEnd     time.Time
	inFlight    int
	overlapped  bool
}

func (m *meteredInvoker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	m.mu.Lock()
	m.inFlight++
	m.overlapped = m.overlapped || m.inFlight > 1
	m.mu.Unlock()
	ctx = m.floor.begin(ctx)
	ctx, tr := withTrace(ctx)
	c0, t0 := cpuTime(), time.Now()
	resp, err := m.inv.Invoke(ctx, payload)
	t1, c1 := time.Now(), cpuTime()
	m.floor.end(ctx)
	chainCalls, chainTook := tr.chain()
	m.paths.add(tr.rounds(), chainCalls, chainTook)
	m.mu.Lock()
	m.inFlight--
	m.invocations++
	m.cpu += c1 - c0
	m.wall += t1.Sub(t0)
	m.billedMs += m.prices.billedMs(t1.Sub(t0), c1-c0)
	m.modelMs += m.prices.modelledMs(chainTook, c1-c0)
	if t1.After(m.lastEnd) {
		m.lastEnd = t1
	}
	visible := m.visible
	m.mu.Unlock()
	if visible != nil && err == nil {
		observeBatch(payload, resp, t1, visible)
	}
	return resp, err
}

// invokeStats is what the invocations since the last take cost.
type invokeStats struct {
	Invocations int
	CPU, Wall   time.Duration
	LastEnd     time.Time
	Overlapped  bool
	BilledMs    float64
	// ModelMs is what the invocations would be billed on AWS by the latency model: each
	// one's critical path through its calls plus its CPU time at the function's share.
	ModelMs float64
	Path    CriticalPath
}

func (m *meteredInvoker) take() invokeStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := invokeStats{Invocations: m.invocations, CPU: m.cpu, Wall: m.wall, LastEnd: m.lastEnd, Overlapped: m.overlapped,
		BilledMs: m.billedMs, ModelMs: m.modelMs, Path: m.paths.take()}
	m.invocations, m.cpu, m.wall, m.lastEnd, m.overlapped, m.billedMs, m.modelMs = 0, 0, 0, time.Time{}, false, 0, 0
	return s
}

func (m *meteredInvoker) setVisible(f func(rec *events.DynamoDBEventRecord, at time.Time)) {
	m.mu.Lock()
	m.visible = f
	m.mu.Unlock()
}

// observeBatch reports the records of a batch as visible at t, up to the first failed one.
func observeBatch(payload, resp []byte, t time.Time, visible func(*events.DynamoDBEventRecord, time.Time)) {
	var ev events.DynamoDBEvent
	if json.Unmarshal(payload, &ev) != nil {
		return
	}
	var r events.DynamoDBEventResponse
	_ = json.Unmarshal(resp, &r)
	failed := map[string]bool{}
	for _, f := range r.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for i := range ev.Records {
		if failed[ev.Records[i].Change.SequenceNumber] {
			return // this record and the rest are redelivered
		}
		visible(&ev.Records[i], t)
	}
}

// nopInvoker acknowledges every batch: used to move a mapping past the setup records,
// whose derived state is empty by construction.
type nopInvoker struct{}

func (nopInvoker) Invoke(context.Context, []byte) ([]byte, error) {
	return []byte(`{"batchItemFailures":[]}`), nil
}
