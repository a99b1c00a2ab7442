package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/rules"
)

// TestSmoke runs the comment storm at a tiny size through both systems on DynamoDB Local
// and checks the report: both ran, exactly once held, the figures are there and Denorm's
// watermark counters cost less than the baseline's transactions.
func TestSmoke(t *testing.T) {
	ep := ddbtest.Endpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Endpoint: ep, RulesPath: "../../rules/social.yaml", Workloads: []string{"comment-storm"},
		Reps: 1, Size: Tiny, Ceiling: -1, WarmUp: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AllVerified || len(rep.Workloads) != 1 {
		t.Fatalf("report: verified %v, %d workloads", rep.AllVerified, len(rep.Workloads))
	}
	w := rep.Workloads[0]
	if len(w.Runs) != 2 || w.Runs[0].System != Denorm || w.Runs[1].System != Naive {
		t.Fatalf("runs: %+v", w.Runs)
	}
	for _, r := range w.Runs {
		t.Logf("%s: %v", r.System, r.PhaseSeconds)
		if r.Usage.WCU <= 0 || r.RecordsPerSec <= 0 || r.Lag.N != Tiny.StormLive || !r.Verify.Clean {
			t.Errorf("%s run: WCU %.0f, records/s %.0f, lag samples %d (want %d), verify %+v",
				r.System, r.Usage.WCU, r.RecordsPerSec, r.Lag.N, Tiny.StormLive, r.Verify)
		}
	}
	// 40 comments on 4 posts in one batch: 4 watermarked updates against 40 transactions.
	if w.Runs[1].Usage.Transactions != Tiny.StormComments {
		t.Errorf("baseline made %d transactions, want one per comment (%d)", w.Runs[1].Usage.Transactions, Tiny.StormComments)
	}
	if w.FloorWCU <= 0 || w.Ratios.WCUVsBaseline <= 0 || w.Ratios.WCUVsBaseline > 0.1 {
		t.Errorf("floor %.0f WCU, Denorm/baseline %.3f (want <= 0.1)", w.FloorWCU, w.Ratios.WCUVsBaseline)
	}
	if w.Runs[0].HandlerWCU != w.Runs[0].Usage.ReportedWCU {
		t.Errorf("Denorm's own stats say %.1f WCU, the meter saw %.1f reported", w.Runs[0].HandlerWCU, w.Runs[0].Usage.ReportedWCU)
	}
	var md, js bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| comment-storm | Denorm |") {
		t.Errorf("markdown lacks the Denorm row:\n%s", md.String())
	}
	if err := json.NewEncoder(&js).Encode(rep); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Workloads) != 1 {
		t.Errorf("JSON does not read back: %v", err)
	}
}

// TestHotTargetSmoke runs the hot target at a tiny size, split and unsplit: both systems
// feed the one global counter from concurrent lanes, exactly once holds, the report gives
// WCU per delta, and the split takes the state item off the top of the most written items.
func TestHotTargetSmoke(t *testing.T) {
	ep := ddbtest.Endpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Endpoint: ep, RulesPath: "../../rules/social.yaml", Workloads: []string{"hot-target", "hot-target-unsplit"},
		Reps: 1, Size: Tiny, Ceiling: -1, WarmUp: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Workloads[0]
	if !rep.AllVerified || w.ParallelizationFactor != hotTargetFactor || w.Deltas != Tiny.HotPosts {
		t.Fatalf("verified %v, factor %d, deltas %d (want %d)", rep.AllVerified, w.ParallelizationFactor, w.Deltas, Tiny.HotPosts)
	}
	for _, r := range w.Runs {
		if !r.Overlapped {
			t.Errorf("%s: no two invocations overlapped; the lanes did not run concurrently", r.System)
		}
	}
	if w.Ratios.WCUVsBaseline <= 0 || w.Ratios.WCUVsBaseline > 1 {
		t.Errorf("Denorm/baseline WCU %.3f, want <= 1", w.Ratios.WCUVsBaseline)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| hot-target | 4 | 40 |") {
		t.Errorf("markdown lacks the WCU per delta row:\n%s", md.String())
	}
	split, unsplit := w.Denorm, rep.Workloads[1].Denorm
	t.Logf("most written: split %s (%.0f WCU), unsplit %s (%.0f WCU)", split.HotItem, split.HotItemWCU, unsplit.HotItem, unsplit.HotItemWCU)
	if unsplit.HotItem != rules.StatePrefix+"STATS#global STATS" {
		t.Errorf("unsplit, the most written item is %s, want the state item", unsplit.HotItem)
	}
	if strings.HasPrefix(split.HotItem, rules.StatePrefix) || split.HotItemWCU >= unsplit.HotItemWCU {
		t.Errorf("split, the most written item is %s with %.0f WCU; want no state item, and less than the unsplit %.0f", split.HotItem, split.HotItemWCU, unsplit.HotItemWCU)
	}
}

// TestLatestNSmoke runs the embedded-list workload at a tiny size: Denorm and the
// hand-written baseline both end with every post's list right (denorm verify), and the
// report holds the list target.
func TestLatestNSmoke(t *testing.T) {
	ep := ddbtest.Endpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Endpoint: ep, RulesPath: "../../rules/social.yaml", Workloads: []string{"latest-n"},
		Reps: 1, Size: Tiny, Ceiling: -1, WarmUp: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Workloads[0]
	if !rep.AllVerified {
		t.Fatal("a run did not verify clean")
	}
	found := false
	for _, c := range w.Checks {
		found = found || c.Target == TargetLists
	}
	if !found || w.Ratios.WCUVsFloor <= 0 {
		t.Errorf("checks %v, WCU vs floor %.2f: want the list target and a ratio", w.Checks, w.Ratios.WCUVsFloor)
	}
}

// TestFormsSmoke runs the workloads of the comparison, distinct and top-into-bucket forms
// at a tiny size: every run verifies clean; the baseline runs only where it implements the
// rule (the comparison), and the report gives each workload's WCU per source write.
func TestFormsSmoke(t *testing.T) {
	ep := ddbtest.Endpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names := []string{"large-files", "distinct-roles", "daily-top-files"}
	rep, err := Run(ctx, Config{Endpoint: ep, RulesPath: "../../rules/social.yaml", Workloads: names,
		Reps: 1, Size: Tiny, Ceiling: -1, WarmUp: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AllVerified || len(rep.Workloads) != len(names) {
		t.Fatalf("report: verified %v, %d workloads", rep.AllVerified, len(rep.Workloads))
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, w := range rep.Workloads {
		wantRuns := 1
		if !w.NoBaseline {
			wantRuns = 2
		}
		if len(w.Runs) != wantRuns || w.Denorm.WCU <= 0 || !w.Denorm.Verified {
			t.Errorf("%s: %d runs (want %d), Denorm WCU %.0f, verified %v", w.Name, len(w.Runs), wantRuns, w.Denorm.WCU, w.Denorm.Verified)
		}
		row := fmt.Sprintf("| %s | %s | %d | ", w.Name, strings.Join(w.Rules, ", "), w.Ops)
		if !strings.Contains(md.String(), row) {
			t.Errorf("markdown lacks the WCU per source write row %q:\n%s", row, md.String())
		}
	}
	if w := rep.Workloads[0]; w.NoBaseline || w.Baseline.WCU <= 0 || !w.Baseline.Verified {
		t.Errorf("large-files: the baseline did not run clean (WCU %.0f, verified %v)", w.Baseline.WCU, w.Baseline.Verified)
	}
}
