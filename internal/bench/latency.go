package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/middleware"
)

// Latency is the time one call of an operation takes in total, as a log-normal
// distribution given by its median and its 99th percentile (P99 == Median: a constant).
type Latency struct {
	Median time.Duration `json:"median"`
	P99    time.Duration `json:"p99"`
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// sample draws one latency; u is a standard normal variate.
func (l Latency) sample(u float64) time.Duration {
	if l.Median <= 0 {
		return 0
	}
	if l.P99 <= l.Median {
		return l.Median
	}
	sigma := math.Log(float64(l.P99)/float64(l.Median)) / z99
	return time.Duration(float64(l.Median) * math.Exp(sigma*u))
}

func (l Latency) String() string {
	if l.P99 <= l.Median {
		return l.Median.String()
	}
	return l.Median.String() + "/" + l.P99.String()
}

// LatencyModel delays every call of a client to what the call would take in total on AWS:
// the sampled latency of its operation, less the time the emulator took (a call slower
// than its sample is not delayed further). Ops maps operation names (GetItem, Query,
// TransactWriteItems, GetRecords ...) to their distribution; Other is for the rest.
type LatencyModel struct {
	Name  string             `json:"name"`
	Ops   map[string]Latency `json:"ops"`
	Other Latency            `json:"other"`

	mu  sync.Mutex
	rng *rand.Rand
}

// NoLatency is the model of --latency none: calls take what the emulator takes.
const NoLatency = "none"

// DefaultLatency returns the default model: in-region calls from Lambda to DynamoDB.
// AWS states single-digit millisecond average latency for single-item operations such as
// GetItem and PutItem, and that Query latency depends on the size of the result
// (docs/benchmarks.md cites both); the medians and p99s per operation are assumptions
// within that statement: writes slower than reads (an acknowledged write is stored in two
// availability zones), a transaction slower than a write (two phases), the stream's
// GetRecords slower than a table read.
func DefaultLatency() *LatencyModel {
	ms := func(median, p99 float64) Latency {
		return Latency{time.Duration(median * float64(time.Millisecond)), time.Duration(p99 * float64(time.Millisecond))}
	}
	return &LatencyModel{Name: "default", Other: ms(5, 12), Ops: map[string]Latency{
		"GetItem":            ms(3, 8),
		"BatchGetItem":       ms(5, 15),
		"Query":              ms(5, 15),
		"PutItem":            ms(5, 12),
		"UpdateItem":         ms(5, 12),
		"DeleteItem":         ms(5, 12),
		"BatchWriteItem":     ms(8, 20),
		"TransactWriteItems": ms(10, 25),
		"TransactGetItems":   ms(6, 15),
		"GetRecords":         ms(10, 25),
		"GetShardIterator":   ms(5, 12),
		"DescribeStream":     ms(5, 12),
	}}
}

// ParseLatency reads the --latency flag: "none", "default", or a comma-separated list of
// OP=MEDIAN[/P99] (durations; OP "*" sets every operation the list does not name), starting
// with "default," to change only some operations of the default model:
//
//	default,Query=8ms/30ms
//	*=4ms/10ms,TransactWriteItems=9ms/20ms
func ParseLatency(spec string) (*LatencyModel, error) {
	spec = strings.TrimSpace(spec)
	switch spec {
	case "", NoLatency:
		return nil, nil
	case "default":
		return DefaultLatency(), nil
	}
	m := &LatencyModel{Name: spec, Ops: map[string]Latency{}}
	for i, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if i == 0 && part == "default" {
			m.Ops, m.Other = DefaultLatency().Ops, DefaultLatency().Other
			continue
		}
		op, val, ok := strings.Cut(part, "=")
		if !ok || op == "" {
			return nil, fmt.Errorf("latency %q: want OP=MEDIAN[/P99], e.g. GetItem=3ms/8ms", part)
		}
		med, p99, hasP99 := strings.Cut(val, "/")
		l := Latency{}
		var err error
		if l.Median, err = time.ParseDuration(med); err != nil || l.Median < 0 {
			return nil, fmt.Errorf("latency %q: median %q is not a duration", part, med)
		}
		l.P99 = l.Median
		if hasP99 {
			if l.P99, err = time.ParseDuration(p99); err != nil || l.P99 < l.Median {
				return nil, fmt.Errorf("latency %q: p99 %q is not a duration at least the median", part, p99)
			}
		}
		if op == "*" {
			m.Other = l
		} else {
			m.Ops[op] = l
		}
	}
	return m, nil
}

// For returns the distribution of op.
func (m *LatencyModel) For(op string) Latency {
	if m == nil {
		return Latency{}
	}
	if l, ok := m.Ops[op]; ok {
		return l
	}
	return m.Other
}

// draw samples op's latency from the model's own seeded source.
func (m *LatencyModel) draw(op string) time.Duration {
	m.mu.Lock()
	if m.rng == nil {
		m.rng = rand.New(rand.NewPCG(1, 33))
	}
	u := m.rng.NormFloat64()
	m.mu.Unlock()
	return m.For(op).sample(u)
}

// Describe lists the model's operations, for the report.
func (m *LatencyModel) Describe() string {
	if m == nil {
		return NoLatency
	}
	ops := make([]string, 0, len(m.Ops))
	for op := range m.Ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var parts []string
	for _, op := range ops {
		parts = append(parts, op+" "+m.Ops[op].String())
	}
	parts = append(parts, "other "+m.Other.String())
	return m.Name + " (median/p99: " + strings.Join(parts, ", ") + ")"
}

// AddTo is an APIOptions entry of an aws-sdk-go-v2 client (DynamoDB or DynamoDB Streams):
// it adds the model's delay as the outermost step of every operation, so the delay covers
// the SDK's serialization, signing and retries, and notes each call in the trace of its
// context (withTrace).
func (m *LatencyModel) AddTo(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("DenormBenchLatency",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := middleware.GetOperationName(ctx)
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			took := time.Since(start)
			if m != nil {
				took = m.draw(op)
				if d := took - time.Since(start); d > 0 {
					t := time.NewTimer(d)
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
					}
				}
			}
			if tr := traceOf(ctx); tr != nil {
				tr.add(op, start, time.Now(), took)
			}
			return out, md, err
		}), middleware.Before)
}

// call is one DynamoDB call of an invocation.
type call struct {
	op         string
	start, end time.Time
	// took is what the call takes on AWS by the model (without one: what it took here).
	took time.Duration
}

// trace collects the calls one invocation makes.
type trace struct {
	mu    sync.Mutex
	calls []call
}

type traceKey struct{}

func withTrace(ctx context.Context) (context.Context, *trace) {
	t := &trace{}
	return context.WithValue(ctx, traceKey{}, t), t
}

func traceOf(ctx context.Context) *trace {
	t, _ := ctx.Value(traceKey{}).(*trace)
	return t
}

func (t *trace) add(op string, start, end time.Time, took time.Duration) {
	t.mu.Lock()
	t.calls = append(t.calls, call{op, start, end, took})
	t.mu.Unlock()
}

// chain is the invocation's critical path through its calls: the longest chain of calls
// each of which started after the one before it ended (so it may have waited on it), by
// the time the model gives the calls. Calls is that chain's length in calls, Took its time.
// Where DynamoDB Local answered slower than the model, calls overlap here that would not
// on AWS, but a call that waited on another (in code, or for a slot of a bounded pool)
// still starts after it ends, so the chain is what the invocation would wait on AWS.
func (t *trace) chain() (calls int, took time.Duration) {
	t.mu.Lock()
	cs := slices.Clone(t.calls)
	t.mu.Unlock()
	n := len(cs)
	byStart, byEnd := make([]int, n), make([]int, n)
	for i := range cs {
		byStart[i], byEnd[i] = i, i
	}
	slices.SortFunc(byStart, func(a, b int) int {
		if c := cs[a].start.Compare(cs[b].start); c != 0 {
			return c
		}
		return cs[a].end.Compare(cs[b].end)
	})
	slices.SortFunc(byEnd, func(a, b int) int { return cs[a].end.Compare(cs[b].end) })
	type link struct {
		took  time.Duration
		calls int
	}
	heavier := func(a, b link) link {
		if b.took > a.took || (b.took == a.took && b.calls > a.calls) {
			return b
		}
		return a
	}
	// best[i] is the heaviest chain that ends with call i; prefix[k] the heaviest among the
	// calls byEnd[:k+1]. Calls are taken by start: every call that ended by one's start
	// started before it, so its chain is known when prefix takes it in.
	best := make([]link, n)
	var prefix []link
	var top link
	for _, i := range byStart {
		k := sort.Search(n, func(j int) bool { return cs[byEnd[j]].end.After(cs[i].start) })
		for len(prefix) < k {
			var before link
			if m := len(prefix); m > 0 {
				before = prefix[m-1]
			}
			prefix = append(prefix, heavier(before, best[byEnd[len(prefix)]]))
		}
		var pre link
		if k > 0 {
			pre = prefix[k-1]
		}
		best[i] = link{pre.took + cs[i].took, pre.calls + 1}
		top = heavier(top, best[i])
	}
	return top.calls, top.took
}

// round is a set of calls that overlapped in time (transitively): the calls an invocation
// had in flight together. Rounds follow each other: the critical path of the invocation.
type round struct {
	ops map[string]int // calls per operation
}

// label is the round's calls, e.g. "GetItem×3+UpdateItem".
func (r round) label() string {
	ops := make([]string, 0, len(r.ops))
	for op := range r.ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for i, op := range ops {
		if n := r.ops[op]; n > 1 {
			ops[i] = fmt.Sprintf("%s×%d", op, n)
		}
	}
	return strings.Join(ops, "+")
}

// rounds splits the trace's calls into rounds: sorted by start, a call that starts after
// every earlier call ended begins a new round.
func (t *trace) rounds() []round {
	t.mu.Lock()
	calls := slices.Clone(t.calls)
	t.mu.Unlock()
	slices.SortFunc(calls, func(a, b call) int { return a.start.Compare(b.start) })
	var out []round
	var end time.Time
	for _, c := range calls {
		if len(out) == 0 || !c.start.Before(end) {
			out = append(out, round{ops: map[string]int{}})
			end = c.end
		}
		out[len(out)-1].ops[c.op]++
		if c.end.After(end) {
			end = c.end
		}
	}
	return out
}

// CriticalPath is what the invocations of a run waited on: sequential rounds of DynamoDB
// calls per batch, and which operations they held.
type CriticalPath struct {
	Invocations int `json:"invocations"`
	// Empty are the invocations that made no DynamoDB call (records no rule acts on, such
	// as the stream records of Denorm's own state items); the figures below are over the
	// others.
	Empty      int     `json:"emptyInvocations"`
	Calls      int     `json:"calls"`
	RoundsMean float64 `json:"roundsPerBatchMean"`
	RoundsMax  int     `json:"roundsPerBatchMax"`
	// ChainCalls and ChainMs are the mean critical path per batch (trace.chain): calls that
	// waited on each other, and their time by the model.
	ChainCalls float64 `json:"chainCallsPerBatch"`
	ChainMs    float64 `json:"chainMsPerBatch"`
	// RoundsByOp is, per operation, the mean number of rounds per batch that held it.
	RoundsByOp map[string]float64 `json:"roundsByOp"`
	// Typical is the most frequent sequence of rounds among the batches (ties: the longer),
	// Longest the batch with the most rounds.
	Typical      string `json:"typical"`
	TypicalCount int    `json:"typicalCount"`
	Longest      string `json:"longest"`
}

// pathStats adds up the rounds of invocations.
type pathStats struct {
	mu      sync.Mutex
	n       int
	empty   int
	chain   int
	chainT  time.Duration
	calls   int
	rounds  int
	max     int
	byOp    map[string]int
	paths   map[string]int
	longest string
}

func (p *pathStats) add(rs []round, chainCalls int, chainTook time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byOp == nil {
		p.byOp, p.paths = map[string]int{}, map[string]int{}
	}
	p.n++
	if len(rs) == 0 {
		p.empty++
		return
	}
	p.chain += chainCalls
	p.chainT += chainTook
	p.rounds += len(rs)
	labels := make([]string, len(rs))
	for i, r := range rs {
		labels[i] = r.label()
		for op, k := range r.ops {
			p.byOp[op]++
			p.calls += k
		}
	}
	path := strings.Join(labels, " → ")
	p.paths[path]++
	if len(rs) > p.max || p.longest == "" {
		p.max, p.longest = len(rs), path
	}
}

func (p *pathStats) take() CriticalPath {
	p.mu.Lock()
	defer p.mu.Unlock()
	cp := CriticalPath{Invocations: p.n, Empty: p.empty, Calls: p.calls, RoundsMax: p.max, Longest: p.longest, RoundsByOp: map[string]float64{}}
	if busy := p.n - p.empty; busy > 0 {
		cp.RoundsMean = float64(p.rounds) / float64(busy)
		cp.ChainCalls = float64(p.chain) / float64(busy)
		cp.ChainMs = ms(p.chainT) / float64(busy)
		for op, k := range p.byOp {
			cp.RoundsByOp[op] = float64(k) / float64(busy)
		}
	}
	for path, k := range p.paths {
		if k > cp.TypicalCount || (k == cp.TypicalCount && len(path) > len(cp.Typical)) {
			cp.Typical, cp.TypicalCount = path, k
		}
	}
	p.n, p.empty, p.chain, p.chainT, p.calls, p.rounds, p.max, p.byOp, p.paths, p.longest = 0, 0, 0, 0, 0, 0, 0, nil, nil, ""
	return cp
}
