package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// Every command takes its rules file as --rules FILE or as its one argument, rejects other
// arguments with a usage error (exit 2), and only demo and bench have a default. None of
// these cases reaches DynamoDB: an unreachable endpoint shows that.
func TestRulesArgument(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "pm.yaml")
	nowhere := "http://127.0.0.1:1" // nothing listens: a command that got this far would fail on it
	event := filepath.Join("..", "..", "internal", "plan", "testdata", "post_lifecycle.json")
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		// The argument is the rules file, wherever the flags are.
		{[]string{"local", missing, "--endpoint", nowhere}, 1, missing},
		{[]string{"local", "--endpoint", nowhere, missing}, 1, missing},
		{[]string{"verify", missing, "--table", "Social", "--endpoint", nowhere}, 2, "reading rules file: open " + missing},
		{[]string{"backfill", "--table", "Social", missing}, 2, "reading rules file: open " + missing},
		{[]string{"check-table", missing, "--table", "Social", "--endpoint", nowhere}, 2, missing},
		{[]string{"explain", missing, "--event", event}, 1, missing},
		{[]string{"validate", "--rules", missing}, 1, missing + ": reading rules file"},
		// No rules file: a usage error, not a default.
		{[]string{"local", "--endpoint", nowhere}, 2, "no rules file: give it as --rules FILE or as the argument FILE"},
		{[]string{"explain", "--event", event}, 2, "no rules file"},
		{[]string{"verify", "--table", "Social"}, 2, "no rules file"},
		{[]string{"check-table", "--table", "Social"}, 2, "no rules file"},
		{[]string{"validate"}, 2, "no rules file"},
		// Extra arguments are refused by every command.
		{[]string{"local", socialRules, "other.yaml"}, 2, `unexpected arguments ["other.yaml"]: give one rules file`},
		{[]string{"local", "--rules", socialRules, "other.yaml"}, 2, `unexpected arguments ["other.yaml"]: the rules file is already given with --rules`},
		{[]string{"explain", socialRules, "--event", event, "extra"}, 2, `unexpected arguments ["extra"]`},
		{[]string{"verify", socialRules, "--table", "Social", "extra"}, 2, `unexpected arguments ["extra"]`},
		{[]string{"backfill", "--rules", socialRules, "--table", "Social", "extra"}, 2, `unexpected arguments ["extra"]`},
		{[]string{"check-table", socialRules, "extra", "--table", "Social"}, 2, `unexpected arguments ["extra"]`},
		{[]string{"demo", socialRules, "extra"}, 2, `unexpected arguments ["extra"]`},
		{[]string{"bench", "--rules", socialRules, "extra"}, 2, `unexpected arguments ["extra"]`},
		// A bad flag is a usage error too.
		{[]string{"explain", "--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"check-table", "--table"}, 2, "flag needs an argument: -table"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := denorm(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, errOut, tc.code, tc.stderr)
			}
		})
	}
}

// `denorm explain FILE --event E` is `denorm explain --rules FILE --event E`.
func TestExplainRulesArgument(t *testing.T) {
	event := filepath.Join("..", "..", "internal", "plan", "testdata", "post_lifecycle.json")
	code, byFlag, errOut := denorm(t, "explain", "--rules", socialRules, "--event", event)
	if code != 0 || !strings.Contains(byFlag, "batch:") {
		t.Fatalf("--rules: exit %d\n%s%s", code, byFlag, errOut)
	}
	for _, args := range [][]string{{"explain", socialRules, "--event", event}, {"explain", "--event", event, socialRules}, {"explain", "--event", event, "--", socialRules}} {
		code, out, errOut := denorm(t, args...)
		if code != 0 || out != byFlag {
			t.Errorf("%v: exit %d, stdout differs from --rules:\n%s%s", args, code, out, errOut)
		}
	}
}

// A table name DynamoDB would refuse is refused before any call, saying what a name may hold.
func TestTableNameChecked(t *testing.T) {
	long := strings.Repeat("t", 256)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"local", socialRules, "--table", "my table!", "--endpoint", "http://127.0.0.1:1"}, `--table: invalid table name "my table!": ' ' at offset 2 is not allowed`},
		{[]string{"local", socialRules, "--table", "ab", "--endpoint", "http://127.0.0.1:1"}, `"ab": too short (2 characters)`},
		{[]string{"verify", socialRules, "--table", long}, "too long (256 characters)"},
		{[]string{"backfill", socialRules, "--table", "a/b"}, `'/' at offset 1 is not allowed`},
		{[]string{"check-table", socialRules, "--table", "ab"}, "too short"},
		{[]string{"verify", socialRules}, "--table is required"},
	} {
		t.Run(strings.Join(tc.args, " ")[:min(60, len(strings.Join(tc.args, " ")))], func(t *testing.T) {
			code, _, errOut := denorm(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errOut, tc.want)
			}
			if tc.want != "--table is required" && !strings.Contains(errOut, "a table name is 3 to 255 characters of a-z A-Z 0-9 _ - .") {
				t.Errorf("stderr does not say what a table name may hold:\n%s", errOut)
			}
		})
	}
}

// The usage has a flags heading only above flags.
func TestUsageHeading(t *testing.T) {
	var b bytes.Buffer
	fs := newFlags("none", "FILE")
	fs.SetOutput(&b)
	fs.Usage()
	if got := b.String(); got != "usage: denorm none FILE\n" {
		t.Errorf("usage without flags = %q", got)
	}
	b.Reset()
	fs.String("x", "", "an x")
	fs.Usage()
	if got := b.String(); !strings.HasPrefix(got, "usage: denorm none FILE\n\nflags:\n  -x string\n") {
		t.Errorf("usage with a flag = %q", got)
	}
	for _, name := range sortedCommands() {
		code, _, errOut := denorm(t, name, "--help")
		if code != 0 || !strings.HasPrefix(errOut, "usage: denorm "+name+" ") || strings.HasSuffix(errOut, "flags:\n") {
			t.Errorf("%s --help: exit %d\n%s", name, code, errOut)
		}
	}
}

func sortedCommands() []string {
	var out []string
	for n := range commands {
		out = append(out, n)
	}
	return out
}

// explain exits 1 on a record it cannot decode, with the decoder's message, after showing
// the records it could.
func TestExplainUndecodable(t *testing.T) {
	event := filepath.Join("..", "..", "internal", "record", "testdata", "malformed", "dynamodb_missing.json")
	code, out, errOut := denorm(t, "explain", socialRules, "--event", event)
	if code != 1 || !strings.Contains(out, "record 1: cannot be decoded:") || !strings.Contains(out, "batch:") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "denorm explain: 1 of 1 records cannot be decoded: record 1 cannot be decoded: ") || !strings.Contains(errOut, "dynamodb") {
		t.Errorf("stderr does not carry the decoder's message:\n%s", errOut)
	}
}
