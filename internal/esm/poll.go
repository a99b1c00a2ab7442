package esm

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/record"
)

// worker reads one shard and delivers its batches, one at a time (ParallelizationFactor 1).
type worker struct {
	m  *Mapping
	s  *shardState
	id string
	// iter is the next shard iterator; nil means "get one at pos".
	iter *string
	// pos is the sequence number of the last record read ("" before the first): a fresh
	// iterator starts after it.
	pos string
	// start is the iterator type used while pos is "".
	start types.ShardIteratorType
}

// errShardGone: the stream no longer has the shard (trimmed or the table deleted).
var errShardGone = errors.New("esm: shard is gone")

// runShard processes s from its checkpoint to its end (a closed shard) or until ctx ends.
func (m *Mapping) runShard(ctx context.Context, s *shardState) error {
	w := &worker{m: m, s: s, id: s.id, start: types.ShardIteratorTypeTrimHorizon}
	if cp, _ := m.ckpt.get(s.id); cp.SequenceNumber != "" {
		w.pos = cp.SequenceNumber
	} else if s.startLatest {
		w.start = types.ShardIteratorTypeLatest
	}
	m.log.Debug("esm: shard started", "shard", s.id, "after", w.pos, "start", w.start)
	for {
		batch, through, end, err := w.read(ctx)
		if err != nil && !errors.Is(err, errShardGone) {
			return err
		}
		if len(batch) > 0 {
			m.stats.batches.Add(1)
			if err := w.deliver(ctx, batch); err != nil {
				return err
			}
			m.touch()
		}
		// Records filtered out after the last delivered one are processed too.
		if err := w.commit(through); err != nil {
			return err
		}
		if errors.Is(err, errShardGone) {
			m.log.Warn("esm: shard disappeared from the stream; treating it as done", "shard", s.id)
			end = true
		}
		if end {
			if err := m.ckpt.complete(s.id); err != nil {
				return err
			}
			m.mu.Lock()
			s.done = true
			m.mu.Unlock()
			m.log.Debug("esm: shard completed", "shard", s.id)
			return nil
		}
	}
}

// commit checkpoints the shard at seq.
func (w *worker) commit(seq string) error {
	return w.m.ckpt.advance(w.id, seq)
}

// read returns the next batch: up to BatchSize records that passed the filter, gathered for
// at most MaximumBatchingWindow (none: as soon as a read returns records). through is the
// last record read, filtered or not; end reports the end of a closed shard.
func (w *worker) read(ctx context.Context) (batch []pending, through string, end bool, err error) {
	m := w.m
	var first time.Time // when this batch's first record was read
	for {
		if w.iter == nil {
			if err := w.refresh(ctx); err != nil {
				return batch, through, false, err
			}
		}
		began := time.Now()
		out, err := m.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
			ShardIterator: w.iter, Limit: aws.Int32(int32(min(maxGetRecords, m.cfg.BatchSize-len(batch)))),
		})
		if err != nil {
			if ctx.Err() != nil {
				return batch, through, false, ctx.Err()
			}
			if err := w.readFailed(ctx, err); err != nil {
				return batch, through, false, err
			}
			continue
		}
		w.iter = out.NextShardIterator
		for _, r := range out.Records {
			if r.Dynamodb == nil || r.Dynamodb.SequenceNumber == nil {
				m.log.Error("esm: stream record without sequence number skipped", "shard", w.id, "eventID", aws.ToString(r.EventID))
				continue
			}
			seq := *r.Dynamodb.SequenceNumber
			w.pos, through = seq, seq
			p, keep, err := m.prepare(r)
			if err != nil {
				// Lambda would deliver it; we cannot build its event, so it goes where
				// undeliverable records go, and the shard moves on.
				m.log.Error("esm: encoding stream record", "shard", w.id, "seq", seq, "error", err)
				if err := m.discard(w.id, []pending{p}, RetryAttemptsExhausted, 0, outcome{}); err != nil {
					return batch, through, false, err
				}
				continue
			}
			if !keep {
				continue
			}
			batch = append(batch, p)
			if first.IsZero() {
				first = time.Now()
			}
		}
		if len(out.Records) > 0 {
			m.touch()
		}
		window := m.cfg.MaximumBatchingWindow
		switch {
		case len(batch) >= m.cfg.BatchSize, w.iter == nil:
			return batch, through, w.iter == nil, nil
		case len(batch) > 0 && (window == 0 || time.Since(first) >= window):
			return batch, through, false, nil
		case len(out.Records) > 0:
			continue // more may be waiting: read again at once
		case len(batch) == 0 && through != "":
			return nil, through, false, nil // only filtered records: checkpoint them
		}
		pause := m.cfg.PollInterval
		if len(batch) == 0 {
			m.polled(w.s, began)
		} else {
			pause = min(pause, window-time.Since(first))
		}
		if err := sleep(ctx, pause); err != nil {
			return batch, through, false, err
		}
	}
}

// prepare encodes r for the event and applies the filter.
func (m *Mapping) prepare(r types.Record) (p pending, keep bool, err error) {
	p = pending{seq: aws.ToString(r.Dynamodb.SequenceNumber), created: aws.ToTime(r.Dynamodb.ApproximateCreationDateTime)}
	p.raw, err = record.EncodeStreamRecord(r, m.cfg.StreamARN, m.region)
	if err != nil {
		return p, false, err
	}
	keep, err = m.filter.Match(p.raw)
	if err != nil {
		// The encoder produced something the filter cannot read: let the function judge it.
		m.log.Error("esm: filtering stream record", "seq", p.seq, "error", err)
		keep = true
	}
	if keep {
		m.stats.records.Add(1)
	} else {
		m.stats.filtered.Add(1)
	}
	return p, keep, nil
}

// readFailed handles a GetRecords error: an expired iterator is renewed after the last
// record read, trimmed data restarts at the trim horizon, anything else is retried after
// a pause.
func (w *worker) readFailed(ctx context.Context, err error) error {
	var expired *types.ExpiredIteratorException
	var trimmed *types.TrimmedDataAccessException
	var gone *types.ResourceNotFoundException
	switch {
	case errors.As(err, &expired):
		w.m.log.Debug("esm: shard iterator expired; renewing", "shard", w.id, "after", w.pos)
		w.iter = nil
		return nil
	case errors.As(err, &trimmed):
		w.trimmed()
		return nil
	case errors.As(err, &gone):
		return errShardGone
	}
	w.m.log.Warn("esm: reading shard", "shard", w.id, "error", err)
	return sleep(ctx, w.m.cfg.PollInterval)
}

// trimmed restarts at the oldest record left: the records after the checkpoint are gone.
func (w *worker) trimmed() {
	w.m.log.Warn("esm: records after the checkpoint were trimmed from the stream; continuing at the trim horizon", "shard", w.id, "after", w.pos)
	w.pos, w.start, w.iter = "", types.ShardIteratorTypeTrimHorizon, nil
}

// refresh gets an iterator after the last record read, or at the shard's start position.
func (w *worker) refresh(ctx context.Context) error {
	m := w.m
	for {
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(m.cfg.StreamARN), ShardId: aws.String(w.id), ShardIteratorType: w.start}
		if w.pos != "" {
			in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(w.pos)
		}
		out, err := m.api.GetShardIterator(ctx, in)
		if err == nil && out.ShardIterator != nil {
			w.iter = out.ShardIterator
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var trimmed *types.TrimmedDataAccessException
		var gone *types.ResourceNotFoundException
		switch {
		case err == nil:
			return errShardGone // no iterator: nothing left to read
		case errors.As(err, &trimmed) && w.pos != "":
			w.trimmed()
			continue
		case errors.As(err, &gone):
			return errShardGone
		}
		m.log.Warn("esm: getting shard iterator", "shard", w.id, "error", err)
		if err := sleep(ctx, m.cfg.PollInterval); err != nil {
			return err
		}
	}
}
