package esm

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
)

// worker reads one shard and delivers its batches: one at a time, or with
// ParallelizationFactor > 1 split into lanes delivered concurrently (lanes.go).
type worker struct {
	m  *Mapping
	s  *shardState
	id string
	// lane, set on a lane's copy of the worker, turns its checkpoints into lane progress.
	lane *lane
	// iter is the next shard iterator; nil means "get one at pos".
	iter *string
	// ended: GetRecords returned no next iterator, the closed shard has no more records.
	ended bool
	// queue holds records read but not yet batched (the last batch was full).
	queue []types.Record
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
		g, err := w.read(ctx)
		if err != nil && !errors.Is(err, errShardGone) {
			return err
		}
		if len(g.recs) > 0 {
			if err := w.deliverAll(ctx, g.recs); err != nil {
				return err
			}
			m.touch()
		}
		// Records filtered out after the last delivered one are processed too.
		if err := w.commit(g.through); err != nil {
			return err
		}
		end := g.end
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

// commit checkpoints the shard at seq: processed up to it. In a lane, seq is the lane's
// progress, and the shard moves only as far as every lane has come.
func (w *worker) commit(seq string) error {
	if w.lane != nil {
		seq = w.lane.processed(seq)
	}
	return w.m.ckpt.advance(w.id, seq)
}

// gathered is a batch being read from a shard.
type gathered struct {
	recs []pending
	// through is the last record taken from the shard, filtered or not: once recs are
	// processed, the shard is processed up to it.
	through string
	// end: the closed shard was read to its end.
	end   bool
	size  int       // the event's size with recs
	first time.Time // when recs[0] was read
}

// read returns the next batch: up to BatchSize records (times ParallelizationFactor: one
// batch per lane) that passed the filter and fit one
// 6 MB event, gathered for at most MaximumBatchingWindow (none: as soon as a read returns
// records).
func (w *worker) read(ctx context.Context) (gathered, error) {
	m := w.m
	g := gathered{size: len(`{"Records":[]}`)}
	got := -1 // records the last GetRecords of this call returned; -1 before the first
	var began time.Time
	for {
		full, err := w.fill(&g)
		if err != nil || full {
			return g, err
		}
		if w.ended {
			g.end = true
			return g, nil
		}
		if got >= 0 {
			window := m.cfg.MaximumBatchingWindow
			switch {
			case len(g.recs) > 0 && (window == 0 || time.Since(g.first) >= window):
				return g, nil
			case got > 0:
				// More may be waiting: read again at once.
			case len(g.recs) == 0 && g.through != "":
				return g, nil // only filtered records: checkpoint them
			default:
				pause := m.cfg.PollInterval
				if len(g.recs) == 0 {
					m.polled(w.s, began)
				} else {
					pause = min(pause, window-time.Since(g.first))
				}
				if err := retry.Sleep(ctx, pause); err != nil {
					return g, err
				}
			}
		}
		if w.iter == nil {
			if err := w.refresh(ctx); err != nil {
				return g, err
			}
		}
		began = time.Now()
		out, err := m.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
			ShardIterator: w.iter, Limit: aws.Int32(int32(min(maxGetRecords, m.cfg.gather()-len(g.recs)))),
		})
		if err != nil {
			if ctx.Err() != nil {
				return g, ctx.Err()
			}
			if err := w.readFailed(ctx, err); err != nil {
				return g, err
			}
			got = -1
			continue
		}
		w.iter = out.NextShardIterator
		w.ended = w.iter == nil
		for _, r := range out.Records {
			if r.Dynamodb != nil && r.Dynamodb.SequenceNumber != nil {
				w.pos = *r.Dynamodb.SequenceNumber
			}
		}
		w.queue = append(w.queue, out.Records...)
		if got = len(out.Records); got > 0 {
			m.touch()
		}
	}
}

// maxPayload is Lambda's limit for a synchronous invocation's payload, which bounds the
// batches an event source mapping sends.
const maxPayload = 6 * 1024 * 1024

// fill moves records read from the shard into g until g is full (BatchSize records times
// ParallelizationFactor, or the next record would make the event exceed 6 MB: it starts the
// next batch; lanes get a share of g, so each lane's batches fit too).
func (w *worker) fill(g *gathered) (full bool, err error) {
	m := w.m
	for len(w.queue) > 0 {
		r := w.queue[0]
		if r.Dynamodb == nil || r.Dynamodb.SequenceNumber == nil {
			m.log.Error("esm: stream record without sequence number skipped", "shard", w.id, "eventID", aws.ToString(r.EventID))
			w.queue = w.queue[1:]
			continue
		}
		p, keep, err := m.prepare(r)
		if err != nil {
			// Lambda would deliver it; we cannot build its event, so it goes where
			// undeliverable records go, and the shard moves on.
			m.log.Error("esm: encoding stream record", "shard", w.id, "seq", p.seq, "error", err)
			if err := m.discard(w.id, []pending{p}, RetryAttemptsExhausted, 0, outcome{}); err != nil {
				return false, err
			}
			w.queue, g.through = w.queue[1:], p.seq
			continue
		}
		if keep && len(g.recs) > 0 && g.size+len(p.raw)+1 > maxPayload {
			return true, nil
		}
		w.queue, g.through = w.queue[1:], p.seq
		if !keep {
			m.stats.filtered.Add(1)
			continue
		}
		m.stats.records.Add(1)
		g.recs = append(g.recs, p)
		g.size += len(p.raw) + 1
		if g.first.IsZero() {
			g.first = time.Now()
		}
		if len(g.recs) >= m.cfg.gather() {
			return true, nil
		}
	}
	return false, nil
}

// prepare encodes r for the event and applies the filter.
func (m *Mapping) prepare(r types.Record) (p pending, keep bool, err error) {
	p = pending{seq: aws.ToString(r.Dynamodb.SequenceNumber), created: aws.ToTime(r.Dynamodb.ApproximateCreationDateTime),
		item: itemKey(r.Dynamodb.Keys)}
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
	return p, keep, nil
}

// readFailed handles a GetRecords error: an expired iterator is renewed after the last
// record read, trimmed data restarts at the trim horizon, throttling is retried after a
// pause, and anything else also renews the iterator after the pause (DynamoDB Local answers
// an unusable iterator with a ValidationException, which retrying it would repeat forever).
func (w *worker) readFailed(ctx context.Context, err error) error {
	var expired *types.ExpiredIteratorException
	var trimmed *types.TrimmedDataAccessException
	var gone *types.ResourceNotFoundException
	var throttled *types.LimitExceededException
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
	case !errors.As(err, &throttled):
		w.iter = nil
	}
	w.m.log.Warn("esm: reading shard", "shard", w.id, "error", err)
	return retry.Sleep(ctx, w.m.cfg.PollInterval)
}

// trimmed restarts at the oldest record left. With a position (the checkpoint, or the last
// record read) the records after it are gone, which deserves a warning. Without one nothing
// was lost: DynamoDB Local refuses as trimmed an iterator taken while a new shard was empty
// once its first record arrives with a later sequence number than the shard's start, as when
// several tables start at once (they share one sequence). Every record in such a shard came
// after the mapping started, so the trim horizon is also where LATEST would have read.
func (w *worker) trimmed() {
	if w.pos == "" {
		w.m.log.Debug("esm: iterator refused as trimmed before any record was read; reading from the trim horizon", "shard", w.id, "start", w.start)
	} else {
		w.m.log.Warn("esm: records after the checkpoint were trimmed from the stream; continuing at the trim horizon", "shard", w.id, "after", w.pos)
	}
	w.pos, w.start, w.iter, w.queue = "", types.ShardIteratorTypeTrimHorizon, nil, nil
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
		if err := retry.Sleep(ctx, m.cfg.PollInterval); err != nil {
			return err
		}
	}
}
