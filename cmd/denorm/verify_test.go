package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/ops/opstest"
	"github.com/denorm/denorm/internal/rules"
)

var socialRules = filepath.Join("..", "..", "rules", "social.yaml")

// opsTable creates a social table on DynamoDB Local holding items.
func opsTable(t *testing.T, items []opstest.Item) (endpoint, table string) {
	t.Helper()
	endpoint = ddbtest.Endpoint(t)
	db, _ := ddbtest.Clients(t)
	f, err := rules.Load(socialRules)
	if err != nil {
		t.Fatal(err)
	}
	table, _ = ddbtest.NewTable(t, db, f.Table)
	if err := opstest.Load(context.Background(), db, table, items); err != nil {
		t.Fatal(err)
	}
	return endpoint, table
}

// denorm runs the command with args and returns its exit code and output.
func denorm(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var code int
	out, errOut := captureOutput(t, func() { code = run(args) })
	return code, out, errOut
}

func TestOpsFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"verify"}, 2, "no rules file"},
		{[]string{"backfill", "--rules", socialRules}, 2, "--table is required"},
		{[]string{"verify", "--rules", socialRules, "--table", "Social", "extra"}, 2, "unexpected arguments"},
		{[]string{"verify", "--rules", socialRules, "--table", "Social", "--segments", "0"}, 2, "--segments 0"},
		{[]string{"backfill", "--rules", socialRules, "--table", "Social", "--max-wcu", "-1"}, 2, "cannot be negative"},
		{[]string{"verify", "--rules", socialRules, "--table", "Social", "--rule", "nope"}, 2, `no rule "nope"`},
		{[]string{"verify", "--rules", "missing.yaml", "--table", "Social"}, 2, "reading rules file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := denorm(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.stderr)
			}
		})
	}
}

// jsonReport is the part of the --json report the tests read.
type jsonReport struct {
	Drift, Unrepaired int64
	ItemsPerSecond    float64
	Rules             []struct {
		Rule            string
		Drift, Repaired int64
		Examples        []map[string]any
	}
}

// TestVerifyCommand: exit 0 on a correct table; on a corrupted one exit 1 with the drift
// per rule in the JSON report and examples naming key, attribute, got and want; --repair
// fixes it (still exit 1: drift was found) and the next verify exits 0.
func TestVerifyCommand(t *testing.T) {
	data := opstest.Correct(11, opstest.Tiny)
	ep, table := opsTable(t, data.Items())
	base := []string{"verify", "--rules", socialRules, "--table", table, "--endpoint", ep, "--no-progress"}

	code, out, errOut := denorm(t, base...)
	if code != 0 || !strings.Contains(out, "verify "+table+": scanned") || !strings.Contains(out, "items/s") {
		t.Fatalf("clean table: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	db, _ := ddbtest.Clients(t)
	c := data.Corrupt(0.01)
	if err := opstest.Apply(context.Background(), db, table, c); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = denorm(t, append(base, "--json", "--examples", "2")...)
	if code != 1 || !strings.Contains(errOut, "drifted items") {
		t.Fatalf("corrupted: exit %d, stderr %q", code, errOut)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	total := 0
	for _, r := range rep.Rules {
		if int(r.Drift) != c.PerRule[r.Rule] {
			t.Errorf("rule %s: drift %d, want %d", r.Rule, r.Drift, c.PerRule[r.Rule])
		}
		total += c.PerRule[r.Rule]
		if r.Drift > 0 && (len(r.Examples) == 0 || len(r.Examples) > 2) {
			t.Errorf("rule %s: %d examples, want 1 or 2", r.Rule, len(r.Examples))
		}
		for _, ex := range r.Examples {
			if ex["pk"] == nil || ex["problem"] == nil {
				t.Errorf("rule %s: example without key or problem: %v", r.Rule, ex)
			}
		}
	}
	if int(rep.Drift) != total || rep.ItemsPerSecond <= 0 {
		t.Errorf("report drift %d (want %d), items/s %.0f", rep.Drift, total, rep.ItemsPerSecond)
	}

	// No stream processor runs on this fixture, and none will: nothing on its stream is
	// ever applied, so the repair need not ask one.
	code, out, errOut = denorm(t, append(base, "--repair", "--no-processor-check")...)
	if code != 1 || !strings.Contains(errOut, "0 not repaired") {
		t.Fatalf("--repair: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, errOut = denorm(t, base...); code != 0 {
		t.Fatalf("after repair: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestBackfillCommand: a dry run reports without writing; a backfill refuses to write
// counters when no stream processor answers its probe (exit 3); told not to ask, it
// completes with a checkpoint, removes it, and leaves a table verify finds clean; a
// checkpoint of another table is refused.
func TestBackfillCommand(t *testing.T) {
	ep, table := opsTable(t, opstest.Raw(12, opstest.Tiny).Items())
	cp := filepath.Join(t.TempDir(), "cp.json")
	base := []string{"--rules", socialRules, "--table", table, "--endpoint", ep, "--no-progress"}

	code, out, errOut := denorm(t, append([]string{"backfill", "--dry-run"}, base...)...)
	if code != 0 || !strings.Contains(out, "backfill --dry-run") || !strings.Contains(out, ", 0 writes") {
		t.Fatalf("dry run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, _, _ := denorm(t, append([]string{"verify"}, base...)...); code != 1 {
		t.Fatalf("verify after a dry run: exit %d, want 1 (nothing written)", code)
	}

	// No stream processor runs on this fixture, and none will: nothing on its stream is
	// ever applied, so the backfill need not ask one.
	if code, _, errOut = denorm(t, append([]string{"backfill", "--processor-wait", "200ms"}, base...)...); code != 3 || !strings.Contains(errOut, "did not answer a probe") {
		t.Fatalf("backfill without a stream processor: exit %d, stderr %q; want 3", code, errOut)
	}
	base = append(base, "--no-processor-check")
	code, out, errOut = denorm(t, append([]string{"backfill", "--max-wcu", "0", "--segments", "2", "--checkpoint", cp}, base...)...)
	if code != 0 {
		t.Fatalf("backfill: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(cp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoint not removed: %v", err)
	}
	if code, out, errOut = denorm(t, append([]string{"verify"}, base[:len(base)-1]...)...); code != 0 {
		t.Fatalf("verify after backfill: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// A checkpoint written for another table is not resumed.
	if err := os.WriteFile(cp, []byte(`{"version":2,"table":"other","rules":"x","segments":4,"rounds":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = denorm(t, append([]string{"backfill", "--checkpoint", cp}, base...)...)
	if code != 1 || !strings.Contains(errOut, "checkpoint belongs to another run") {
		t.Fatalf("foreign checkpoint: exit %d, stderr %q", code, errOut)
	}
}
