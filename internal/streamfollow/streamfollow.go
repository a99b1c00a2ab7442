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
	"sort"
	"strings"
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

// DefaultIndexLimit bounds the records the reader keeps positions of: 101 bytes a record,
// measured with 1,000,000 records of 200,000 keys.
const DefaultIndexLimit = 1_000_000

// Reader follows streams through api. It is safe for concurrent use; reads run one at a
// time, since they share the index. How far one After reads is bounded by its context: the
// caller gives it a deadline (apply gives a restore's read a time budget), and a read that
// reaches it stops with an error saying how many records it read. Limit, when above zero,
// bounds the records one After reads as well (tests). IndexLimit bounds the records indexed
// (default DefaultIndexLimit); past it, the index is dropped and reads start afresh.
type Reader struct {
	api        API
	Limit      int
	IndexLimit int
	mu         sync.Mutex
	known      map[string][]types.Shard // per stream ARN, as last described
	indexes    []*index
}

// New returns a Reader of api.
func New(api API) *Reader {
	return &Reader{api: api, IndexLimit: DefaultIndexLimit, known: map[string][]types.Shard{}}
}

// ErrNotFound: no shard of the stream holds the record (trimmed, or another stream).
var ErrNotFound = errors.New("record not found in the stream")

// errStale: an indexed record is no longer in the stream (trimmed): the index is dropped.
var errStale = errors.New("an indexed record is gone from the stream")

// index is a stretch of one shard's partitions read in order (the shard, then its
// children), from its first record on: where each key's records lie, and where reading
// stopped, to go on from there.
type index struct {
	arn  string
	keys map[string][]pos // per key (keyOfRecord), in stream order
	n    int
	// Where reading stopped: after record last of shard, with iter (nil: take one after
	// last); closed when the shard's end was read (its child is next).
	shard  types.Shard
	last   string
	iter   *string
	closed bool
}

type pos struct{ shard, seq string }

// After calls each with every record after seq in stream streamARN whose keys hold key
// (attribute name to string value; nil for every record), in stream order for seq's
// partition (its shard, then that shard's children), until each returns false, the stream
// has nothing more for now, or ctx is done or Limit records were read (then it returns an
// error). Other records are passed over without being decoded. It returns how many records
// after seq it read, of every key, fetched from the index or read anew.
func (r *Reader) After(ctx context.Context, streamARN, seq string, key map[string]string, each func(*record.Change) bool) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rd := &reading{Reader: r, ctx: ctx, arn: streamARN, seq: seq, key: key, each: each}
	if err := ctx.Err(); err != nil {
		return 0, rd.stopped(err)
	}
	if k, ok := keyString(key); ok {
		if ix, at := r.covering(streamARN, seq, k); ix != nil {
			done, err := rd.fetch(ix, ix.keys[k][at+1:])
			if err == nil && !done {
				err = rd.scan(ix)
			}
			if !errors.Is(err, errStale) {
				return rd.read, err
			}
			// The index holds a record the stream no longer does: read afresh.
		}
	}
	shards, err := r.shards(ctx, streamARN, false)
	if err != nil {
		return 0, err
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
			return 0, err
		}
	}
	return 0, fmt.Errorf("following %s after %s: %w", streamARN, seq, ErrNotFound)
}

// covering is the index whose stretch holds seq as a record of key k, and its position in
// k's records (nil when none does: seq is not indexed under k, or k is not the whole key
// of its record, and the stream is read instead).
func (r *Reader) covering(arn, seq, k string) (*index, int) {
	for _, ix := range r.indexes {
		if ix.arn != arn {
			continue
		}
		ps := ix.keys[k]
		i := sort.Search(len(ps), func(i int) bool { return record.CompareSeq(ps[i].seq, seq) >= 0 })
		if i < len(ps) && ps[i].seq == seq {
			return ix, i
		}
	}
	return nil, 0
}

// trim drops the oldest indexes while they hold more than IndexLimit records.
func (r *Reader) trim() {
	total := 0
	for _, ix := range r.indexes {
		total += ix.n
	}
	for len(r.indexes) > 0 && total > r.IndexLimit {
		total -= r.indexes[0].n
		r.indexes = r.indexes[1:]
	}
}

func (r *Reader) drop(ix *index) {
	for i, o := range r.indexes {
		if o == ix {
			r.indexes = append(r.indexes[:i], r.indexes[i+1:]...)
			return
		}
	}
}

// reading is one After.
type reading struct {
	*Reader
	ctx  context.Context
	arn  string
	seq  string
	key  map[string]string
	each func(*record.Change) bool
	read int
}

// stopped is the error of a read whose budget (its context, or Limit) ran out.
func (rd *reading) stopped(why error) error {
	return fmt.Errorf("following %s after %s: stopped after %d records: %w", rd.arn, rd.seq, rd.read, why)
}

// from starts reading shard sh at seq (which must be its record at that position, else
// found is false), indexing what it reads, then goes on as scan does.
func (rd *reading) from(sh types.Shard) (found bool, err error) {
	it, err := rd.api.GetShardIterator(rd.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(rd.arn), ShardId: sh.ShardId,
		ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(rd.seq)})
	if err != nil {
		if rd.ctx.Err() != nil {
			return true, rd.stopped(rd.ctx.Err()) // no other shard is read either
		}
		return false, nil // not this shard's, or trimmed from it
	}
	out, err := rd.api.GetRecords(rd.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		if rd.ctx.Err() != nil {
			return true, rd.stopped(rd.ctx.Err())
		}
		return false, nil
	}
	if len(out.Records) == 0 || out.Records[0].Dynamodb == nil || aws.ToString(out.Records[0].Dynamodb.SequenceNumber) != rd.seq {
		return false, nil // another shard's sequence number
	}
	ix := &index{arn: rd.arn, keys: map[string][]pos{}, shard: sh, last: rd.seq, iter: out.NextShardIterator, closed: out.NextShardIterator == nil}
	ix.add(out.Records[0])
	if stop, err := rd.consume(ix, out.Records[1:]); err != nil || stop {
		rd.settle(ix, err)
		return true, err
	}
	return true, rd.scan(ix)
}

// settle keeps ix for later reads, unless this one stopped in the middle of a page (by
// Limit or an error: its end is not where reading stopped) or the indexes hold too much.
func (rd *reading) settle(ix *index, err error) {
	if err != nil && rd.ctx.Err() == nil {
		rd.drop(ix)
		return
	}
	if !rd.indexed(ix) {
		rd.indexes = append(rd.indexes, ix)
	}
	rd.trim()
}

func (r *Reader) indexed(ix *index) bool {
	for _, o := range r.indexes {
		if o == ix {
			return true
		}
	}
	return false
}

// fetch calls each with the indexed records at ps, read one by one. done: each returned
// false.
func (rd *reading) fetch(ix *index, ps []pos) (done bool, err error) {
	for _, p := range ps {
		if err := rd.ctx.Err(); err != nil {
			return true, rd.stopped(err)
		}
		rd.read++
		if rd.Limit > 0 && rd.read > rd.Limit {
			return true, rd.stopped(fmt.Errorf("more than %d records", rd.Limit))
		}
		it, err := rd.api.GetShardIterator(rd.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(rd.arn), ShardId: aws.String(p.shard),
			ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(p.seq)})
		if err != nil {
			if rd.ctx.Err() != nil {
				return true, rd.stopped(rd.ctx.Err())
			}
			rd.drop(ix) // trimmed, most likely
			return true, fmt.Errorf("following %s: record %s: %v: %w", rd.arn, p.seq, err, errStale)
		}
		out, err := rd.api.GetRecords(rd.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)})
		if err != nil {
			if rd.ctx.Err() != nil {
				return true, rd.stopped(rd.ctx.Err())
			}
			return true, fmt.Errorf("following %s: record %s: %w", rd.arn, p.seq, err)
		}
		if len(out.Records) == 0 || out.Records[0].Dynamodb == nil || aws.ToString(out.Records[0].Dynamodb.SequenceNumber) != p.seq {
			rd.drop(ix)
			return true, fmt.Errorf("following %s: record %s: %w", rd.arn, p.seq, errStale)
		}
		if c, ok := decode(out.Records[0], rd.arn); ok && !rd.each(c) {
			return true, nil
		}
	}
	return false, nil
}

// scan reads on from where ix stopped, through the shard's children, calling each with the
// records whose keys hold the key and indexing all it reads, until each returns false or
// the stream has nothing more for now.
func (rd *reading) scan(ix *index) (err error) {
	defer func() { rd.settle(ix, err) }()
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
			out, err := rd.api.GetShardIterator(rd.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(rd.arn), ShardId: child.ShardId,
				ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
			if err != nil {
				return fmt.Errorf("following %s: %w", rd.arn, err)
			}
			ix.shard, ix.iter, ix.closed = child, out.ShardIterator, false
		}
		if ix.iter == nil {
			out, err := rd.api.GetShardIterator(rd.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(rd.arn), ShardId: ix.shard.ShardId,
				ShardIteratorType: types.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: aws.String(ix.last)})
			if err != nil {
				if rd.ctx.Err() != nil {
					return rd.stopped(rd.ctx.Err())
				}
				return fmt.Errorf("following %s: %w", rd.arn, err)
			}
			ix.iter = out.ShardIterator
		}
		out, err := rd.api.GetRecords(rd.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: ix.iter})
		var expired *types.ExpiredIteratorException
		switch {
		case errors.As(err, &expired) && !renewed:
			ix.iter, renewed = nil, true // kept from an earlier read: take a new one
			continue
		case err != nil && rd.ctx.Err() != nil:
			return rd.stopped(rd.ctx.Err())
		case err != nil:
			return fmt.Errorf("following %s: %w", rd.arn, err)
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
// returns false (stop: the rest of the page is indexed, not passed on).
func (rd *reading) consume(ix *index, recs []types.Record) (stop bool, err error) {
	for _, rec := range recs {
		if rec.Dynamodb == nil {
			continue
		}
		ix.last = aws.ToString(rec.Dynamodb.SequenceNumber)
		ix.add(rec)
		if stop {
			continue
		}
		rd.read++
		if rd.Limit > 0 && rd.read > rd.Limit {
			return true, rd.stopped(fmt.Errorf("more than %d records", rd.Limit))
		}
		if !holdsKey(rec, rd.key) {
			continue
		}
		if c, ok := decode(rec, rd.arn); ok && !rd.each(c) {
			stop = true
		}
	}
	return stop, nil
}

// add indexes rec, read from the shard ix is at.
func (ix *index) add(rec types.Record) {
	if k, ok := recordKey(rec); ok {
		ix.keys[k] = append(ix.keys[k], pos{aws.ToString(ix.shard.ShardId), aws.ToString(rec.Dynamodb.SequenceNumber)})
		ix.n++
	}
}

// child is sh's child shard, describing the stream again when the cached description has
// none.
func (rd *reading) child(sh types.Shard) (types.Shard, bool, error) {
	shards, err := rd.shards(rd.ctx, rd.arn, false)
	if err != nil {
		return types.Shard{}, false, err
	}
	if c, ok := childOf(shards, aws.ToString(sh.ShardId)); ok {
		return c, true, nil
	}
	if shards, err = rd.shards(rd.ctx, rd.arn, true); err != nil {
		return types.Shard{}, false, err
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

// keyString is key as the index names it (false for nil: every record).
func keyString(key map[string]string) (string, bool) {
	if key == nil {
		return "", false
	}
	names := make([]string, 0, len(key))
	for n := range key {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
		b.WriteString(key[n])
		b.WriteByte(0)
	}
	return b.String(), true
}

// recordKey is rec's keys as keyString names them (false when one is not a string: such a
// record holds no key After is given).
func recordKey(rec types.Record) (string, bool) {
	key := make(map[string]string, len(rec.Dynamodb.Keys))
	for n, v := range rec.Dynamodb.Keys {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return "", false
		}
		key[n] = s.Value
	}
	return keyString(key)
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
