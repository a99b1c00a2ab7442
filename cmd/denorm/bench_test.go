package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/bench"
)

func TestBenchFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench", "--size", "huge"}, 1, `--size "huge": want full, smoke or tiny`},
		{[]string{"bench", "--reps"}, 2, "flag needs an argument"},
		{[]string{"bench", "-h"}, 0, "usage: denorm bench"},
		{[]string{"bench", "--latency", "GetItem=fast"}, 1, `--latency: latency "GetItem=fast": median "fast" is not a duration`},
		{[]string{"bench", "--latency", "Query=9ms/2ms"}, 1, `p99 "2ms" is not a duration at least the median`},
	} {
		var code int
		_, stderr := captureOutput(t, func() { code = run(tc.args) })
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

func TestWriteBenchFiles(t *testing.T) {
	dir := t.TempDir()
	rep := &bench.Report{Reps: 1, Workloads: []bench.WorkloadResult{{Name: "comment-storm",
		Denorm: bench.Summary{WCU: 20, LagP50: 40, LagP99: 80}, Baseline: bench.Summary{WCU: 8000, LagP50: 60, LagP99: 120}, FloorWCU: 20}}}
	if err := writeBenchFiles(rep, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(b, &back); err != nil || len(back.Workloads) != 1 {
		t.Errorf("bench.json does not read back: %v", err)
	}
	for _, f := range []string{"bench.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
