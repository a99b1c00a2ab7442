package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/explain")

// TestExplainGolden runs `denorm explain` with the social rules on every event of the
// planner's testdata and compares what it prints with testdata/explain/<event>.golden.
func TestExplainGolden(t *testing.T) {
	set, err := rules.LoadSet(filepath.Join("..", "..", "rules", "social.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	events, err := filepath.Glob(filepath.Join("..", "..", "internal", "plan", "testdata", "*.json"))
	if err != nil || len(events) == 0 {
		t.Fatalf("no events: %v", err)
	}
	for _, ev := range events {
		name := strings.TrimSuffix(filepath.Base(ev), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(ev)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := explain(&out, set, data); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "explain", name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/denorm -run TestExplainGolden -update)", err)
			}
			if out.String() != string(want) {
				t.Errorf("denorm explain --event %s:\n%s\nwant (%s):\n%s", ev, out.String(), golden, want)
			}
		})
	}
}

// TestExplainBuckets: for rules into time buckets, explain shows the bucket each image's
// timestamp falls in (offsets converted to UTC, epoch seconds), a move between buckets, a
// value that is no time or a bucket already expired (no bucket: UnlinkedEffects), and the
// TTL a created bucket item gets. Golden: testdata/buckets/explain.golden.
func TestExplainBuckets(t *testing.T) {
	set, err := rules.LoadSet(filepath.Join("..", "..", "internal", "rules", "testdata", "valid", "buckets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "buckets", "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := explain(&out, set, data); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "buckets", "explain.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/denorm -run TestExplainBuckets -update)", err)
	}
	if out.String() != string(want) {
		t.Errorf("denorm explain:\n%s\nwant (%s):\n%s", out.String(), golden, want)
	}
}
