package esm

import (
	"context"
	"encoding/json"
	"time"

	"github.com/denorm/denorm/internal/retry"
)

// pending is a record read from the stream that passed the filter, ready for delivery.
type pending struct {
	seq     string
	raw     json.RawMessage // the record as the event carries it
	created time.Time
	// item is the record's item key, which picks its lane (ParallelizationFactor > 1).
	item string
}

// maxBackoff caps the pause between retries of a batch.
const maxBackoff = 2 * time.Second

// deliver sends recs to the function until every record is processed or discarded, as
// Lambda does with one batch of a shard: a function error retries the batch (bisected when
// enabled, each half with its own retry count); reported batch item failures checkpoint
// before the lowest failed record and retry from it; records past their retry budget or
// their maximum age go to the on-failure destination. It returns early only when ctx ends
// or progress cannot be saved.
func (w *worker) deliver(ctx context.Context, recs []pending) error {
	m := w.m
	invokes := 0
	var last outcome
	for {
		if n := m.expired(recs); n > 0 {
			if err := w.discard(recs[:n], RecordAgeExceeded, invokes, last); err != nil {
				return err
			}
			if recs = recs[n:]; len(recs) == 0 {
				return nil
			}
		}
		if invokes > 0 {
			m.stats.retries.Add(1)
		}
		v := m.invokeBatch(ctx, recs)
		if err := ctx.Err(); err != nil {
			return err // an invocation cut short by shutdown proves nothing about the batch
		}
		invokes++
		last = v.out
		switch {
		case v.ok:
			return w.commit(recs[len(recs)-1].seq)
		case v.failedAt > 0:
			if err := w.commit(recs[v.failedAt-1].seq); err != nil {
				return err
			}
			recs = recs[v.failedAt:]
		case v.failedAt <= 0 && m.cfg.BisectBatchOnFunctionError && len(recs) > 1:
			// A function error, or a partial batch response failing the first record: with
			// ReportBatchItemFailures and bisect on, Lambda splits the batch at the returned
			// sequence number, and at the head that leaves nothing to split off but halves.
			// Splitting does not count against the retry budget; each half starts afresh.
			m.stats.bisects.Add(1)
			half := len(recs) / 2
			if err := w.deliver(ctx, recs[:half]); err != nil {
				return err
			}
			return w.deliver(ctx, recs[half:])
		}
		if r := m.cfg.maxRetries(); r >= 0 && invokes > r {
			return w.discard(recs, RetryAttemptsExhausted, invokes, last)
		}
		if err := retry.Sleep(ctx, retry.Backoff{Base: m.cfg.RetryBackoff, Max: maxBackoff}.Delay(invokes)); err != nil {
			return err
		}
	}
}

// discard sends recs to the on-failure destination and checkpoints past them: the shard
// moves on.
func (w *worker) discard(recs []pending, cond Condition, invokes int, last outcome) error {
	if err := w.m.discard(w.id, recs, cond, invokes, last); err != nil {
		return err
	}
	return w.commit(recs[len(recs)-1].seq)
}

// expired counts the records at the head of recs older than MaximumRecordAge. Records of a
// shard arrive in time order, so the expired ones are a prefix.
func (m *Mapping) expired(recs []pending) int {
	age := m.cfg.MaximumRecordAge
	if age <= 0 {
		return 0
	}
	n := 0
	for n < len(recs) && !recs[n].created.IsZero() && time.Since(recs[n].created) > age {
		n++
	}
	return n
}
