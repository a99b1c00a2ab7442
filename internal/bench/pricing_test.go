package bench

import (
	"math"
	"testing"
	"time"
)

func TestBilledMs(t *testing.T) {
	p := Prices{MemoryMB: 512, VCPUMemoryMB: 1769}
	for _, tc := range []struct {
		wall, cpu time.Duration
		want      float64
	}{
		{10 * time.Millisecond, 0, 10},
		{10*time.Millisecond + time.Microsecond, 0, 11}, // rounded up to the millisecond
		{20 * time.Millisecond, 2 * time.Millisecond, 18 + math.Ceil(2*1769.0/512)},
		{time.Millisecond, 5 * time.Millisecond, math.Ceil(1769.0 / 512)}, // CPU of other goroutines: at most the wall time
	} {
		if got := p.billedMs(tc.wall, tc.cpu); got != tc.want {
			t.Errorf("billedMs(%v, %v) = %v, want %v", tc.wall, tc.cpu, got, tc.want)
		}
	}
	// By the model: 30 ms of calls in sequence and 2 ms of CPU here, 6.91 ms on the function.
	if got, want := p.modelledMs(30*time.Millisecond, 2*time.Millisecond), math.Ceil(30+2*1769.0/512); got != want {
		t.Errorf("modelledMs = %v, want %v", got, want)
	}
}

// TestCost prices a known backlog by hand: 2,000 records in 20 batches of 100 ms each,
// 4,000 WCU and 500 RCU.
func TestCost(t *testing.T) {
	c := USEast1.cost(2000, 20, 20*100, 4000, 500)
	perM := 1e6 / 2000.0
	want := Cost{Invocations: 20, BilledMs: 2000, BilledMsPerBatch: 100, BilledSecondsPerMillion: 2 * perM,
		LambdaDuration: 2 * 0.5 * 0.0000133334 * perM, LambdaRequests: 20 * 0.2e-6 * perM,
		Writes: 4000 * 0.625e-6 * perM, Reads: 500 * 0.125e-6 * perM}
	want.Total = want.LambdaDuration + want.LambdaRequests + want.Writes + want.Reads
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	if c.Invocations != want.Invocations || !near(c.BilledMsPerBatch, want.BilledMsPerBatch) ||
		!near(c.BilledSecondsPerMillion, want.BilledSecondsPerMillion) || !near(c.LambdaDuration, want.LambdaDuration) ||
		!near(c.LambdaRequests, want.LambdaRequests) || !near(c.Writes, want.Writes) || !near(c.Reads, want.Reads) || !near(c.Total, want.Total) {
		t.Errorf("cost %+v\nwant %+v", c, want)
	}
	// $1.25 of writes per million records (2 WCU each): the write part dominates.
	if !near(c.Writes, 1.25) {
		t.Errorf("writes $%.4f per million, want $1.25", c.Writes)
	}
	if z := USEast1.cost(0, 0, 0, 0, 0); z.Total != 0 {
		t.Errorf("no records: %+v", z)
	}
}
