package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"testing"

	"github.com/denorm/denorm/internal/bench"
)

func TestWritePNG(t *testing.T) {
	r := &bench.Report{Workloads: []bench.WorkloadResult{
		{Name: "a", Denorm: bench.Summary{ModelRecordsPerSec: 900, DollarsPerMillion: 0.06, LagP50: 30, LagP99: 90},
			Baseline: bench.Summary{ModelRecordsPerSec: 80, DollarsPerMillion: 2.6, LagP50: 100, LagP99: 400}},
		{Name: "b", Denorm: bench.Summary{ModelRecordsPerSec: 0, DollarsPerMillion: 5.1, LagP50: 0},
			Baseline: bench.Summary{ModelRecordsPerSec: 40, DollarsPerMillion: 6.7, LagP50: 5000, LagP99: 9000}},
		{Name: "c", NoBaseline: true, Denorm: bench.Summary{ModelRecordsPerSec: 250, DollarsPerMillion: 0.5, LagP50: 1200, LagP99: 1600}},
	}, LatencyModel: bench.DefaultLatency()}
	if p := os.Getenv("BENCH_REPORT"); p != "" { // render a real report: BENCH_REPORT=bench.json
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r = &bench.Report{}
		if err := json.Unmarshal(b, r); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := writePNG(r, &buf); err != nil {
		t.Fatal(err)
	}
	data := bytes.Clone(buf.Bytes())
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 400 {
		t.Errorf("image is %v, want a readable size", b)
	}
	if out := os.Getenv("BENCH_PNG"); out != "" {
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A workload without a baseline run gets no baseline label (not "0").
func TestShortLabel(t *testing.T) {
	for v, want := range map[float64]string{math.NaN(): "", 0: "0", 0.057: "0.057", 733: "733", 1589: "1.6k", 18597: "19k"} {
		if got := short(v); got != want {
			t.Errorf("short(%v) = %q, want %q", v, got, want)
		}
	}
}
