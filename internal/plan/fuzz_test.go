package plan_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
)

// FuzzPlan: any record that decodes can be planned and coalesced without a panic, and the
// plan describes itself.
func FuzzPlan(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		raws, err := record.SplitEvent(data)
		if err != nil {
			f.Fatal(err)
		}
		for _, r := range raws {
			f.Add([]byte(r))
		}
	}
	set := socialSet(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := record.Decode(raw)
		if err != nil {
			return
		}
		p := plan.New(set)
		rp, err := p.Plan(&c)
		if err != nil {
			return
		}
		rp.Describe(discard{})
		b := plan.Coalesce([]plan.RecordPlan{rp, rp})
		for _, w := range b.Watermarked {
			w.Sum("")
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
