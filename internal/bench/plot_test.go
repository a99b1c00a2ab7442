package bench

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"testing"
)

func TestWritePNG(t *testing.T) {
	r := &Report{Workloads: []WorkloadResult{
		{Name: "a", Denorm: Summary{WCU: 10, LagP50: 30, LagP99: 90}, Baseline: Summary{WCU: 1000, LagP50: 100, LagP99: 400}, FloorWCU: 8},
		{Name: "b", Denorm: Summary{WCU: 0.5, LagP50: 0}, Baseline: Summary{WCU: 20000, LagP50: 5000, LagP99: 9000}, FloorWCU: 20000},
	}}
	if p := os.Getenv("BENCH_REPORT"); p != "" { // render a real report: BENCH_REPORT=bench.json
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r = &Report{}
		if err := json.Unmarshal(b, r); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := r.WritePNG(&buf); err != nil {
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
