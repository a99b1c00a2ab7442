package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/record"
)

// Invoker wraps the function as the event source mapping sees it and injects the faults of
// an invocation: a crash after k writes and a short deadline.
type Invoker struct {
	next   esm.Invoker
	faults Faults
	dice   *dice
	budget *budget
	counts *counters
	// margin is the executor's DeadlineMargin: injected deadlines leave a little more.
	margin time.Duration
}

// Invoke implements esm.Invoker.
func (iv *Invoker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	raws, _ := record.SplitEvent(payload) // an unreadable event gets no fault: it fails anyway
	key := lastEventID(raws)
	var plan *crashPlan
	if iv.dice.hit(iv.faults.Crash) && iv.budget.take(key) {
		plan = &crashPlan{after: iv.dice.intN(7), lost: iv.dice.hit(iv.faults.LostWrite)}
		ctx = withCrash(ctx, plan)
	}
	parent := ctx
	var limit time.Duration
	if plan == nil && iv.dice.hit(iv.faults.Timeout) && iv.budget.take(key) {
		iv.counts.timeouts.Add(1)
		limit = iv.margin + time.Duration(10+iv.dice.intN(290))*time.Millisecond
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	resp, err := iv.next.Invoke(ctx, payload)
	if plan != nil {
		plan.mu.Lock()
		fired := plan.fired
		plan.mu.Unlock()
		if fired {
			trace(raws, "crashed")
			return nil, fmt.Errorf("runtime exited: %w", ErrCrash)
		}
	}
	if limit > 0 && parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		iv.counts.timedOut.Add(1)
		trace(raws, "timed out")
		//lint:ignore ST1005 Lambda's own words for an invocation that overran its timeout
		return nil, fmt.Errorf("Task timed out after %v", limit)
	}
	trace(raws, fmt.Sprintf("response %s, error %v", resp, err))
	return resp, err
}

// lastEventID is the eventID of the batch's last record ("" when it has none).
func lastEventID(batch []json.RawMessage) string {
	if len(batch) == 0 {
		return ""
	}
	var r struct {
		EventID string `json:"eventID"`
	}
	if json.Unmarshal(batch[len(batch)-1], &r) != nil {
		return ""
	}
	return r.EventID
}
