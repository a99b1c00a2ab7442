package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// FuzzPlan feeds arbitrary stream records through the pure stages of the stream processor
// with the social rules: decode, plan, coalesce. Whatever the record holds (keys that are
// numbers, templates half matched, a '#' in a variable, a sum value of any type, images of
// different entities), the stages return a plan or an error, never panic.
func FuzzPlan(f *testing.F) {
	set, err := rules.LoadSet("../../rules/social.yaml")
	if err != nil {
		f.Fatal(err)
	}
	files, _ := filepath.Glob("../record/testdata/*.json")
	for _, path := range files {
		if b, err := os.ReadFile(path); err == nil {
			if raws, err := record.SplitEvent(b); err == nil {
				for _, r := range raws {
					f.Add([]byte(r))
				}
			}
		}
	}
	p := Generate(1, 400, Everything(), Options{})
	for i, op := range p.Ops {
		if i%7 != 0 || op.Put == nil {
			continue
		}
		f.Add([]byte(sampleRecord(f, record.Insert, nil, op.Put)))
		f.Add([]byte(sampleRecord(f, record.Remove, op.Put, nil)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := record.Decode(json.RawMessage(data))
		if err != nil {
			return
		}
		rp, err := plan.New(set).Plan(&c)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		plan.Coalesce([]plan.RecordPlan{rp, rp})
	})
}
