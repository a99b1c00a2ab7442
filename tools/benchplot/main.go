// Command benchplot draws the chart of a `denorm bench` report: write capacity and lag per
// workload, Denorm against the baseline and the floor. It is its own module so that the
// plotting library is no requirement of the engine's (`make bench` runs it).
//
//	go run . BENCH.json BENCH.png
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/denorm/denorm/internal/bench"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: benchplot BENCH.json BENCH.png")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var r bench.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("reading %s: %w", in, err)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := writePNG(&r, f); err != nil {
		f.Close()
		return fmt.Errorf("drawing %s: %w", out, err)
	}
	return f.Close()
}
