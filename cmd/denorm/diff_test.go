package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffCommand: exit status 0 when the files mean the same, 1 with the plan when
// something must be done, 2 for bad arguments and invalid rules.
func TestDiffCommand(t *testing.T) {
	t.Setenv("DENORM_DYNAMODB_ENDPOINT", "") // the plan's commands name no endpoint unless given one
	td := filepath.Join("..", "..", "internal", "rulesdiff", "testdata")
	bad := filepath.Join("..", "..", "internal", "rules", "testdata", "bad-five.yaml")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"cosmetic", []string{filepath.Join(td, "cosmetic", "old.yaml"), filepath.Join(td, "cosmetic", "new.yaml")}, 0,
			[]string{"unchanged  comment-author (copy)", "1. Nothing to do"}, nil},
		{"rollout", []string{"--table", "Social", filepath.Join(td, "rollout", "old.yaml"), filepath.Join(td, "rollout", "new.yaml")}, 1,
			[]string{"added      user-comment-count (count)", "removed    comment-author (copy)",
				"denorm backfill --rules " + filepath.Join(td, "rollout", "new.yaml") + " --table Social --only folder-size,user-comment-count",
				"denorm cleanup --rules " + filepath.Join(td, "rollout", "old.yaml") + " --new " + filepath.Join(td, "rollout", "new.yaml") + " --table Social --only comment-author"}, nil},
		{"endpoint", []string{"--table", "Social", "--endpoint", "http://localhost:8000", filepath.Join(td, "rollout", "old.yaml"), filepath.Join(td, "rollout", "new.yaml")}, 1,
			[]string{"Deploy the stream processor (denorm local: restart it; LocalStack: localstack/localstack.sh deploy) with",
				"--table Social --endpoint http://localhost:8000 --only folder-size,user-comment-count"}, nil},
		{"flags after the files", []string{filepath.Join(td, "rollout", "old.yaml"), filepath.Join(td, "rollout", "new.yaml"), "--table", "T1"}, 1,
			[]string{"--table T1 --only"}, nil},
		{"one file", []string{filepath.Join(td, "rollout", "old.yaml")}, 2, nil, []string{"usage: denorm diff", "want the two rules files"}},
		{"invalid rules", []string{filepath.Join(td, "rollout", "old.yaml"), bad}, 2, nil, []string{"bad-five.yaml:10:9:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			out, errOut := captureOutput(t, func() { code = run(append([]string{"diff"}, tc.args...)) })
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestDiffJSON(t *testing.T) {
	td := filepath.Join("..", "..", "internal", "rulesdiff", "testdata", "counters")
	var code int
	out, _ := captureOutput(t, func() {
		code = run([]string{"diff", "--json", filepath.Join(td, "old.yaml"), filepath.Join(td, "new.yaml")})
	})
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var got struct {
		NeedsAction bool     `json:"needsAction"`
		Backfill    []string `json:"backfill"`
		Rules       []struct {
			Name    string `json:"name"`
			Status  string `json:"status"`
			Cleanup *struct {
				Attributes []string `json:"attributes"`
				State      []string `json:"state"`
			} `json:"cleanup"`
		} `json:"rules"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !got.NeedsAction || strings.Join(got.Backfill, ",") != "folder-file-count,user-post-count" {
		t.Errorf("needsAction %t, backfill %v", got.NeedsAction, got.Backfill)
	}
	for _, r := range got.Rules {
		if r.Name == "post-comment-count" && (r.Status != "removed" || r.Cleanup == nil || strings.Join(r.Cleanup.Attributes, ",") != "_dn_cv,commentCount" || strings.Join(r.Cleanup.State, ",") != "commentCount") {
			t.Errorf("post-comment-count: %+v", r)
		}
	}
}

// The flags of rule changes are checked before any call to DynamoDB.
func TestRuleChangeFlags(t *testing.T) {
	social := filepath.Join("..", "..", "rules", "social.yaml")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"backfill unknown rule", []string{"backfill", social, "--table", "Social", "--only", "post-comment-count,nope"},
			`no rule "nope" in ` + social + " (rules: comment-author, member-name"},
		{"backfill --rule and --only", []string{"backfill", social, "--table", "Social", "--only", "a", "--rule", "b"}, "--rule and --only cannot be used together"},
		{"backfill negative settle", []string{"backfill", social, "--table", "Social", "--settle", "-1s"}, "--settle cannot be negative"},
		{"backfill negative processor wait", []string{"backfill", social, "--table", "Social", "--processor-wait", "-1s"}, "--processor-wait cannot be negative"},
		{"verify unknown rule", []string{"verify", social, "--table", "Social", "--only", "x,y"}, `no rule "x", "y"`},
		{"cleanup without rules named", []string{"cleanup", social, "--table", "Social"}, "name the rules to clean up with --only"},
		{"cleanup unknown rule", []string{"cleanup", social, "--table", "Social", "--only", "nope"}, `no rule "nope"`},
		{"cleanup without table", []string{"cleanup", social, "--only", "comment-author"}, "--table is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			_, errOut := captureOutput(t, func() { code = run(tc.args) })
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, errOut)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errOut)
			}
		})
	}
}

// One piece of advice per cause of what a backfill left, and none for a cause it lacks.
func TestBackfillLeft(t *testing.T) {
	for _, tc := range []struct {
		conflicts, failed, problems int64
		want                        string
	}{
		{2, 0, 0, "2 targets kept changing during the run and were left: run the same command again"},
		{0, 1, 0, "1 writes failed: fix the cause the examples above give, then run the same command again"},
		{0, 0, 3, "3 items the rules cannot evaluate (examples above): fix them in the application"},
		{1, 0, 1, "1 targets kept changing during the run and were left: run the same command again; 1 items the rules cannot evaluate (examples above): fix them in the application"},
	} {
		if got := backfillLeft(tc.conflicts, tc.failed, tc.problems).Error(); got != tc.want {
			t.Errorf("backfillLeft(%d, %d, %d) = %q, want %q", tc.conflicts, tc.failed, tc.problems, got, tc.want)
		}
	}
}
