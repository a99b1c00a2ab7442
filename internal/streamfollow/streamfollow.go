// Package streamfollow reads a DynamoDB stream forward from one record, for the rare restore
// that needs to know what followed a record its batch did not hold (apply.StreamReader): the
// records of Denorm's own writes after an application's write show which of them applied
// records again. It is I/O at the edge: the records it yields are decoded, never planned.
//
// How far such a read goes is the processor's lag, so a processor far behind would read the
// same stretch of the stream again for each restore. The reader keeps an index of what it
// has read (each key's records, by position) and reads only what is new: a later read from
// a record inside that stretch fetches its key's records one by one, then goes on from
// where the last read stopped.
package streamfollow

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/record"
)

// API is what the reader needs of the DynamoDB Streams client.
type API interface {
	DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Reader follows streams through api. It is safe for concurrent use, though reads run one
// at a time since they share the index (apply's executor makes one at a time anyway). How
// far one After reads is bounded by its context: the caller gives it a deadline (apply
// gives a restore's read a time budget), and a read that reaches it stops with an error
// saying how many records it read. Limit, when above zero, bounds the records one After
// reads as well (tests). IndexLimit bounds the records indexed (default DefaultIndexLimit;
// IndexLimitFor a function's memory): past it the oldest stretches are forgotten, and a
// read from inside one reads afresh. The index lives as long as the reader: in Lambda, as
// long as the warm container.
type Reader struct {
	api        API
	Limit      int
	IndexLimit int
	mu         sync.Mutex
	known      map[string][]types.Shard // per stream ARN, as last described
	indexes    indexes
}

// New returns a Reader of api.
func New(api API) *Reader {
	return &Reader{api: api, IndexLimit: DefaultIndexLimit, known: map[string][]types.Shard{}}
}

// ErrNotFound: no shard of the stream holds the record (trimmed, or another stream).
var ErrNotFound = errors.New("record not found in the stream")

// errStale: an indexed record is gone from the stream (trimmed) before any was passed on:
// the index is dropped and the stream read afresh.
var errStale = errors.New("an indexed record is gone from the stream")

// After calls each with every record after seq in stream streamARN whose keys hold key
// (attribute name to string value; nil for every record), in stream order for seq's
// partition (its shard, then that shard's children), until each returns false, the stream
// has nothing more for now, or ctx is done or Limit records were read (then it returns an
// error). Other records are passed over without being decoded. It returns how many records
// after seq it read, of every key, fetched from the index or read anew.
func (r *Reader) After(ctx context.Context, streamARN, seq string, key map[string]string, each func(*record.Change) bool) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rd := &reading{r: r, ctx: ctx, arn: streamARN, seq: seq, key: key, each: each}
	if err := ctx.Err(); err != nil {
		return 0, rd.stopped(err)
	}
	if k, ok := keyString(key); ok {
		if ix, at := r.indexes.covering(streamARN, seq, k); ix != nil {
			err := rd.fetch(ix, ix.keys[k][at+1:])
			if !errors.Is(err, errStale) {
				return rd.read, err
			}
		}
	}
	shards, err := r.shards(ctx, streamARN, false)
	if err != nil {
		return rd.read, rd.fail(err)
	}
	for pass := 0; pass < 2; pass++ {
		for _, sh := range shards {
			if !holds(sh, seq) {
				continue
			}
			found, err := rd.from(sh)
			if err != nil || found {
				return rd.read, err
			}
		}
		// A shard created since the last description may hold it.
		if shards, err = r.shards(ctx, streamARN, true); err != nil {
			return rd.read, rd.fail(err)
		}
	}
	return rd.read, fmt.Errorf("following %s after %s: %w", streamARN, seq, ErrNotFound)
}

// reading is one After.
type reading struct {
	r         *Reader
	ctx       context.Context
	arn       string
	seq       string
	key       map[string]string
	each      func(*record.Change) bool
	read      int
	delivered int // records passed to each
}

// stopped is the error of a read whose budget (its context, or Limit) ran out.
func (rd *reading) stopped(why error) error {
	return fmt.Errorf("following %s after %s: stopped after %d records: %w", rd.arn, rd.seq, rd.read, why)
}

// count counts one record read; past Limit, it is the error that stops the read.
func (rd *reading) count() error {
	rd.read++
	if rd.r.Limit > 0 && rd.read > rd.r.Limit {
		return rd.stopped(fmt.Errorf("more than %d records", rd.r.Limit))
	}
	return nil
}

// startsAt reports whether a page read at sequence number seq starts with its record.
func startsAt(out *dynamodbstreams.GetRecordsOutput, seq string) bool {
	return len(out.Records) > 0 && out.Records[0].Dynamodb != nil && aws.ToString(out.Records[0].Dynamodb.SequenceNumber) == seq
}

// fail is the error of an API call: stopped, when the read's context is done.
func (rd *reading) fail(err error) error {
	if rd.ctx.Err() != nil {
		return rd.stopped(rd.ctx.Err())
	}
	return fmt.Errorf("following %s: %w", rd.arn, err)
}

// from starts reading shard sh at seq (which must be its record at that position, else
// found is false), indexing what it reads, then goes on as scan does.
func (rd *reading) from(sh types.Shard) (found bool, err error) {
	it, err := rd.r.api.GetShardIterator(rd.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(rd.arn), ShardId: sh.ShardId,
		ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(rd.seq)})
	if err != nil {
		if rd.ctx.Err() != nil {
			return true, rd.stopped(rd.ctx.Err()) // no other shard is read either
		}
		return false, nil // not this shard's, or trimmed from it
	}
	out, err := rd.r.api.GetRecords(rd.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		return true, rd.fail(err)
	}
	if !startsAt(out, rd.seq) {
		return false, nil // another shard's sequence number
	}
	ix := &index{arn: rd.arn, keys: map[string][]pos{}, shard: sh, iter: out.NextShardIterator, closed: out.NextShardIterator == nil}
	ix.add(out.Records[0])
	if stop, err := rd.consume(ix, out.Records[1:]); err != nil || stop {
		rd.r.indexes = rd.r.indexes.keep(ix, rd.r.IndexLimit)
		return true, err
	}
	return true, rd.scan(ix)
}

// fetch calls each with the indexed records at ps, read one by one, then reads on as scan
// does. Its error is errStale when a record is gone before any was passed on.
func (rd *reading) fetch(ix *index, ps []pos) error {
	for _, p := range ps {
		if err := rd.ctx.Err(); err != nil {
			return rd.stopped(err)
		}
		if err := rd.count(); err != nil {
			return err
		}
		it, err := rd.r.api.GetShardIterator(rd.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(rd.arn), ShardId: aws.String(p.shard),
			ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(p.seq)})
		var out *dynamodbstreams.GetRecordsOutput
		if err == nil {
			out, err = rd.r.api.GetRecords(rd.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)})
		}
		gone := err == nil && !startsAt(out, p.seq)
		var trimmed *types.TrimmedDataAccessException
		var missing *types.ResourceNotFoundException
		if gone || errors.As(err, &trimmed) || errors.As(err, &missing) {
			rd.r.indexes = rd.r.indexes.drop(ix)
			if rd.delivered == 0 {
				return errStale
			}
			return fmt.Errorf("following %s: indexed record %s: %w", rd.arn, p.seq, ErrNotFound)
		}
		if err != nil {
			return rd.fail(err)
		}
		if c, ok := decode(out.Records[0], rd.arn); ok {
			rd.delivered++
			if !rd.each(c) {
				return nil
			}
		}
	}
	return rd.scan(ix)
}

// scan reads on from where ix stopped, through the shard's children, calling each with the
// records whose keys hold the key and indexing all it reads, until each returns false or
// the stream has nothing more for now. ix is kept for later reads whatever happens: it
// always ends where reading stopped.
func (rd *reading) scan(ix *index) error {
	defer func() { rd.r.indexes = rd.r.indexes.keep(ix, rd.r.IndexLimit) }()
	renewed := false
	for {
		if err := rd.ctx.Err(); err != nil {
			return rd.stopped(err)
		}
		if ix.closed {
			// The shard is closed: its children hold its partitions' later records.
			child, ok, err := rd.child(ix.shard)
			if err != nil || !ok {
				return err
			}
			ix.shard, ix.last, ix.iter, ix.closed = child, "", nil, false
		}
		if ix.iter == nil {
			in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(rd.arn), ShardId: ix.shard.ShardId,
				ShardIteratorType: types.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: aws.String(ix.last)}
			if ix.last == "" {
				in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeTrimHorizon, nil
			}
			out, err := rd.r.api.GetShardIterator(rd.ctx, in)
			if err != nil {
				return rd.fail(err)
			}
			ix.iter = out.ShardIterator
		}
		out, err := rd.r.api.GetRecords(rd.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: ix.iter})
		var expired *types.ExpiredIteratorException
		switch {
		case errors.As(err, &expired) && !renewed:
			ix.iter, renewed = nil, true // kept from an earlier read: take a new one
			continue
		case err != nil:
			return rd.fail(err)
		}
		ix.iter, ix.closed = out.NextShardIterator, out.NextShardIterator == nil
		if stop, err := rd.consume(ix, out.Records); err != nil || stop {
			return err
		}
		if len(out.Records) == 0 && !ix.closed {
			return nil // the open shard's end: nothing more for now
		}
	}
}

// consume indexes recs and calls each with those whose keys hold the key, until each
// returns false (stop: the rest of the page is indexed, not passed on). Stopped by Limit
// in the middle of the page, it leaves ix to go on after the last record it indexed.
func (rd *reading) consume(ix *index, recs []types.Record) (stop bool, err error) {
	for _, rec := range recs {
		if rec.Dynamodb == nil {
			continue
		}
		ix.add(rec)
		if stop {
			continue
		}
		if err := rd.count(); err != nil {
			ix.iter, ix.closed = nil, false
			return true, err
		}
		if !holdsKey(rec, rd.key) {
			continue
		}
		if c, ok := decode(rec, rd.arn); ok {
			rd.delivered++
			stop = !rd.each(c)
		}
	}
	return stop, nil
}

// child is sh's child shard, describing the stream again when the cached description has
// none.
func (rd *reading) child(sh types.Shard) (types.Shard, bool, error) {
	shards, err := rd.r.shards(rd.ctx, rd.arn, false)
	if err != nil {
		return types.Shard{}, false, rd.fail(err)
	}
	if c, ok := childOf(shards, aws.ToString(sh.ShardId)); ok {
		return c, true, nil
	}
	if shards, err = rd.r.shards(rd.ctx, rd.arn, true); err != nil {
		return types.Shard{}, false, rd.fail(err)
	}
	c, ok := childOf(shards, aws.ToString(sh.ShardId))
	return c, ok, nil
}

func decode(rec types.Record, arn string) (*record.Change, bool) {
	raw, err := record.EncodeStreamRecord(rec, arn, "")
	if err != nil {
		return nil, false
	}
	c, err := record.Decode(raw)
	if err != nil {
		return nil, false
	}
	return &c, true
}

// shards describes the stream (every page), from the cache unless fresh.
func (r *Reader) shards(ctx context.Context, arn string, fresh bool) ([]types.Shard, error) {
	cached, ok := r.known[arn]
	if ok && !fresh {
		return cached, nil
	}
	var all []types.Shard
	var from *string
	for {
		out, err := r.api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn), ExclusiveStartShardId: from})
		if err != nil {
			return nil, fmt.Errorf("describing stream %s: %w", arn, err)
		}
		if out.StreamDescription == nil {
			break
		}
		all = append(all, out.StreamDescription.Shards...)
		if from = out.StreamDescription.LastEvaluatedShardId; from == nil {
			break
		}
	}
	r.known[arn] = all
	return all, nil
}

// holds reports whether seq is within shard sh's range (an open shard has no end).
func holds(sh types.Shard, seq string) bool {
	rg := sh.SequenceNumberRange
	if rg == nil {
		return true
	}
	if s := aws.ToString(rg.StartingSequenceNumber); s != "" && record.CompareSeq(seq, s) < 0 {
		return false
	}
	if e := aws.ToString(rg.EndingSequenceNumber); e != "" && record.CompareSeq(seq, e) > 0 {
		return false
	}
	return true
}

// holdsKey reports whether rec's keys hold every attribute of key as a string.
func holdsKey(rec types.Record, key map[string]string) bool {
	if rec.Dynamodb == nil {
		return false
	}
	for name, want := range key {
		v, ok := rec.Dynamodb.Keys[name].(*types.AttributeValueMemberS)
		if !ok || v.Value != want {
			return false
		}
	}
	return true
}

func childOf(shards []types.Shard, id string) (types.Shard, bool) {
	for _, s := range shards {
		if aws.ToString(s.ParentShardId) == id {
			return s, true
		}
	}
	return types.Shard{}, false
}
