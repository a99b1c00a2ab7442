package bench

import (
	"math"
	"time"

	"github.com/denorm/denorm/internal/deployed"
)

// Prices are what AWS bills for the stream processor, in US dollars. docs/benchmarks.md
// cites where each comes from.
type Prices struct {
	Region string `json:"region"`
	// AsOf is when the prices were read from AWS's price pages.
	AsOf string `json:"asOf"`
	// LambdaGBSecond is Lambda's duration price on arm64 (first tier), per GB-second;
	// duration is billed per invocation, rounded up to the millisecond.
	LambdaGBSecond float64 `json:"lambdaArmGBSecond"`
	// LambdaRequest is the price of one invocation.
	LambdaRequest float64 `json:"lambdaRequest"`
	// WriteUnit and ReadUnit are DynamoDB on-demand prices of one write request unit and one
	// read request unit (Standard table class). Lambda's reads of a DynamoDB stream are free.
	WriteUnit float64 `json:"writeRequestUnit"`
	ReadUnit  float64 `json:"readRequestUnit"`
	// MemoryMB is the function's memory (the construct's default).
	MemoryMB int `json:"memoryMB"`
	// VCPUMemoryMB is the memory at which a function has one full vCPU: CPU time measured
	// here on one core is scaled by VCPUMemoryMB/MemoryMB to estimate it on the function.
	VCPUMemoryMB int `json:"vcpuMemoryMB"`
}

// USEast1 are the us-east-1 prices (arm64 Lambda, on-demand DynamoDB).
var USEast1 = Prices{Region: "us-east-1", AsOf: "2026-11-26",
	LambdaGBSecond: 0.0000133334, LambdaRequest: 0.20 / 1e6,
	WriteUnit: 0.625 / 1e6, ReadUnit: 0.125 / 1e6,
	MemoryMB: deployed.MemoryMB, VCPUMemoryMB: 1769}

// stretch is how much longer CPU work takes on the function than on one core here.
func (p Prices) stretch() float64 {
	if p.MemoryMB > 0 && p.VCPUMemoryMB > p.MemoryMB {
		return float64(p.VCPUMemoryMB) / float64(p.MemoryMB)
	}
	return 1
}

// billedMs is the Lambda duration billed for one invocation that took wall time here, of
// which cpu was CPU time on this machine: the waiting stays, the CPU work stretches by the
// function's share of a vCPU, and the sum is rounded up to the millisecond.
func (p Prices) billedMs(wall, cpu time.Duration) float64 {
	cpu = min(cpu, wall)
	return ceilMs(float64(wall-cpu) + float64(cpu)*p.stretch())
}

// modelledMs is the Lambda duration billed for one invocation whose calls, by the latency
// model, wait chain in sequence, plus its CPU work at the function's share of a vCPU.
func (p Prices) modelledMs(chain, cpu time.Duration) float64 {
	return ceilMs(float64(chain) + float64(cpu)*p.stretch())
}

func ceilMs(ns float64) float64 { return math.Ceil(ns / float64(time.Millisecond)) }

// Cost is what a run's backlog cost, as AWS would bill it.
type Cost struct {
	Invocations int     `json:"invocations"`
	BilledMs    float64 `json:"billedMs"` // Lambda duration billed, all invocations
	// BilledHereMs is BilledMs from the invocations' wall time on this machine, where
	// DynamoDB Local may answer slower than the latency model.
	BilledHereMs float64 `json:"billedHereMs"`
	// BilledMsPerBatch is BilledMs per invocation.
	BilledMsPerBatch float64 `json:"billedMsPerBatch"`
	// BilledSecondsPerMillion is the billed Lambda duration per million source records.
	BilledSecondsPerMillion float64 `json:"billedSecondsPerMillionRecords"`
	// Dollars per million source writes, by part, and their sum.
	LambdaDuration float64 `json:"lambdaDurationPerMillion"`
	LambdaRequests float64 `json:"lambdaRequestsPerMillion"`
	Writes         float64 `json:"writesPerMillion"`
	Reads          float64 `json:"readsPerMillion"`
	Total          float64 `json:"dollarsPerMillion"`
}

// cost prices records source writes that took invocations, billedMs of Lambda duration,
// wcu and rcu.
func (p Prices) cost(records, invocations int, billedMs, wcu, rcu float64) Cost {
	c := Cost{Invocations: invocations, BilledMs: billedMs}
	if invocations > 0 {
		c.BilledMsPerBatch = billedMs / float64(invocations)
	}
	if records <= 0 {
		return c
	}
	perM := 1e6 / float64(records)
	gb := float64(p.MemoryMB) / 1024
	c.BilledSecondsPerMillion = billedMs / 1000 * perM
	c.LambdaDuration = billedMs / 1000 * gb * p.LambdaGBSecond * perM
	c.LambdaRequests = float64(invocations) * p.LambdaRequest * perM
	c.Writes = wcu * p.WriteUnit * perM
	c.Reads = rcu * p.ReadUnit * perM
	c.Total = c.LambdaDuration + c.LambdaRequests + c.Writes + c.Reads
	return c
}
