package plan_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func socialSet(t testing.TB) *rules.Set {
	t.Helper()
	set, err := rules.LoadSet("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// describe plans every record of a Lambda event and describes plans and batch.
func describe(t testing.TB, set *rules.Set, event []byte) string {
	t.Helper()
	raws, err := record.SplitEvent(event)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	p := plan.New(set)
	var plans []plan.RecordPlan
	for i, raw := range raws {
		c, err := record.Decode(raw)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		fmt.Fprintf(&buf, "record %d: %s seq %s ttl=%v\n", i+1, c.Op, c.Seq, c.TTL)
		rp, err := p.Explain(&c)
		if err != nil {
			fmt.Fprintf(&buf, "  error: %v\n", err)
			continue
		}
		rp.Describe(&buf)
		plans = append(plans, rp)
	}
	b := plan.Coalesce(plans)
	fmt.Fprintf(&buf, "coalesced: writes=%d fanouts=%d pulls=%d watermarked=%d relays=%d marked=%d jobs=%d refreshes=%d\n",
		len(b.Writes), len(b.FanOuts), len(b.Pulls), len(b.Watermarked), len(b.Relays), len(b.Marked), len(b.Jobs), len(b.Refreshes))
	for _, p := range b.Probes {
		fmt.Fprintf(&buf, "  probe %s (record %d)\n", p.Key, p.Rec+1)
	}
	for _, w := range b.Watermarked {
		attrs, lo, hi := w.Sum("")
		for _, a := range attrs {
			fmt.Fprintf(&buf, "  %s %s: %s %s seq %s..%s\n", w.Watermark, w.Target, a.Attribute, a.Amount, lo, hi)
		}
	}
	for _, f := range b.Refreshes {
		copy := ""
		if f.Copy {
			copy = " (copy whatever the target shows)"
		}
		fmt.Fprintf(&buf, "  refresh %s: %s%s\n", f.Target, strings.Join(f.Attrs, ", "), copy)
	}
	for _, g := range b.Relays {
		amounts, lo, hi := g.After("")
		names := make([]string, 0, len(amounts))
		for n := range amounts {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&buf, "  relay %s -> %s (%s): %s %s seq %s..%s\n", g.Source, g.Target, plan.RelayKey(g.Target, g.Source).SK, n, amounts[n], lo, hi)
		}
	}
	for _, ev := range b.Marked {
		for _, tg := range ev.Targets {
			for _, a := range tg.Attrs {
				fmt.Fprintf(&buf, "  marker %s: %s %s %s\n", ev.EventID, tg.Target, a.Attribute, a.Amount)
			}
		}
	}
	return buf.String()
}

// Every testdata event against rules/social.yaml, compared with its golden plan.
func TestGoldenPlans(t *testing.T) {
	set := socialSet(t)
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no testdata events")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			event, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := describe(t, set, event)
			golden := strings.TrimSuffix(f, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/plan -update)", err)
			}
			if got != string(want) {
				t.Errorf("plan differs from %s:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}
