package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/record"
)

// Invoker wraps the function as the event source mapping sees it and injects the faults of
// an invocation: a crash after k writes, a short deadline, and (with BisectItemFailures) a
// batch item failure at the head of a batch returned as a function error.
type Invoker struct {
	next   esm.Invoker
	faults Faults
	dice   *dice
	budget *budget
	counts *counters
	// margin is the executor's DeadlineMargin: injected deadlines leave a little more.
	margin time.Duration
	// bisectAtHead: see Config.BisectItemFailures.
	bisectAtHead bool
}

// BisectAtHead wraps next so that a batch item failure at the first record of a batch of
// several is a function error, which the emulator bisects (see Config.BisectItemFailures).
func BisectAtHead(next esm.Invoker) esm.Invoker {
	return &Invoker{next: next, dice: newDice(0, 0), budget: newBudget(0), counts: &counters{}, bisectAtHead: true}
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
			return nil, fmt.Errorf("runtime exited: %w", ErrCrash)
		}
	}
	if limit > 0 && parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		iv.counts.timedOut.Add(1)
		return nil, fmt.Errorf("Task timed out after %v", limit)
	}
	if err == nil && iv.bisectAtHead && len(raws) > 1 && failedAtHead(resp, raws[0]) {
		iv.counts.bisectedAtHead.Add(1)
		return nil, errors.New("chaos: batch item failure at the first record, returned as a function error so the batch is bisected")
	}
	return resp, err
}

// failedAtHead reports whether resp names the batch's first record as failed.
func failedAtHead(resp []byte, first json.RawMessage) bool {
	var r events.DynamoDBEventResponse
	if json.Unmarshal(resp, &r) != nil || len(r.BatchItemFailures) == 0 {
		return false
	}
	head := seqOf(first)
	for _, f := range r.BatchItemFailures {
		if f.ItemIdentifier == head && head != "" {
			return true
		}
	}
	return false
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

// seqOf is a record's SequenceNumber, read without the decoder (the record may be poison).
func seqOf(raw json.RawMessage) string {
	var r struct {
		Dynamodb struct {
			SequenceNumber string
		} `json:"dynamodb"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	return r.Dynamodb.SequenceNumber
}
