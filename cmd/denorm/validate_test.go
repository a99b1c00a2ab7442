package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// captureOutput runs fn with os.Stdout and os.Stderr sent to files and returns both.
func captureOutput(t *testing.T, fn func()) (stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	defer func() { os.Stdout, os.Stderr = oldOut, oldErr }()
	fn()
	outF.Close()
	errF.Close()
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	return string(o), string(e)
}

// writeFile writes a file under a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestValidateCommand(t *testing.T) {
	good := filepath.Join("..", "..", "rules", "social.yaml")
	bad := filepath.Join("..", "..", "internal", "rules", "testdata", "bad-five.yaml")
	buckets := filepath.Join("..", "..", "internal", "rules", "testdata", "valid", "buckets.yaml")
	badBuckets := filepath.Join("..", "..", "internal", "rules", "testdata", "bad-buckets.yaml")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	unclosed := writeFile(t, "unclosed.yaml", "version: 1\nentities:\n  User:\n    attributes: [name, email\n    pk: \"USER#{userId}\"\n    sk: PROFILE\n")
	renamed := writeFile(t, "renamed.yaml", `version: 1
entities:
  User: {pk: "USER#{userId}", sk: PROFILE, attributes: [name, taskCount]}
  Task: {pk: "PROJECT#{projectId}", sk: "TASK#{taskId}", attributes: [title, assigneeId]}
  AssignedTask: {pk: "USER#{assigneeId}", sk: "TASK#{taskId}", attributes: [title]}
rules:
  - name: assigned-count
    count: {of: AssignedTask, into: User, attribute: taskCount}
`)
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string // fragments
		stderr     []string
		stderrNone bool
	}{
		{"good file", []string{good}, 0, []string{good + ": ok (12 entities, 20 rules)"}, nil, true},
		{"bad file", []string{bad}, 1, nil, []string{
			bad + ":10:9: entity \"Comment\": bad sk template",
			bad + ":18:5: rule \"avatar-loop\": rules form a cycle",
			"denorm validate: 1 of 1 files invalid",
		}, false},
		{"good and bad", []string{good, bad}, 1, []string{good + ": ok"}, []string{bad + ":15:42:"}, false},
		{"missing file", []string{missing}, 1, nil, []string{missing + ": reading rules file:"}, false},
		{"no file", nil, 2, nil, []string{"usage: denorm validate FILE..."}, false},
		{"--rules", []string{"--rules", good}, 0, []string{good + ": ok (12 entities, 20 rules)"}, nil, true},
		// A rule into a time bucket says what one bucket item is and when it expires.
		{"time buckets", []string{buckets}, 0, []string{buckets + ": ok (5 entities, 3 rules)\n" +
			`  rule "post-daily-comments": Comment by the UTC day of createdAt into PostDay (sk "DAY#{createdAt:day}"), created on first use; expires 90d after its day ends (written to ttl)` + "\n" +
			`  rule "customer-daily-orders": Order by the UTC day of placedAt into CustomerDay (sk "DAY#{placedAt:day}"), created on first use; expires 400d after its day ends (written to ttl)` + "\n"}, nil, true},
		{"time bucket mistakes", []string{badBuckets}, 1, nil, []string{
			badBuckets + `:19:9: entity "PostWeek": bad sk template: key template syntax: "WEEK#{createdAt:week}": variable {createdAt:week}: "week" is not a time bucket`,
			badBuckets + `:23:32: rule "daily-comments": PostDay's sk "DAY#{createdAt:day}" holds a time bucket ({createdAt:day}): a bucket item does not exist before its first source`,
			badBuckets + `:23:32: rule "daily-comments": PostDay's sk "DAY#{createdAt:day}" buckets {createdAt}, the time of each Comment, which Comment does not have: did you mean {created}?`,
			badBuckets + `:23:71: rule "daily-comments": ttl is written to the table's TTL attribute, and the table has none: add ttlAttribute: ttl under table`,
			badBuckets + `:25:31: rule "last-text": PostDay's sk "DAY#{createdAt:day}" holds a time bucket ({createdAt:day}): a bucket item stands for every source of its day`,
			badBuckets + `:27:13: rule "day-newest-text": rule "daily-comments" (line 22) gives PostDay ttl 90d and this rule no ttl`,
			badBuckets + `:29:83: rule "post-last-comment": ttl counts from the end of the target's time bucket, and Post's keys hold none`,
		}, false},
		// An unclosed '[' is reported where it opens (line 4), not where YAML gave up.
		{"unclosed bracket", []string{unclosed}, 1, nil, []string{
			unclosed + ":4:17: YAML syntax: the list this '[' opens lacks a ',' or its closing ']' (expected at line 5, column 7)"}, false},
		// A variable named differently from the entity whose key holds it: the fix is a rename.
		{"variable named otherwise", []string{renamed}, 1, nil, []string{
			renamed + `:8:37: rule "assigned-count": User's pk "USER#{userId}" needs {userId}, which AssignedTask does not have: each AssignedTask must name the User it adds to; ` +
				`did you mean {assigneeId}? AssignedTask's pk "USER#{assigneeId}" names it assigneeId: use one name in both templates, or add userId to AssignedTask's attributes ` +
				`(AssignedTask has: {assigneeId, taskId} from its keys; title as attributes)`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var code int
			out, errOut := captureOutput(t, func() { code = run(append([]string{"validate"}, tc.args...)) })
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
			if tc.stderrNone && errOut != "" {
				t.Errorf("stderr not empty:\n%s", errOut)
			}
		})
	}
	// Every problem of the bad file is printed, one per line.
	_, errOut := captureOutput(t, func() { run([]string{"validate", bad}) })
	if n := strings.Count(errOut, bad+":"); n != 5 {
		t.Errorf("%d problem lines for bad-five.yaml, want 5:\n%s", n, errOut)
	}
}
