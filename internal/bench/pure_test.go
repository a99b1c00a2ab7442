package bench

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/denorm/denorm/internal/workload"
)

func TestFloorCounter(t *testing.T) {
	f := newFloorCounter()
	ctx := context.Background()
	a := f.begin(ctx)
	b := f.begin(ctx) // a concurrent batch (ParallelizationFactor > 1) keeps its own effects
	f.delta(a, "POST#1", "METADATA", "commentCount", 1)
	f.delta(a, "POST#1", "METADATA", "commentCount", 1)
	f.delta(a, "POST#2", "METADATA", "commentCount", 1)
	f.delta(b, "POST#1", "METADATA", "commentCount", 1)  // another batch: another write
	f.delta(a, "POST#2", "METADATA", "commentCount", -1) // nets to zero: no write needed
	f.changed(a, "POST#1", "COMMENT#a")
	f.changed(a, "POST#1", "COMMENT#a")
	f.end(a)
	f.end(b)
	cost := func(k [2]string) float64 {
		if k[1] == "COMMENT#a" {
			return 2 // table + gsi1
		}
		return 1
	}
	writes, wcu := f.take(cost)
	if writes != 3 || wcu != 4 {
		t.Errorf("floor = %d writes, %.0f WCU; want 3 writes, 4 WCU", writes, wcu)
	}
	if w, _ := f.take(cost); w != 0 {
		t.Errorf("take did not reset: %d", w)
	}
}

func TestDist(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := distOf(ds)
	if d.N != 100 || d.P50 != 50 || d.P99 != 99 || d.Max != 100 {
		t.Errorf("distOf(1..100 ms) = %+v", d)
	}
	if (distOf(nil) != Dist{}) {
		t.Error("empty distribution is not zero")
	}
}

func TestLagObserver(t *testing.T) {
	ops := []workload.Op{
		put("pk", "POST#1", "sk", "COMMENT#a"),
		update("POST#1", "METADATA", "status", "draft"),
		del("POST#1", "COMMENT#a"),
	}
	o := newLagObserver(ops)
	n := func(v string) events.DynamoDBAttributeValue { return events.NewNumberAttribute(v) }
	s := func(v string) events.DynamoDBAttributeValue { return events.NewStringAttribute(v) }
	rec := func(id, name string, old, nw map[string]events.DynamoDBAttributeValue, pk, sk string) *events.DynamoDBEventRecord {
		return &events.DynamoDBEventRecord{EventID: id, EventName: name, Change: events.DynamoDBStreamRecord{
			Keys: map[string]events.DynamoDBAttributeValue{"pk": s(pk), "sk": s(sk)}, OldImage: old, NewImage: nw}}
	}
	t0 := time.Unix(100, 0)
	o.observe(rec("e1", "INSERT", nil, map[string]events.DynamoDBAttributeValue{tagAttr: n("0")}, "POST#1", "COMMENT#a"), t0.Add(10*time.Millisecond))
	// The handler's own write to the post: the tag did not change, so it is not op 1.
	o.observe(rec("e2", "MODIFY", map[string]events.DynamoDBAttributeValue{tagAttr: n("1")}, map[string]events.DynamoDBAttributeValue{tagAttr: n("1")}, "POST#1", "METADATA"), t0.Add(90*time.Millisecond))
	o.observe(rec("e3", "MODIFY", nil, map[string]events.DynamoDBAttributeValue{tagAttr: n("1")}, "POST#1", "METADATA"), t0.Add(20*time.Millisecond))
	o.observe(rec("e4", "REMOVE", map[string]events.DynamoDBAttributeValue{tagAttr: n("0")}, nil, "POST#1", "COMMENT#a"), t0.Add(30*time.Millisecond))
	// A redelivery of e1 later: the record became visible only then.
	o.observe(rec("e1", "INSERT", nil, map[string]events.DynamoDBAttributeValue{tagAttr: n("0")}, "POST#1", "COMMENT#a"), t0.Add(40*time.Millisecond))
	lags, unseen := o.recordLags([]time.Time{t0, t0, t0})
	want := []time.Duration{40 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}
	if unseen != 0 || len(lags) != 3 {
		t.Fatalf("lags %v, unseen %d", lags, unseen)
	}
	for i := range want {
		if lags[i] != want[i] {
			t.Errorf("lag of op %d = %v, want %v", i, lags[i], want[i])
		}
	}
}

func TestSummarizeChecks(t *testing.T) {
	r := &Report{LatencyModel: DefaultLatency()}
	lag := func(p99 float64) Dist { return Dist{N: 10, P50: p99 / 2, P99: p99} }
	r.Workloads = []WorkloadResult{{Name: "storm", Targets: []Target{TargetSamePartition}, Runs: []RunResult{
		{System: Denorm, Usage: Usage{WCU: 4}, RecordsPerSec: 500, ModelRecordsPerSec: 1500, Cost: Cost{Total: 1}, Lag: lag(800), Verify: Verify{Clean: true}},
		{System: Naive, Usage: Usage{WCU: 400}, RecordsPerSec: 40, ModelRecordsPerSec: 400, Cost: Cost{Total: 4}, FloorWrites: 4, FloorWCU: 4, Verify: Verify{Clean: true}},
		{System: Denorm, Usage: Usage{WCU: 6}, RecordsPerSec: 300, ModelRecordsPerSec: 1100, Cost: Cost{Total: 1}, Lag: lag(900), Verify: Verify{Clean: true}},
		{System: Naive, Usage: Usage{WCU: 400}, RecordsPerSec: 20, ModelRecordsPerSec: 300, Cost: Cost{Total: 4}, FloorWrites: 4, FloorWCU: 4, Verify: Verify{Clean: true}},
	}}}
	r.summarize()
	w := r.Workloads[0]
	if w.Denorm.WCU != 5 || w.Baseline.RecordsPerSec != 30 || w.FloorWCU != 4 || w.Denorm.ModelRecordsPerSec != 1300 || w.Denorm.LagP99 != 850 {
		t.Errorf("medians: %+v %+v floor %v", w.Denorm, w.Baseline, w.FloorWCU)
	}
	if w.Ratios.WCUVsBaseline != 5.0/400 || w.Ratios.DollarsVsBaseline != 0.25 || w.Ratios.ModelThroughputVsBaseline != 1300.0/350 {
		t.Errorf("ratios: %+v", w.Ratios)
	}
	// The WCU target, then keep-up, lag, speed and dollars (by the model), then exactly once.
	byTarget := map[Target]Check{}
	for _, c := range w.Checks {
		byTarget[c.Target] = c
	}
	for _, want := range []Check{
		{TargetSamePartition, 5.0 / 400, 0.05, true},
		{TargetKeepUp, 1300, 1000, true},
		{TargetLagP99, 850, 1000, true},
		{TargetSpeed, 1300.0 / 350, 3, true},
		{TargetDollars, 0.25, 0.5, true},
	} {
		if got := byTarget[want.Target]; got != want {
			t.Errorf("%s: %+v, want %+v", want.Target, got, want)
		}
	}
	if len(w.Checks) != 7 || !r.AllVerified {
		t.Errorf("checks: %+v", w.Checks)
	}
	// Without a latency model the speed targets read the figures measured here.
	r.LatencyModel = nil
	r.summarize()
	w = r.Workloads[0]
	if c := w.Checks[1]; c.Target != TargetKeepUp || c.Value != 400 || c.Met {
		t.Errorf("keep-up without a model: %+v, want 400 records/s, missed", c)
	}
	if c := w.Checks[3]; c.Target != TargetSpeed || c.Value != 400.0/30 || !c.Met {
		t.Errorf("speed without a model: %+v", c)
	}
	// A baseline that drifted voids the comparison, and the check says it was the baseline.
	r.Workloads[0].Runs[3].Verify = Verify{Drift: 1}
	r.summarize()
	w = r.Workloads[0]
	if r.AllVerified || !w.Checks[5].Met || w.Checks[6].Met {
		t.Errorf("baseline drift: verified %v, checks %+v", r.AllVerified, w.Checks)
	}
}
