package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/ops/opstest"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// fixture is a table built from rules/social.yaml on DynamoDB Local.
type fixture struct {
	t     *testing.T
	db    *dynamodb.Client
	table string
	ev    *ops.Evaluator
}

func newFixture(t *testing.T, items []opstest.Item) *fixture {
	t.Helper()
	return newFixtureOf(t, "../../rules/social.yaml", items)
}

// newFixtureOf is a table for the rules file at path, holding items.
func newFixtureOf(t *testing.T, path string, items []opstest.Item) *fixture {
	t.Helper()
	db, _ := ddbtest.Clients(t)
	f, err := rules.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ops.NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	name, _ := ddbtest.NewTable(t, db, f.Table)
	if err := opstest.Load(context.Background(), db, name, items); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, db: db, table: name, ev: ev}
}

func (fx *fixture) config(repair bool) ops.Config {
	return ops.Config{API: fx.db, Table: fx.table, Eval: fx.ev, Repair: repair, Segments: 4, PageSize: 100, Examples: 3}
}

func (fx *fixture) run(cfg ops.Config) *ops.Report {
	fx.t.Helper()
	rep, err := ops.Run(context.Background(), cfg)
	if err != nil {
		fx.t.Fatalf("%s: %v", cfg.Mode, err)
	}
	fx.t.Logf("%s: %d items scanned in %.2fs: %.0f items/s, %d writes", cfg.Mode, rep.Scanned, rep.Seconds, rep.ItemsPerSecond, rep.Writes)
	return rep
}

// drift returns the report's drift per rule (rules without drift left out).
func drift(rep *ops.Report) map[string]int {
	out := map[string]int{}
	for _, r := range rep.Rules {
		if r.Drift > 0 {
			out[r.Rule] = int(r.Drift)
		}
	}
	return out
}

func requireClean(t *testing.T, rep *ops.Report) {
	t.Helper()
	if !rep.Clean() {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("not clean:\n%s", b.String())
	}
}

// TestVerifyAndRepair: on a correct table verify is clean; with 1% of every rule's targets
// corrupted it finds exactly those, --repair fixes them, a second verify is clean, and the
// table equals the correct one again.
func TestVerifyAndRepair(t *testing.T) {
	data := opstest.Correct(1, opstest.Small)
	fx := newFixture(t, data.Items())
	ctx := context.Background()

	cfg := fx.config(false)
	cfg.Mode = "verify (correct table)"
	rep := fx.run(cfg)
	requireClean(t, rep)
	for _, r := range rep.Rules {
		if r.Checked == 0 {
			t.Errorf("rule %s checked no targets", r.Rule)
		}
	}
	if n := rep.Scanned; n != 2*int64(data.Len()) {
		t.Errorf("scanned %d items, want 2 x %d", n, data.Len())
	}

	c := data.Corrupt(0.01)
	if err := opstest.Apply(ctx, fx.db, fx.table, c); err != nil {
		t.Fatal(err)
	}
	t.Logf("corrupted per rule: %v", c.PerRule)
	if len(c.PerRule) != len(fx.ev.Rules()) {
		t.Fatalf("corruption touches %d rules, want all %d", len(c.PerRule), len(fx.ev.Rules()))
	}
	cfg.Mode = "verify (corrupted)"
	rep = fx.run(cfg)
	if got := drift(rep); !reflect.DeepEqual(got, c.PerRule) {
		t.Fatalf("drift per rule\n got %v\nwant %v", got, c.PerRule)
	}
	for _, r := range rep.Rules {
		if len(r.Examples) == 0 || len(r.Examples) > 3 {
			t.Errorf("rule %s: %d examples, want 1 to 3", r.Rule, len(r.Examples))
		}
	}
	var text strings.Builder
	rep.WriteText(&text)
	t.Logf("report:\n%s", text.String())

	cfg = fx.config(true)
	cfg.Mode = "verify --repair"
	rep = fx.run(cfg)
	for _, r := range rep.Rules {
		if want := int64(c.PerRule[r.Rule]); r.Drift != want || r.Repaired != want || r.Conflicts+r.Failed+r.Resolved != 0 {
			t.Errorf("repair %s: %+v, want %d drifted and repaired", r.Rule, r.RuleStats, want)
		}
	}

	cfg = fx.config(false)
	cfg.Mode = "verify (repaired)"
	requireClean(t, fx.run(cfg))
	correct := opstest.Correct(1, opstest.Small)
	fx.compare(correct.Items(), zeroCounter)
	// The counters were repaired in their state items, which the targets show.
	fx.checkStates(correct, c.Counters)
}

// checkStates checks the state items of count and sum targets against want, the correct
// table: each holds its target's true values and its target,
// where there is one, shows the copy of its version. Every target of counters has a
// state item holding the attributes listed, unless their true values are 0 (what an absent
// state holds).
func (fx *fixture) checkStates(want *opstest.Data, counters map[[2]string][]string) {
	t := fx.t
	t.Helper()
	got, err := opstest.Scan(context.Background(), fx.db, fx.table)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[[2]string]opstest.Item{}
	for _, it := range got {
		byKey[[2]string{it["pk"].(*types.AttributeValueMemberS).Value, it["sk"].(*types.AttributeValueMemberS).Value}] = it
	}
	bad := 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
		if bad++; bad > 10 {
			t.Fatal("too many differences")
		}
	}
	for k, st := range byKey {
		pk, ok := strings.CutPrefix(k[0], rules.StatePrefix)
		if !ok {
			continue
		}
		tk := [2]string{pk, k[1]}
		truth := want.Get(tk[0], tk[1])
		if truth == nil {
			// A target that does not exist (a deleted user's): its state holds its sources'
			// total, as the processor keeps it, which want does not list
			// (tests.TestBackfillWhileATargetIsAway checks those).
			continue
		}
		for a, v := range st {
			if a == "pk" || a == "sk" || a == "ttl" || strings.HasPrefix(a, rules.ReservedPrefix) {
				continue
			}
			if !value.NumberOf(v).Sub(value.NumberOf(truth[a])).IsZero() {
				fail("the state item of %v holds %s = %v, want %v", tk, a, show(opstest.Item{a: v}), show(opstest.Item{a: truth[a]}))
			}
		}
		if target := byKey[tk]; target != nil && !value.Equal(target[rules.CopyVersionAttr], st[rules.StateVersionAttr]) {
			fail("%v shows the copy of version %v, its state item is at %v", tk, show(opstest.Item{"v": target[rules.CopyVersionAttr]}), show(opstest.Item{"v": st[rules.StateVersionAttr]}))
		}
	}
	for tk, attrs := range counters {
		st := byKey[opstest.StateKey(tk[0], tk[1])]
		for _, a := range attrs {
			if st[a] == nil && !value.NumberOf(want.Get(tk[0], tk[1])[a]).IsZero() {
				fail("the state item of %v lacks %s (state item: %t)", tk, a, st != nil)
			}
		}
	}
}

// compare checks that the table holds exactly want's items, ignoring Denorm's reserved
// attributes and items, and attributes ignore says.
func (fx *fixture) compare(want []opstest.Item, ignore func(attr string, v types.AttributeValue) bool) {
	t := fx.t
	t.Helper()
	got, err := opstest.Scan(context.Background(), fx.db, fx.table)
	if err != nil {
		t.Fatal(err)
	}
	norm := func(items []opstest.Item) map[[2]string]opstest.Item {
		out := map[[2]string]opstest.Item{}
		for _, it := range items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			if rules.IsReserved(pk) {
				continue
			}
			c := opstest.Item{}
			for k, v := range it {
				if strings.HasPrefix(k, rules.ReservedPrefix) || (ignore != nil && ignore(k, v)) {
					continue
				}
				c[k] = v
			}
			out[[2]string{pk, it["sk"].(*types.AttributeValueMemberS).Value}] = c
		}
		return out
	}
	g, w := norm(got), norm(want)
	bad := 0
	for k, wi := range w {
		gi, ok := g[k]
		switch {
		case !ok:
			t.Errorf("missing item %v", k)
			bad++
		case !itemsEqual(gi, wi):
			t.Errorf("item %v\n got %v\nwant %v", k, show(gi), show(wi))
			bad++
		}
		if bad > 10 {
			t.Fatal("too many differences")
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("unexpected item %v", k)
		}
	}
}

func itemsEqual(a, b opstest.Item) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !value.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func show(it opstest.Item) string {
	var parts []string
	for k, v := range it {
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			parts = append(parts, k+"="+x.Value)
		case *types.AttributeValueMemberN:
			parts = append(parts, k+"="+x.Value)
		}
	}
	return strings.Join(parts, " ")
}

// zeroCounter drops counters holding 0: for a target without sources, 0 and absent are
// both right.
func zeroCounter(attr string, v types.AttributeValue) bool {
	n, ok := v.(*types.AttributeValueMemberN)
	return ok && n.Value == "0" && strings.HasSuffix(attr, "Count")
}

// rawIgnore also drops what a backfill cannot know: the stale names the correct table keeps
// for deleted users (onSourceDelete: keep).
func rawIgnore(attr string, v types.AttributeValue) bool {
	if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == "Former user" {
		return true
	}
	return zeroCounter(attr, v)
}

// TestBackfillRawTable: a table holding only sources (no copies, counters or mirrors)
// becomes, after one backfill, the table the rules describe: verify is clean and every
// item equals the independently computed correct table.
func TestBackfillRawTable(t *testing.T) {
	fx := newFixture(t, opstest.Raw(2, opstest.Backfill).Items())
	cfg := fx.config(true)
	cfg.Mode = "backfill"
	cfg.Checkpoint = filepath.Join(t.TempDir(), "backfill.json")
	rep := fx.run(cfg)
	if rep.Unrepaired != 0 || rep.Problems != 0 || rep.Drift == 0 {
		t.Fatalf("backfill: drift %d, unrepaired %d, problems %d", rep.Drift, rep.Unrepaired, rep.Problems)
	}
	if _, err := os.Stat(cfg.Checkpoint); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoint left after a complete backfill: %v", err)
	}
	vc := fx.config(false)
	vc.Mode = "verify (after backfill)"
	requireClean(t, fx.run(vc))
	correct := opstest.Correct(2, opstest.Backfill)
	fx.compare(correct.Items(), rawIgnore)
	// Every count and sum was set in its target's state item, and copied.
	fx.checkStates(correct, correct.Counters())
}

// slowScan delays the Scan pages of the segments slow says, so a test can stop a run when
// some segments are finished and others are half way.
type slowScan struct {
	ops.API
	slow    func(seg int32) bool
	delay   time.Duration
	scanned atomic.Int64
}

func (s *slowScan) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if s.slow(aws.ToInt32(in.Segment)) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.delay):
		}
	}
	out, err := s.API.Scan(ctx, in, opts...)
	if err == nil {
		s.scanned.Add(int64(len(out.Items)))
	}
	return out, err
}

// checkpointDone reads which segments of round r, pass p (0 states, 1 sources, 2 targets) a
// checkpoint file says are done.
func checkpointDone(t *testing.T, path string, r, p int) []bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cp struct {
		Rounds []struct {
			Passes [3][]struct {
				Done bool `json:"done"`
			} `json:"passes"`
		} `json:"rounds"`
	}
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatal(err)
	}
	var out []bool
	for _, s := range cp.Rounds[r].Passes[p] {
		out = append(out, s.Done)
	}
	return out
}

// passOf is the report of pass p of round 1.
func passOf(t *testing.T, rep *ops.Report, p int) ops.PassReport {
	t.Helper()
	for _, pr := range rep.Passes {
		if pr.Round == 1 && pr.Pass == p {
			return pr
		}
	}
	t.Fatalf("no report of round 1, pass %d in %+v", p, rep.Passes)
	return ops.PassReport{}
}

func count(bs []bool) (n int) {
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// TestBackfillResumes: a backfill interrupted after some segments finished resumes from its
// checkpoint without scanning finished segments again, and without scanning any item of
// the sources pass twice; interrupted again in the repair pass, it resumes there; the
// result is a clean table.
func TestBackfillResumes(t *testing.T) {
	data := opstest.Raw(3, opstest.Backfill)
	fx := newFixture(t, data.Items())
	total := int64(data.Len())
	cp := filepath.Join(t.TempDir(), "backfill.json")
	ctx := context.Background()

	// interruptAfter runs a backfill whose segments 2 and 3 are slow, canceled once
	// segments 0 and 1 of the given pass of round 0 are done.
	interruptAfter := func(pass int) (*ops.Report, *slowScan) {
		api := &slowScan{API: fx.db, slow: func(seg int32) bool { return seg >= 2 }, delay: 150 * time.Millisecond}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var mu sync.Mutex
		done := 0
		cfg := fx.config(true)
		cfg.API, cfg.Checkpoint, cfg.Mode, cfg.PageSize = api, cp, "backfill (interrupted)", 20
		cfg.OnSegmentDone = func(round, p, seg int) {
			mu.Lock()
			defer mu.Unlock()
			if round == 0 && p == pass {
				if done++; done == 2 {
					cancel()
				}
			}
		}
		rep, err := ops.Run(cctx, cfg)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: err %v, want context.Canceled", err)
		}
		return rep, api
	}

	// 1. Interrupted in the sources pass: segments 0 and 1 done, 2 and 3 part way.
	rep1, _ := interruptAfter(1)
	if p0 := passOf(t, rep1, 0); p0.Segments != 4 || p0.Scanned != total {
		t.Fatalf("run 1, states pass: %+v, want the %d items once", p0, total)
	}
	done := checkpointDone(t, cp, 0, 1)
	t.Logf("run 1: pass 1 segments done %v, %d items scanned", done, passOf(t, rep1, 1).Scanned)
	if count(done) < 2 || count(done) == 4 {
		t.Fatalf("after run 1, done segments %v: want 2 or 3 of 4", done)
	}
	if passOf(t, rep1, 1).Scanned >= total {
		t.Fatalf("run 1 scanned %d of %d items: not interrupted", passOf(t, rep1, 1).Scanned, total)
	}

	// 2. Resumed, interrupted in the repair pass.
	rep2, _ := interruptAfter(2)
	if !rep2.Resumed {
		t.Fatal("run 2 did not resume")
	}
	if p0 := passOf(t, rep2, 0); p0.Segments != 0 || p0.Skipped != 4 {
		t.Fatalf("run 2 redid the states pass: %+v", p0)
	}
	p1 := passOf(t, rep2, 1)
	if p1.Skipped != count(done) || p1.Segments != 4-count(done) {
		t.Fatalf("run 2, pass 1: %d segments scanned, %d skipped; want %d and %d", p1.Segments, p1.Skipped, 4-count(done), count(done))
	}
	if got := passOf(t, rep1, 1).Scanned + p1.Scanned; got != total {
		t.Fatalf("pass 1 scanned %d + %d = %d items over two runs, want each of the %d once", passOf(t, rep1, 1).Scanned, p1.Scanned, got, total)
	}
	done2 := checkpointDone(t, cp, 0, 2)
	t.Logf("run 2: pass 1 resumed %d segments (%d items), pass 2 segments done %v", p1.Segments, p1.Scanned, done2)
	if count(done2) < 2 || count(done2) == 4 {
		t.Fatalf("after run 2, pass 2 done segments %v: want 2 or 3 of 4", done2)
	}

	// 3. Resumed to the end.
	api3 := &slowScan{API: fx.db, slow: func(int32) bool { return false }}
	cfg := fx.config(true)
	cfg.API, cfg.Checkpoint, cfg.Mode = api3, cp, "backfill (resumed)"
	rep3 := fx.run(cfg)
	if !rep3.Resumed || rep3.Unrepaired != 0 || rep3.Problems != 0 {
		var b strings.Builder
		rep3.WriteText(&b)
		t.Fatalf("run 3: resumed %v, unrepaired %d, problems %d\n%s", rep3.Resumed, rep3.Unrepaired, rep3.Problems, b.String())
	}
	if p := passOf(t, rep3, 1); p.Segments != 0 || p.Skipped != 4 || p.Scanned != 0 {
		t.Errorf("run 3 redid the sources pass: %+v", p)
	}
	if p := passOf(t, rep3, 2); p.Skipped != count(done2) || p.Segments != 4-count(done2) {
		t.Errorf("run 3, pass 2: %+v, want %d skipped", p, count(done2))
	}
	if _, err := os.Stat(cp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoint left after the backfill completed: %v", err)
	}
	vc := fx.config(false)
	vc.Mode = "verify (after resumed backfill)"
	requireClean(t, fx.run(vc))
	fx.compare(opstest.Correct(3, opstest.Backfill).Items(), rawIgnore)
}

// TestBackfillMaxWCU: writes are paced to --max-wcu by the capacity DynamoDB reports. One
// mirror rule at 5 WCU/s keeps it short.
func TestBackfillMaxWCU(t *testing.T) {
	fx := newFixture(t, opstest.Raw(4, opstest.Tiny).Items())
	f, err := rules.Load("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if fx.ev, err = ops.NewEvaluator(f, "user-posts"); err != nil {
		t.Fatal(err)
	}
	cfg := fx.config(true)
	cfg.Mode, cfg.MaxWCU = "backfill --rule user-posts --max-wcu 5", 5
	var bar bytes.Buffer
	cfg.Progress = &bar
	rep := fx.run(cfg)
	if !strings.Contains(bar.String(), "items/s") || !strings.Contains(bar.String(), "100%") {
		t.Errorf("progress bar output %q: want items/s and 100%%", bar.String())
	}
	if rep.Writes != int64(opstest.Tiny.Posts) || rep.ConsumedWCU < float64(opstest.Tiny.Posts) {
		t.Fatalf("%d writes, %.0f WCU: want a mirror write per post", rep.Writes, rep.ConsumedWCU)
	}
	// The first second's worth rides the bucket; the rest is paced at 5 per second.
	if min := (rep.ConsumedWCU - 5 - 1) / 5; rep.Seconds < min {
		t.Fatalf("%.0f WCU in %.2fs, faster than 5 WCU/s allows (%.2fs)", rep.ConsumedWCU, rep.Seconds, min)
	}
	t.Logf("%.0f WCU in %.2fs: %.1f WCU/s", rep.ConsumedWCU, rep.Seconds, rep.ConsumedWCU/rep.Seconds)
}

// TestThroughput measures verify and backfill on a few thousand items; it runs only with
// DENORM_OPS_THROUGHPUT=1 (docs/operations.md quotes its figures).
func TestThroughput(t *testing.T) {
	if os.Getenv("DENORM_OPS_THROUGHPUT") == "" {
		t.Skip("set DENORM_OPS_THROUGHPUT=1 to measure items/s")
	}
	for _, segments := range []int{1, 4} {
		fx := newFixture(t, opstest.Raw(5, opstest.Small).Items())
		cfg := fx.config(true)
		cfg.Segments, cfg.PageSize = segments, 0
		cfg.Mode = fmt.Sprintf("backfill, %d segments", segments)
		fx.run(cfg)
		vc := fx.config(false)
		vc.Segments, vc.PageSize = segments, 0
		vc.Mode = fmt.Sprintf("verify, %d segments", segments)
		requireClean(t, fx.run(vc))
	}
}
