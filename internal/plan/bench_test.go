package plan_test

import (
	"os"
	"testing"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
)

// The pure core's budget for one comment INSERT, decode + match + plan (issue 17).
const (
	budgetNs     = 2000
	budgetAllocs = 10
)

// BenchmarkCommentInsert measures decode + match + plan of one typical comment INSERT
// (a watermarked post count, a marker-guarded user count, a pull of the author's name),
// then match + plan and decode alone. decode+match+plan fails when the allocations exceed
// the budget (they do not depend on the machine) and reports its time as a share of the
// budget's ("×budget": 1 or less is within it).
func BenchmarkCommentInsert(b *testing.B) {
	set := socialSet(b)
	event, err := os.ReadFile("testdata/comment_batch.json")
	if err != nil {
		b.Fatal(err)
	}
	raws, err := record.SplitEvent(event)
	if err != nil {
		b.Fatal(err)
	}
	raw := raws[0]
	p := plan.New(set)
	core := func() {
		c, err := record.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Plan(&c); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("decode+match+plan", func(b *testing.B) {
		if n := testing.AllocsPerRun(100, core); n > budgetAllocs {
			b.Errorf("%.0f allocations per record, over the budget of %d", n, budgetAllocs)
		}
		b.ReportAllocs()
		for b.Loop() {
			core()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/budgetNs, "×budget")
	})
	c, err := record.Decode(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("match+plan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Plan(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := record.Decode(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
