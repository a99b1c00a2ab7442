package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"testing"

	"github.com/denorm/denorm/internal/bench"
)

func TestWritePNG(t *testing.T) {
	r := &bench.Report{Workloads: []bench.WorkloadResult{
		{Name: "a", Denorm: bench.Summary{WCU: 10, LagP50: 30, LagP99: 90}, Baseline: bench.Summary{WCU: 1000, LagP50: 100, LagP99: 400}, FloorWCU: 8},
		{Name: "b", Denorm: bench.Summary{WCU: 0.5, LagP50: 0}, Baseline: bench.Summary{WCU: 20000, LagP50: 5000, LagP99: 9000}, FloorWCU: 20000},
	}}
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
