package bench

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is a whole benchmark run.
type Report struct {
	Machine        Machine   `json:"machine"`
	Started        time.Time `json:"started"`
	Finished       time.Time `json:"finished"`
	Reps           int       `json:"reps"`
	BatchSize      int       `json:"batchSize"`
	PollIntervalMs float64   `json:"pollIntervalMs"`
	Seed           uint64    `json:"seed"`
	Emulator       string    `json:"emulator"`
	WarmUpSeconds  float64   `json:"warmUpSecondsPerShape"`
	// Latency describes the latency model of the handlers' and the mapping's calls.
	Latency      string        `json:"latency"`
	LatencyModel *LatencyModel `json:"latencyModel,omitempty"`
	// BatchingWindowMs is the mappings' MaximumBatchingWindow; LiveRate the paced rate of
	// every workload's live writes, when one was set for all.
	BatchingWindowMs float64          `json:"batchingWindowMs"`
	LiveRate         float64          `json:"liveRatePerSec,omitempty"`
	Prices           Prices           `json:"prices"`
	Ceiling          Ceiling          `json:"ceiling"`
	CeilingAfter     *Ceiling         `json:"ceilingAfter,omitempty"`
	Workloads        []WorkloadResult `json:"workloads"`
	// AllVerified: every run of both systems (Denorm's alone where the workload has no
	// baseline) ended with `denorm verify` clean.
	AllVerified bool `json:"allVerified"`
}

// WorkloadResult is one workload's runs and their summary.
type WorkloadResult struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Rules       []string `json:"rules"`
	Targets     []Target `json:"targets,omitempty"`
	SetupOps    int      `json:"setupOps"`
	Ops         int      `json:"ops"`
	LiveOps     int      `json:"liveOps"`
	LiveRate    float64  `json:"liveRatePerSec"`
	CopyLag     bool     `json:"copyLag"`
	// ParallelizationFactor is the event source mapping's, the same for both systems.
	ParallelizationFactor int `json:"parallelizationFactor"`
	// Deltas are the measured backlog's counter changes, when WCU per delta is reported.
	Deltas int `json:"deltas,omitempty"`
	// NoBaseline: the baseline does not implement the rule; Denorm ran alone, and the
	// ratios to the baseline and the floor (which the baseline's runs count) are 0.
	NoBaseline bool        `json:"noBaseline,omitempty"`
	Runs       []RunResult `json:"runs"`
	Denorm     Summary     `json:"denorm"`
	Baseline   Summary     `json:"baseline"`
	// FloorWrites is one write per distinct target whose value changed, per batch; FloorWCU
	// prices each at what one write to that item costs (table, plus its global indexes).
	FloorWrites float64 `json:"floorWrites"`
	FloorWCU    float64 `json:"floorWcu"`
	Ratios      Ratios  `json:"ratios"`
	Checks      []Check `json:"checks"`
}

// RunResult is one system's run of a workload on its own table.
type RunResult struct {
	System string `json:"system"`
	Rep    int    `json:"rep"`
	Table  string `json:"table"`
	// The measured backlog.
	Usage         Usage   `json:"usage"`
	Invocations   int     `json:"invocations"`
	Delivered     int64   `json:"deliveredRecords"` // stream records delivered (the handlers' own writes cause some)
	DrainSeconds  float64 `json:"drainSeconds"`
	RecordsPerSec float64 `json:"recordsPerSec"` // application writes drained per second
	// ModelRecordsPerSec is the same by the latency model: records over the batches' reads
	// and invocations one after the other, each invocation its critical path through its
	// calls plus its CPU time (Prices.modelledMs). It leaves out DynamoDB Local's own
	// throughput, which bounds RecordsPerSec where a batch makes many calls at once.
	ModelRecordsPerSec float64 `json:"modelRecordsPerSec"`
	ModelDrainSeconds  float64 `json:"modelDrainSeconds"`
	ItemWritesPerSec   float64 `json:"itemWritesPerSec"`
	CPUPerRecordUs     float64 `json:"cpuPerRecordUs"`
	HandlerWall        float64 `json:"handlerWallSeconds"`
	// Cost is the backlog as AWS bills it; Path the rounds of DynamoDB calls its batches
	// waited on.
	Cost Cost         `json:"cost"`
	Path CriticalPath `json:"criticalPath"`
	// HandlerWCU is the WCU Denorm's own apply.Stats reported (a cross-check of Usage.WCU).
	HandlerWCU      float64 `json:"handlerWCU,omitempty"`
	HandlerWarnings int     `json:"handlerWarnings"`
	// Refused is what Denorm's handler counted as writes refused by their condition, per
	// guard (apply.Guard): each is billed 1 WCU.
	Refused map[string]int `json:"refusedByGuard,omitempty"`
	// PullsSkipped is the pulls Denorm's handler did not write because a read of the
	// target showed their condition would refuse them (apply.PullReads).
	PullsSkipped int     `json:"pullsSkipped,omitempty"`
	FloorWrites  int     `json:"floorWrites,omitempty"`
	FloorWCU     float64 `json:"floorWcu,omitempty"`
	Overlapped   bool    `json:"overlappedInvocations,omitempty"`
	// The live part.
	Lag        Dist `json:"lag"`
	LiveUnseen int  `json:"liveUnseen"` // live writes no rule watches (filtered out: nothing to see)
	// LiveRate is the rate the live writes were acknowledged at.
	LiveRate        float64 `json:"liveRatePerSec"`
	LiveInvocations int     `json:"liveInvocations"`
	LiveUsage       *Usage  `json:"liveUsage,omitempty"`
	Verify          Verify  `json:"verify"`
	// PhaseSeconds is the wall time of each step of the run, measured or not.
	PhaseSeconds map[string]float64 `json:"phaseSeconds"`
}

// Verify is the `denorm verify` outcome of a run's table.
type Verify struct {
	Clean    bool     `json:"clean"`
	Checked  int64    `json:"checked"`
	Drift    int64    `json:"drift"`
	Problems int64    `json:"problems"`
	Examples []string `json:"examples,omitempty"`
}

func (v Verify) verdict() string {
	if v.Clean {
		return fmt.Sprintf("clean (%d targets)", v.Checked)
	}
	return fmt.Sprintf("DRIFT %d, problems %d", v.Drift, v.Problems)
}

// Summary is the median of a system's runs.
type Summary struct {
	Runs             int     `json:"runs"`
	WCU              float64 `json:"wcu"`
	Writes           float64 `json:"writes"`
	Transactions     float64 `json:"transactions"`
	ItemWrites       float64 `json:"itemWrites"`
	Reads            float64 `json:"reads"`
	RecordsPerSec    float64 `json:"recordsPerSec"`
	ItemWritesPerSec float64 `json:"itemWritesPerSec"`
	DrainSeconds     float64 `json:"drainSeconds"`
	// ModelRecordsPerSec and ModelDrainSeconds are by the latency model (RunResult).
	ModelRecordsPerSec float64 `json:"modelRecordsPerSec"`
	ModelDrainSeconds  float64 `json:"modelDrainSeconds"`
	CPUPerRecordUs     float64 `json:"cpuPerRecordUs"`
	LagP50             float64 `json:"lagP50ms"`
	LagP99             float64 `json:"lagP99ms"`
	LagN               int     `json:"lagN"`
	// Conflicts are writes refused by a transaction conflict, backlog and live together.
	Conflicts float64 `json:"conflicts"`
	// HotItem is the item of the backlog that took the most write units, HotItemWrites the
	// write requests that touched it, HotItemWCU its write units, and HotItemWritesPerSec and
	// HotItemWCUPerSec those over the backlog's drain by the latency model (one shard): what
	// one item's ~1,000 WCU/s limit is measured against.
	HotItem             string  `json:"hotItem,omitempty"`
	HotItemWrites       float64 `json:"hotItemWrites,omitempty"`
	HotItemWCU          float64 `json:"hotItemWcu,omitempty"`
	HotItemWritesPerSec float64 `json:"hotItemWritesPerSecModel,omitempty"`
	HotItemWCUPerSec    float64 `json:"hotItemWcuPerSecModel,omitempty"`
	Verified            bool    `json:"verified"`
	// What AWS would bill and the critical path (medians of the runs' figures).
	DollarsPerMillion       float64 `json:"dollarsPerMillion"`
	BilledMsPerBatch        float64 `json:"billedMsPerBatch"`
	BilledSecondsPerMillion float64 `json:"billedSecondsPerMillionRecords"`
	RoundsPerBatch          float64 `json:"roundsPerBatch"`
	LiveRate                float64 `json:"liveRatePerSec"`
}

// Ratios compare Denorm with the baseline and both with the floor (medians).
type Ratios struct {
	WCUVsBaseline        float64 `json:"wcuVsBaseline"`
	WCUVsFloor           float64 `json:"wcuVsFloor"`
	BaselineWCUVsFloor   float64 `json:"baselineWcuVsFloor"`
	WritesVsBaseline     float64 `json:"writesVsBaseline"`
	ThroughputVsBaseline float64 `json:"throughputVsBaseline"`
	// ModelThroughputVsBaseline compares ModelRecordsPerSec.
	ModelThroughputVsBaseline float64 `json:"modelThroughputVsBaseline"`
	LagP50VsBaseline          float64 `json:"lagP50VsBaseline"`
	LagP99VsBaseline          float64 `json:"lagP99VsBaseline"`
	CPUVsBaseline             float64 `json:"cpuVsBaseline"`
	DollarsVsBaseline         float64 `json:"dollarsVsBaseline"`
	CeilingFraction           float64 `json:"ceilingFraction"` // Denorm's work rate / the raw ceiling of the same unit
	CeilingUnit               string  `json:"ceilingUnit"`     // what CeilingFraction compares
	BaselineCeilingFrac       float64 `json:"baselineCeilingFraction"`
	ItemWriteCeilingFrac      float64 `json:"itemWriteCeilingFraction"` // Denorm's items written/s / raw UpdateItem items/s
	BaselineItemWriteFrac     float64 `json:"baselineItemWriteCeilingFraction"`
}

// Check is one target of the issue, met or not.
type Check struct {
	Target Target  `json:"target"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Met    bool    `json:"met"`
}

func (r *Report) summarize() {
	r.AllVerified = true
	for i := range r.Workloads {
		w := &r.Workloads[i]
		w.Denorm, w.Baseline = summary(w.Runs, Denorm), summary(w.Runs, Naive)
		r.AllVerified = r.AllVerified && w.Denorm.Verified && (w.NoBaseline || w.Baseline.Verified)
		var floors, floorWCU []float64
		for _, run := range w.Runs {
			if run.System == Naive {
				floors = append(floors, float64(run.FloorWrites))
				floorWCU = append(floorWCU, run.FloorWCU)
			}
		}
		w.FloorWrites, w.FloorWCU = median(floors), median(floorWCU)
		d, b := w.Denorm, w.Baseline
		w.Ratios = Ratios{
			WCUVsBaseline: div(d.WCU, b.WCU), WCUVsFloor: div(d.WCU, w.FloorWCU), BaselineWCUVsFloor: div(b.WCU, w.FloorWCU),
			WritesVsBaseline: div(d.Writes, b.Writes), ThroughputVsBaseline: div(d.RecordsPerSec, b.RecordsPerSec),
			ModelThroughputVsBaseline: div(d.ModelRecordsPerSec, b.ModelRecordsPerSec),
			LagP50VsBaseline:          div(d.LagP50, b.LagP50), LagP99VsBaseline: div(d.LagP99, b.LagP99),
			CPUVsBaseline: div(d.CPUPerRecordUs, b.CPUPerRecordUs), DollarsVsBaseline: div(d.DollarsPerMillion, b.DollarsPerMillion),
			ItemWriteCeilingFrac: div(d.ItemWritesPerSec, r.Ceiling.Update.BestItems), BaselineItemWriteFrac: div(b.ItemWritesPerSec, r.Ceiling.Update.BestItems),
		}
		if w.CopyLag {
			// One source record: the work is the copies, one UpdateItem each.
			w.Ratios.CeilingUnit = "copies/s vs raw UpdateItem/s of indexed items"
			w.Ratios.CeilingFraction = div(div(w.FloorWrites, d.DrainSeconds), r.Ceiling.Copy.BestRequests)
			w.Ratios.BaselineCeilingFrac = div(div(w.FloorWrites, b.DrainSeconds), r.Ceiling.Copy.BestRequests)
		} else {
			w.Ratios.CeilingUnit = "records/s vs raw 2-item TransactWriteItems/s"
			w.Ratios.CeilingFraction = div(d.RecordsPerSec, r.Ceiling.Transact.BestRequests)
			w.Ratios.BaselineCeilingFrac = div(b.RecordsPerSec, r.Ceiling.Transact.BestRequests)
		}
		w.Checks = nil
		for _, t := range w.Targets {
			switch t {
			case TargetSamePartition:
				w.Checks = append(w.Checks, Check{t, w.Ratios.WCUVsBaseline, 0.05, w.Ratios.WCUVsBaseline <= 0.05})
			case TargetCrossPartition:
				w.Checks = append(w.Checks, Check{t, w.Ratios.WCUVsBaseline, 0.55, w.Ratios.WCUVsBaseline <= 0.55})
			case TargetCopies:
				w.Checks = append(w.Checks, Check{t, w.Ratios.WCUVsFloor, 1.05, w.Ratios.WCUVsFloor <= 1.05})
			case TargetFloor:
				w.Checks = append(w.Checks, Check{t, w.Ratios.WCUVsBaseline, 0.7, w.Ratios.WCUVsBaseline <= 0.7})
			case TargetHot:
				ok := w.Ratios.WCUVsBaseline <= 1 && d.Verified
				w.Checks = append(w.Checks, Check{t, w.Ratios.WCUVsBaseline, 1, ok})
			case TargetBuckets:
				w.Checks = append(w.Checks, Check{t, w.Ratios.WCUVsBaseline, 1, w.Ratios.WCUVsBaseline <= 1})
			case TargetLists:
				w.Checks = append(w.Checks, Check{t, w.Ratios.WCUVsFloor, 1.1, w.Ratios.WCUVsFloor <= 1.1})
			case TargetMix:
				w.Checks = append(w.Checks, Check{t, w.Ratios.WCUVsBaseline, 0.75, w.Ratios.WCUVsBaseline <= 0.75})
			}
		}
		w.Checks = append(w.Checks, r.speedChecks(w)...)
		w.Checks = append(w.Checks, Check{"exactly once: denorm verify clean after every Denorm run", b2f(d.Verified), 1, d.Verified})
		if !w.NoBaseline {
			w.Checks = append(w.Checks, Check{"like for like: denorm verify clean after every baseline run", b2f(b.Verified), 1, b.Verified})
		}
	}
}

func summary(runs []RunResult, sys string) Summary {
	var s Summary
	col := map[string][]float64{}
	s.Verified = true
	for _, r := range runs {
		if r.System != sys {
			continue
		}
		s.Runs++
		s.Verified = s.Verified && r.Verify.Clean
		add := func(k string, v float64) { col[k] = append(col[k], v) }
		add("wcu", r.Usage.WCU)
		add("writes", float64(r.Usage.Writes))
		add("tx", float64(r.Usage.Transactions))
		add("items", float64(r.Usage.ItemWrites))
		add("reads", float64(r.Usage.Reads))
		add("rps", r.RecordsPerSec)
		add("ips", r.ItemWritesPerSec)
		add("drain", r.DrainSeconds)
		add("cpu", r.CPUPerRecordUs)
		add("p50", r.Lag.P50)
		add("p99", r.Lag.P99)
		add("lagn", float64(r.Lag.N))
		conflicts := r.Usage.Conflicts
		if r.LiveUsage != nil {
			conflicts += r.LiveUsage.Conflicts
		}
		add("conflicts", float64(conflicts))
		add("hot", float64(r.Usage.HotItemWrites))
		add("hotps", div(float64(r.Usage.HotItemWrites), r.ModelDrainSeconds))
		add("hotwcu", r.Usage.HotItemWCU)
		add("hotwcups", div(r.Usage.HotItemWCU, r.ModelDrainSeconds))
		if s.Runs == 1 || s.HotItem == r.Usage.HotItem {
			s.HotItem = r.Usage.HotItem
		} else {
			s.HotItem = "(differs between runs)"
		}
		add("dollars", r.Cost.Total)
		add("billed", r.Cost.BilledMsPerBatch)
		add("billedm", r.Cost.BilledSecondsPerMillion)
		add("rounds", r.Path.RoundsMean)
		add("rate", r.LiveRate)
		add("mrps", r.ModelRecordsPerSec)
		add("mdrain", r.ModelDrainSeconds)
	}
	if s.Runs == 0 {
		s.Verified = false
		return s
	}
	s.WCU, s.Writes, s.Transactions, s.ItemWrites = median(col["wcu"]), median(col["writes"]), median(col["tx"]), median(col["items"])
	s.Reads, s.RecordsPerSec, s.ItemWritesPerSec = median(col["reads"]), median(col["rps"]), median(col["ips"])
	s.DrainSeconds, s.CPUPerRecordUs = median(col["drain"]), median(col["cpu"])
	s.LagP50, s.LagP99, s.LagN = median(col["p50"]), median(col["p99"]), int(median(col["lagn"]))
	s.Conflicts = median(col["conflicts"])
	s.HotItemWrites, s.HotItemWritesPerSec = median(col["hot"]), median(col["hotps"])
	s.HotItemWCU, s.HotItemWCUPerSec = median(col["hotwcu"]), median(col["hotwcups"])
	s.DollarsPerMillion, s.BilledMsPerBatch, s.BilledSecondsPerMillion = median(col["dollars"]), median(col["billed"]), median(col["billedm"])
	s.RoundsPerBatch, s.LiveRate = median(col["rounds"]), median(col["rate"])
	s.ModelRecordsPerSec, s.ModelDrainSeconds = median(col["mrps"]), median(col["mdrain"])
	return s
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Speed and cost targets of every workload (issue item 3): what a user waits and pays on
// AWS, read with a latency model.
const (
	TargetKeepUp   Target = "one shard drains >= 1,000 records/s (ParallelizationFactor 1)"
	TargetLagP99   Target = "lag p99 <= batching window + 1 s at the paced rate"
	TargetSpeed    Target = "records/s per shard >= 3x baseline"
	TargetDollars  Target = "dollars per million source writes <= 0.5x baseline"
	keepUpRate            = 1000.0
	lagAllowanceMs        = 1000.0
	speedRatio            = 3.0
	dollarRatio           = 0.5
)

// speedChecks holds w to the speed and cost targets.
func (r *Report) speedChecks(w *WorkloadResult) []Check {
	d, q := w.Denorm, w.Ratios
	// By the latency model when there is one: DynamoDB Local's own throughput is no
	// figure for AWS.
	rps, speed := d.ModelRecordsPerSec, q.ModelThroughputVsBaseline
	if r.LatencyModel == nil {
		rps, speed = d.RecordsPerSec, q.ThroughputVsBaseline
		if w.CopyLag {
			rps = div(w.FloorWrites, d.DrainSeconds) // copies per second
		}
	}
	lagLimit := r.BatchingWindowMs + lagAllowanceMs
	checks := []Check{
		{TargetKeepUp, rps, keepUpRate, rps >= keepUpRate},
		{TargetLagP99, d.LagP99, lagLimit, d.LagN > 0 && d.LagP99 <= lagLimit},
	}
	if w.NoBaseline {
		return checks
	}
	return append(checks,
		Check{TargetSpeed, speed, speedRatio, speed >= speedRatio},
		Check{TargetDollars, q.DollarsVsBaseline, dollarRatio, q.DollarsVsBaseline > 0 && q.DollarsVsBaseline <= dollarRatio})
}

// WriteMarkdown writes the figures and ratios as Markdown tables.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("Medians of %d runs per system and workload; batch size %d, batching window %.0f ms, poll interval %.0f ms, seed %d.\n", r.Reps, r.BatchSize, r.BatchingWindowMs, r.PollIntervalMs, r.Seed)
	p("Latency model: %s.\n", r.Latency)
	pr := r.Prices
	p("Prices (%s, %s): Lambda arm64 $%.10f per GB-second at %d MB, $%.2f per million requests; DynamoDB on-demand $%.3f per million write units, $%.3f per million read units.\n\n",
		pr.Region, pr.AsOf, pr.LambdaGBSecond, pr.MemoryMB, pr.LambdaRequest*1e6, pr.WriteUnit*1e6, pr.ReadUnit*1e6)
	p("What a user waits and pays, per shard: records/s one shard drains from a backlog at ParallelizationFactor 1 (unless the workload says otherwise), by the latency model and as measured here; lag from a source write to its derived value at the paced rate, measured here; billed Lambda duration and dollars per million source writes, from the backlog; the critical path of a batch (rounds of calls, and the chain of calls that waited on each other with its time by the model):\n\n")
	p("| workload | system | records/s (model) | records/s (here) | lag p50 / p99 ms | at writes/s | billed ms per batch | Lambda s per M records | $ per M source writes | rounds per batch | critical path per batch | verify |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, wr := range r.Workloads {
		for _, s := range []struct {
			name, sys string
			sum       Summary
		}{{"Denorm", Denorm, wr.Denorm}, {"baseline", Naive, wr.Baseline}} {
			if s.sys == Naive && wr.NoBaseline {
				continue
			}
			rps, mrps := fmt.Sprintf("%.0f", s.sum.RecordsPerSec), fmt.Sprintf("%.0f", s.sum.ModelRecordsPerSec)
			if wr.CopyLag {
				rps = fmt.Sprintf("%.0f copies/s", div(wr.FloorWrites, s.sum.DrainSeconds))
				mrps += " copies/s"
			}
			cp := firstRun(wr, s.sys).Path
			p("| %s | %s | %s | %s | %.0f / %.0f | %.0f | %.0f | %.0f | %.3f | %.1f | %.1f calls, %.0f ms | %s |\n", wr.Name, s.name, mrps, rps, s.sum.LagP50, s.sum.LagP99,
				s.sum.LiveRate, s.sum.BilledMsPerBatch, s.sum.BilledSecondsPerMillion, s.sum.DollarsPerMillion, s.sum.RoundsPerBatch,
				cp.ChainCalls, cp.ChainMs, verified(s.sum))
		}
	}
	p("\n| workload | records/s vs baseline (model) | records/s vs baseline (here) | $ per M writes vs baseline | lag p50 / p99 vs baseline | WCU vs baseline | WCU vs floor | baseline vs floor |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, wr := range r.Workloads {
		q := wr.Ratios
		if wr.NoBaseline {
			p("| %s | no baseline | | | | | | |\n", wr.Name)
			continue
		}
		p("| %s | %.1fx | %.1fx | %.3fx | %.2fx / %.2fx | %.3fx | %.2fx | %.2fx |\n", wr.Name, q.ModelThroughputVsBaseline, q.ThroughputVsBaseline, q.DollarsVsBaseline,
			q.LagP50VsBaseline, q.LagP99VsBaseline, q.WCUVsBaseline, q.WCUVsFloor, q.BaselineWCUVsFloor)
	}
	p("\nDollars per million source writes by part (first run of each system; rename: per million copies): Lambda duration + requests + write units + read units.\n\n")
	p("| workload | system | batches | Lambda duration | requests | writes | reads | total |\n|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, wr := range r.Workloads {
		for _, sys := range systems(wr) {
			for _, run := range wr.Runs {
				if run.System != sys {
					continue
				}
				c := run.Cost
				p("| %s | %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f |\n", wr.Name, sys, c.Invocations, c.LambdaDuration, c.LambdaRequests, c.Writes, c.Reads, c.Total)
				break
			}
		}
	}
	p("\nCritical path of a batch (first run of each system; batches that made no call left out): rounds of DynamoDB calls (calls in flight together, directly or through another call, are one round); the chain of calls that waited on each other (each started after the one before it ended: the time a batch waits on AWS, by the model); the most frequent sequence of rounds; per operation, the rounds per batch that held it.\n\n")
	p("| workload | system | batches (without calls) | rounds per batch (max) | chain per batch: calls, ms | typical batch (how many) | rounds per batch by operation |\n|---|---|--:|--:|--:|---|---|\n")
	for _, wr := range r.Workloads {
		for _, sys := range systems(wr) {
			cp := firstRun(wr, sys).Path
			p("| %s | %s | %d (%d) | %.1f (%d) | %.1f, %.0f | %s (%d) | %s |\n", wr.Name, sys, cp.Invocations, cp.Empty, cp.RoundsMean, cp.RoundsMax,
				cp.ChainCalls, cp.ChainMs, shorten(cp.Typical, 160), cp.TypicalCount, byOp(cp.RoundsByOp))
		}
	}
	p("\nWrite capacity and requests of the backlog (the floor: one write per distinct target whose value changed, per batch):\n\n")
	p("| workload | system | WCU | write requests | reads | CPU µs/record |\n")
	p("|---|---|--:|--:|--:|--:|\n")
	for _, wr := range r.Workloads {
		for _, s := range []struct {
			name string
			sum  Summary
		}{{"Denorm", wr.Denorm}, {"baseline", wr.Baseline}} {
			if s.name == "baseline" && wr.NoBaseline {
				continue
			}
			p("| %s | %s | %.0f | %.0f | %.0f | %.0f |\n", wr.Name, s.name, s.sum.WCU, s.sum.Writes, s.sum.Reads, s.sum.CPUPerRecordUs)
		}
		if !wr.NoBaseline {
			p("| %s | floor | %.0f | %.0f | | |\n", wr.Name, wr.FloorWCU, wr.FloorWrites)
		}
	}
	p("\nWCU per source write: the measured backlog's WCU over its source writes (the floor's and the baseline's where the baseline implements the rule):\n\n")
	p("| workload | rules | source writes | Denorm WCU/write | baseline WCU/write | floor WCU/write |\n|---|---|--:|--:|--:|--:|\n")
	for _, wr := range r.Workloads {
		n := float64(wr.Ops)
		base, floor := fmt.Sprintf("%.3f", div(wr.Baseline.WCU, n)), fmt.Sprintf("%.3f", div(wr.FloorWCU, n))
		if wr.NoBaseline {
			base, floor = "no baseline", ""
		}
		p("| %s | %s | %d | %.3f | %s | %s |\n", wr.Name, strings.Join(wr.Rules, ", "), wr.Ops, div(wr.Denorm.WCU, n), base, floor)
	}
	var hot []WorkloadResult
	for _, wr := range r.Workloads {
		if wr.Deltas > 0 {
			hot = append(hot, wr)
		}
	}
	if len(hot) > 0 {
		p("\nWCU per delta: the measured backlog's WCU over the counter changes it makes; conflicts are writes refused by a transaction conflict (backlog and live; DynamoDB Local does not raise TransactionConflict as DynamoDB does, so a zero here shows no retry storm, not the absence of contention on DynamoDB):\n\n")
		p("| workload | parallelization | deltas | Denorm WCU/delta | baseline WCU/delta | floor WCU/delta | conflicts Denorm | conflicts baseline |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, wr := range hot {
			n := float64(wr.Deltas)
			p("| %s | %d | %d | %.3f | %.3f | %.3f | %.0f | %.0f |\n", wr.Name, wr.ParallelizationFactor, wr.Deltas,
				div(wr.Denorm.WCU, n), div(wr.Baseline.WCU, n), div(wr.FloorWCU, n), wr.Denorm.Conflicts, wr.Baseline.Conflicts)
		}
		p("\nThe most written item of each system's backlog, by write units: its write requests (a transaction counts once for each of its items), its WCU (2 per transaction it was in), both per second over the backlog's drain by the latency model, one shard, and the source writes per second at which it would take one item's ~1,000 WCU/s if its WCU grew with them (the backlog's source writes x 1,000 / its WCU):\n\n")
		p("| workload | system | item | write requests | WCU | requests/s (model) | WCU/s (model) | source writes/s at 1,000 WCU/s |\n|---|---|---|--:|--:|--:|--:|--:|\n")
		for _, wr := range hot {
			for _, s := range []struct {
				name string
				sum  Summary
			}{{"Denorm", wr.Denorm}, {"baseline", wr.Baseline}} {
				if s.name == "baseline" && wr.NoBaseline {
					continue
				}
				p("| %s | %s | %s | %.0f | %.0f | %.1f | %.1f | %.0f |\n", wr.Name, s.name, s.sum.HotItem, s.sum.HotItemWrites, s.sum.HotItemWCU,
					s.sum.HotItemWritesPerSec, s.sum.HotItemWCUPerSec, div(float64(wr.Ops)*1000, s.sum.HotItemWCU))
			}
		}
	}
	p("\nWrites refused by their condition, per guard, as Denorm's handler counts them (first run of each workload; the meter's total in brackets), and the pulls not written because a read of their target showed they would be:\n\n| workload | refused | by guard | pulls skipped after a read |\n|---|--:|---|--:|\n")
	for _, wr := range r.Workloads {
		for _, run := range wr.Runs {
			if run.System != Denorm {
				continue
			}
			total := 0
			var parts []string
			for _, g := range sortedGuards(run.Refused) {
				total += run.Refused[g]
				parts = append(parts, fmt.Sprintf("%s %d", g, run.Refused[g]))
			}
			p("| %s | %d (%d) | %s | %d |\n", wr.Name, total, run.Usage.CondFailed, strings.Join(parts, ", "), run.PullsSkipped)
			break
		}
	}
	if c := r.Ceiling; c.Transact.BestRequests > 0 {
		p("\nSanity check, not a figure for AWS: raw DynamoDB Local ceiling (best of %v concurrent clients): %.0f TransactWriteItems/s of 2 items (%.0f items/s, at %d clients); %.0f UpdateItem/s (at %d); %.0f UpdateItem/s of items in a global index (at %d).",
			ceilingConcurrency, c.Transact.BestRequests, c.Transact.BestItems, c.Transact.BestAt, c.Update.BestRequests, c.Update.BestAt,
			c.Copy.BestRequests, c.Copy.BestAt)
		if a := r.CeilingAfter; a != nil {
			p(" Measured again after the workloads: %.0f, %.0f and %.0f.", a.Transact.BestRequests, a.Update.BestRequests, a.Copy.BestRequests)
		}
		p("\n")
	}
	p("\n| workload | target | value | limit | met |\n|---|---|--:|--:|---|\n")
	for _, wr := range r.Workloads {
		for _, ch := range wr.Checks {
			met := "yes"
			if !ch.Met {
				met = "**no**"
			}
			p("| %s | %s | %.3g | %.3g | %s |\n", wr.Name, ch.Target, ch.Value, ch.Limit, met)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func verified(s Summary) string {
	if s.Verified {
		return fmt.Sprintf("clean x%d", s.Runs)
	}
	return "**DRIFT**"
}

// sortedGuards lists the guards of a refusal count, most refusals first.
func sortedGuards(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for g := range m {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// shorten cuts s to n runes.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// byOp lists rounds per batch by operation, most first.
func byOp(m map[string]float64) string {
	ops := make([]string, 0, len(m))
	for op := range m {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool {
		if m[ops[i]] != m[ops[j]] {
			return m[ops[i]] > m[ops[j]]
		}
		return ops[i] < ops[j]
	})
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %.1f", op, m[op])
	}
	return strings.Join(parts, ", ")
}

// firstRun is sys's first run of w (zero if none).
// systems are the systems that ran w: Denorm, and the baseline unless w has none.
func systems(w WorkloadResult) []string {
	if w.NoBaseline {
		return []string{Denorm}
	}
	return []string{Denorm, Naive}
}

func firstRun(w WorkloadResult, sys string) RunResult {
	for _, r := range w.Runs {
		if r.System == sys {
			return r
		}
	}
	return RunResult{}
}
