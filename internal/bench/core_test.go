package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/workload"
)

// BenchmarkCore measures the pure core per record on whole batches of 100, as the handler
// runs it: split the event, decode every record, match and plan it against all rules of
// rules/social.yaml, and coalesce the batch. The records are those the workloads' writes
// produce (comment-storm: comment inserts; social-mix: the whole social example's mix).
func BenchmarkCore(b *testing.B) {
	_, set, err := ruleSubset("../../rules/social.yaml", nil, false, 0)
	if err != nil {
		b.Fatal(err)
	}
	ws := map[string]Workload{}
	for _, w := range Workloads(1, Full) {
		ws[w.Name] = w
	}
	for _, name := range []string{"comment-storm", "social-mix"} {
		w := ws[name]
		events := streamEvents(b, append(append(w.Setup[:0:0], w.Setup...), w.Measure...), 100)
		b.Run(name, func(b *testing.B) {
			n := 0
			run := func() {
				for _, ev := range events {
					n += core(b, set, ev)
				}
			}
			allocs := testing.AllocsPerRun(3, run)
			n = 0
			b.ResetTimer()
			for b.Loop() {
				run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
			recs := 0
			for _, ev := range events {
				raws, _ := record.SplitEvent(ev)
				recs += len(raws)
			}
			b.ReportMetric(allocs/float64(recs), "allocs/record")
		})
	}
}

// core runs one event through the pure stages and returns its record count.
func core(b *testing.B, set *rules.Set, event []byte) int {
	raws, err := record.SplitEvent(event)
	if err != nil {
		b.Fatal(err)
	}
	p := plan.New(set)
	plans := make([]plan.RecordPlan, 0, len(raws))
	for _, raw := range raws {
		c, err := record.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		rp, err := p.Plan(&c)
		if err != nil {
			b.Fatal(err)
		}
		plans = append(plans, rp)
	}
	_ = plan.Coalesce(plans)
	return len(raws)
}

// streamEvents turns application writes into the Lambda events their stream records make,
// size records each, tracking item states for the old and new images.
func streamEvents(b *testing.B, ops []workload.Op, size int) [][]byte {
	items := map[[2]string]record.Item{}
	var raws []json.RawMessage
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, op := range ops {
		k := op.ItemKey()
		id := [2]string{str(k["pk"]), str(k["sk"])}
		old := items[id]
		var nw record.Item
		switch {
		case op.Put != nil:
			nw = maps.Clone(op.Put)
		case op.Del != nil:
		default:
			nw = maps.Clone(old)
			if nw == nil {
				nw = maps.Clone(op.Key)
			}
			maps.Copy(nw, op.Set)
		}
		c := record.Change{EventID: fmt.Sprintf("%032x", i), Seq: fmt.Sprintf("%021d", 1000+i), Keys: op.ItemKey(),
			Old: old, New: nw, Created: base, SizeBytes: 300}
		switch {
		case old == nil && nw == nil:
			continue
		case old == nil:
			c.Op = record.Insert
		case nw == nil:
			c.Op = record.Remove
		default:
			c.Op = record.Modify
		}
		if nw == nil {
			delete(items, id)
		} else {
			items[id] = nw
		}
		raw, err := record.EncodeChange(c, "arn:aws:dynamodb:us-east-1:000000000000:table/bench/stream/2025-01-01T00:00:00.000", "us-east-1")
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	var events [][]byte
	for len(raws) > 0 {
		n := min(size, len(raws))
		events = append(events, record.EncodeEvent(raws[:n]))
		raws = raws[n:]
	}
	return events
}
