package plan_test

import (
	"os"
	"testing"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
)

// BenchmarkCommentInsert measures decode + match + plan of one typical comment INSERT
// (a watermarked post count, a marker-guarded user count, a pull of the author's name).
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
	b.Run("decode+match+plan", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c, err := record.Decode(raw)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.Plan(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
	c, _ := record.Decode(raw)
	b.Run("match+plan", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := p.Plan(&c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
