// Package apply executes coalesced effects against DynamoDB: version-guarded copy and
// mirror writes, paged fan-outs with a durable cursor, pulls, and count/sum deltas applied
// exactly once to each target's state item (internal/counter) with a watermark or
// per-event markers, then copied onto the target. It is the only stage of the stream
// processor that does I/O.
package apply

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/rules"
)

// API is the part of the DynamoDB client the executor uses.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	TransactGetItems(context.Context, *dynamodb.TransactGetItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
}

// Options tune the executor. Zero values take the defaults.
type Options struct {
	// PageSize is the Limit of each fan-out query page (default 500).
	PageSize int32
	// InlinePages is how many fan-out pages the source's own invocation writes before
	// handing the rest to a job item (default 2): small fan-outs cost no job write.
	InlinePages int
	// JobBudget bounds the time one invocation spends continuing a job (default 20 s);
	// the job's cursor is saved and its stream record continues the work.
	JobBudget time.Duration
	// Concurrency bounds parallel single-item writes (default 16).
	Concurrency int
	// MarkerTTL is how long idempotency markers and relay items live: longer than stream
	// retention (24 h) plus retries (default 7 days).
	MarkerTTL time.Duration
	// DeadlineMargin: no new write starts when less than this is left (default 3 s).
	DeadlineMargin time.Duration
	// PullReads says when a pull reads its target (one consistent GetItem) before writing
	// it, to skip the write its condition would refuse (the target deleted or changed since
	// its record): PullReadsAuto (the default) does when that is cheaper, judged by the
	// share of pulls refused lately (pullcost.go).
	PullReads PullReads
	// MaxBackoff caps one retry delay (default 2 s).
	MaxBackoff time.Duration
	// StreamCheck is how long the executor trusts what it last read of the stream registry
	// (StreamEpoch) before it reads it again (default 5 s): how soon a processor whose stream
	// another has taken over stops writing, once the registry has reached its Region.
	StreamCheck time.Duration
	Logger      *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.InlinePages <= 0 {
		o.InlinePages = 2
	}
	if o.JobBudget <= 0 {
		o.JobBudget = 20 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.MarkerTTL <= 0 {
		o.MarkerTTL = 7 * 24 * time.Hour
	}
	if o.DeadlineMargin <= 0 {
		o.DeadlineMargin = 3 * time.Second
	}
	if o.PullReads == "" {
		o.PullReads = PullReadsAuto
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 2 * time.Second
	}
	if o.StreamCheck <= 0 {
		o.StreamCheck = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Executor applies batches to one table. It is safe for concurrent use.
type Executor struct {
	api   API
	table string
	set   *rules.Set
	opt   Options
	pulls pullCost

	streamMu sync.Mutex
	stream   knownStream // what the stream registry said last
}

// New returns an executor for table, whose layout and rules are set.
func New(api API, table string, set *rules.Set, opt Options) *Executor {
	opt.defaults()
	return &Executor{api: api, table: table, set: set, opt: opt}
}

// Result is the outcome of applying a batch.
type Result struct {
	// Failed is the index of the earliest record not fully applied, -1 when all were.
	Failed int
	// Err says why that record failed.
	Err   error
	Stats Stats
}

// Apply executes every group of b. Groups are independent: a failed group does not stop the
// others, since re-applying a group is a no-op (versions, watermarks, markers); the result
// names the earliest record left unapplied so the stream resumes there.
func (x *Executor) Apply(ctx context.Context, b *plan.Batch) Result {
	r := &run{x: x, ctx: ctx, failed: -1}
	r.readPulls = x.readPullTargets()
	r.parallel(len(b.Writes), func(i int) (int, error) { return b.Writes[i].Rec, r.write(&b.Writes[i].Write) })
	r.parallel(len(b.FanOuts), func(i int) (int, error) { return b.FanOuts[i].Rec, r.fanOut(&b.FanOuts[i].FanOut) })
	r.parallel(len(b.Jobs), func(i int) (int, error) { return b.Jobs[i].Rec, r.continueJob(b.Jobs[i].Item) })
	r.parallel(len(b.Pulls), func(i int) (int, error) { return b.Pulls[i].Rec, r.pull(&b.Pulls[i].Pull) })
	r.parallel(len(b.Watermarked), func(i int) (int, error) { return r.watermarked(&b.Watermarked[i]) })
	r.parallel(len(b.Relays), func(i int) (int, error) { return r.relay(&b.Relays[i]) })
	if rec, err := r.marked(b.Marked); err != nil {
		r.fail(rec, err)
	}
	// Refreshes run after the deltas, so that they read the state as the batch left it.
	r.parallel(len(b.Refreshes), func(i int) (int, error) { return b.Refreshes[i].Rec, r.refresh(&b.Refreshes[i].Refresh) })
	// Max and min after the writes, so a recompute sees the sources the batch mirrored.
	r.parallel(len(b.Extremes), func(i int) (int, error) { return b.Extremes[i].Rec, r.extreme(&b.Extremes[i]) })
	// Probes last: their answer says that the records before them are applied.
	r.answerProbes(b.Probes)
	x.pulls.observe(r.stats)
	return Result{Failed: r.failed, Err: r.err, Stats: r.stats}
}

// run is the state of one Apply.
type run struct {
	x      *Executor
	ctx    context.Context
	mu     sync.Mutex
	failed int
	err    error
	stats  Stats
	reads  map[string]*sharedRead // pulls' source and registry reads, shared within the batch
	// readPulls: this batch's pulls read their target first (Options.PullReads).
	readPulls bool
}

func (r *run) fail(rec int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Failures++
	if r.failed < 0 || rec < r.failed {
		r.failed, r.err = rec, err
	}
}

// parallel runs n jobs with bounded concurrency; a job returns the record it answers for.
func (r *run) parallel(n int, job func(i int) (int, error)) {
	if n == 0 {
		return
	}
	sem := make(chan struct{}, r.x.opt.Concurrency)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			if rec, err := job(i); err != nil {
				r.fail(rec, err)
			}
		}(i)
	}
	wg.Wait()
}

// key builds the table key of k.
func (x *Executor) key(k plan.Key) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{x.set.Table.PartitionKey: &types.AttributeValueMemberS{Value: k.PK}}
	if x.set.Table.SortKey != "" {
		m[x.set.Table.SortKey] = &types.AttributeValueMemberS{Value: k.SK}
	}
	return m
}
