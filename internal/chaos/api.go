package chaos

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
)

// ErrCrash is the error a crashed invocation's writes get.
var ErrCrash = errors.New("chaos: injected crash")

// API wraps the executor's DynamoDB client: it throttles calls, makes transactions conflict
// and, inside an invocation the Invoker chose to crash, fails every write after the k-th.
// The application's own writes do not go through it.
type API struct {
	next   apply.API
	faults Faults
	dice   *dice
	counts *counters
}

// NewAPI wraps next.
func NewAPI(next apply.API, f Faults, seed uint64, c *counters) *API {
	return &API{next: next, faults: f, dice: newDice(seed, 1), counts: c}
}

// crashPlan is one invocation's crash: after `after` writes, every write fails.
type crashPlan struct {
	mu    sync.Mutex
	after int
	lost  bool // the fatal write is applied before its error is returned
	fired bool
}

type crashKey struct{}

func withCrash(ctx context.Context, p *crashPlan) context.Context {
	return context.WithValue(ctx, crashKey{}, p)
}

// gate decides a write's fate under the invocation's crash plan: run it and report the
// result, fail before it, or run it and fail after it (lost response).
func (a *API) gate(ctx context.Context) (run, fail bool) {
	p, _ := ctx.Value(crashKey{}).(*crashPlan)
	if p == nil {
		return true, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fired {
		return false, true
	}
	if p.after > 0 {
		p.after--
		return true, false
	}
	p.fired = true
	a.counts.crashes.Add(1)
	if p.lost {
		a.counts.lostWrites.Add(1)
		return true, true
	}
	return false, true
}

func (a *API) throttled() error {
	if !a.dice.hit(a.faults.Throttle) {
		return nil
	}
	a.counts.throttles.Add(1)
	return &types.ProvisionedThroughputExceededException{Message: aws.String("chaos: injected throttling")}
}

// write runs a write call through the throttle and the crash plan.
func write[T any](a *API, ctx context.Context, call func() (*T, error)) (*T, error) {
	if err := a.throttled(); err != nil {
		return nil, err
	}
	run, fail := a.gate(ctx)
	var out *T
	var err error
	if run {
		out, err = call()
	}
	if fail {
		return nil, ErrCrash
	}
	return out, err
}

// GetItem implements apply.API.
func (a *API) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := a.throttled(); err != nil {
		return nil, err
	}
	return a.next.GetItem(ctx, in, o...)
}

// TransactGetItems implements apply.API.
func (a *API) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	if err := a.throttled(); err != nil {
		return nil, err
	}
	return a.next.TransactGetItems(ctx, in, o...)
}

// Query implements apply.API.
func (a *API) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := a.throttled(); err != nil {
		return nil, err
	}
	return a.next.Query(ctx, in, o...)
}

// PutItem implements apply.API.
func (a *API) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return write(a, ctx, func() (*dynamodb.PutItemOutput, error) { return a.next.PutItem(ctx, in, o...) })
}

// UpdateItem implements apply.API.
func (a *API) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return write(a, ctx, func() (*dynamodb.UpdateItemOutput, error) { return a.next.UpdateItem(ctx, in, o...) })
}

// DeleteItem implements apply.API.
func (a *API) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return write(a, ctx, func() (*dynamodb.DeleteItemOutput, error) { return a.next.DeleteItem(ctx, in, o...) })
}

// TransactWriteItems implements apply.API; it may also fail with TransactionConflict.
func (a *API) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if a.dice.hit(a.faults.Conflict) {
		a.counts.conflicts.Add(1)
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		if len(reasons) > 0 {
			reasons[a.dice.intN(len(reasons))].Code = aws.String("TransactionConflict")
		}
		return nil, &types.TransactionCanceledException{
			Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]"),
			CancellationReasons: reasons,
		}
	}
	return write(a, ctx, func() (*dynamodb.TransactWriteItemsOutput, error) { return a.next.TransactWriteItems(ctx, in, o...) })
}

// counters are the harness's fault counters, shared by the API, the invoker and the hooks.
type counters struct {
	throttles, conflicts, crashes, lostWrites, timeouts, timedOut, lostResponses atomic.Int64
	poisoned, ttl, staleDenorm                                                   atomic.Int64
}

func (c *counters) snapshot() Counts {
	return Counts{
		Throttles: c.throttles.Load(), Conflicts: c.conflicts.Load(), Crashes: c.crashes.Load(),
		LostWrites: c.lostWrites.Load(), Timeouts: c.timeouts.Load(), TimedOut: c.timedOut.Load(),
		LostResponses: c.lostResponses.Load(), Poisoned: c.poisoned.Load(), TTLRecords: c.ttl.Load(),
		StaleDenorm: c.staleDenorm.Load(),
	}
}
