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

func TestValidateCommand(t *testing.T) {
	good := filepath.Join("..", "..", "rules", "social.yaml")
	bad := filepath.Join("..", "..", "internal", "rules", "testdata", "bad-five.yaml")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string // fragments
		stderr     []string
		stderrNone bool
	}{
		{"good file", []string{good}, 0, []string{good + ": ok (9 entities, 11 rules)"}, nil, true},
		{"bad file", []string{bad}, 1, nil, []string{
			bad + ":10:9: entity \"Comment\": bad sk template",
			bad + ":18:5: rule \"avatar-loop\": rules form a cycle",
			"denorm validate: 1 of 1 files invalid",
		}, false},
		{"good and bad", []string{good, bad}, 1, []string{good + ": ok"}, []string{bad + ":15:42:"}, false},
		{"missing file", []string{missing}, 1, nil, []string{missing + ": reading rules file:"}, false},
		{"no file", nil, 2, nil, []string{"usage: denorm validate FILE..."}, false},
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
