// Package streamfollow reads a DynamoDB stream forward from one record, for the rare restore
// that needs to know what followed a record its batch did not hold (apply.StreamReader): the
// records of Denorm's own writes after an application's write show which of them applied
// records again. It is I/O at the edge: the records it yields are decoded, never planned.
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

// Reader follows streams through api. How far one After reads is bounded by its context:
// the caller gives it a deadline (apply gives a restore's read a time budget), and a read
// that reaches it stops with an error saying how many records it read. Limit, when above
// zero, bounds the records one After reads as well (tests).
type Reader struct {
	api   API
	Limit int
	mu    sync.Mutex
	known map[string][]types.Shard // per stream ARN, as last described
}

// New returns a Reader of api.
func New(api API) *Reader { return &Reader{api: api, known: map[string][]types.Shard{}} }

// ErrNotFound: no shard of the stream holds the record (trimmed, or another stream).
var ErrNotFound = errors.New("record not found in the stream")

// After calls each with every record after seq in stream streamARN whose keys hold key
// (attribute name to string value; nil for every record), in stream order for seq's
// partition (its shard, then that shard's children), until each returns false, the stream
// has nothing more for now, or ctx is done or Limit records were read (then it returns an
// error). Other records are passed over without being decoded. It returns how many records
// after seq it read, of every key.
func (r *Reader) After(ctx context.Context, streamARN, seq string, key map[string]string, each func(*record.Change) bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, stopped(streamARN, seq, 0, err)
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
			found, read, err := r.from(ctx, streamARN, shards, sh, seq, key, each)
			if err != nil || found {
				return read, err
			}
		}
		// A shard created since the last description may hold it.
		if shards, err = r.shards(ctx, streamARN, true); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("following %s after %s: %w", streamARN, seq, ErrNotFound)
}

// from reads shard sh from seq (which must be its record at that position, else found is
// false), then its children, calling each; read counts the records after seq.
func (r *Reader) from(ctx context.Context, arn string, shards []types.Shard, sh types.Shard, seq string, key map[string]string, each func(*record.Change) bool) (found bool, read int, err error) {
	stop := func(why error) error { return stopped(arn, seq, read, why) }
	it, err := r.api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId,
		ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(seq)})
	if err != nil {
		if ctx.Err() != nil {
			return true, 0, stop(ctx.Err()) // no other shard is read either
		}
		return false, 0, nil // not this shard's, or trimmed from it
	}
	first := true
	iter := it.ShardIterator
	for {
		for iter != nil {
			if err := ctx.Err(); err != nil {
				return true, read, stop(err) // no other shard is read either
			}
			out, err := r.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				if ctx.Err() != nil {
					return true, read, stop(ctx.Err())
				}
				return !first, read, fmt.Errorf("following %s: %w", arn, err)
			}
			iter = out.NextShardIterator
			for _, rec := range out.Records {
				if first {
					first = false
					if rec.Dynamodb == nil || aws.ToString(rec.Dynamodb.SequenceNumber) != seq {
						return false, read, nil // another shard's sequence number
					}
					continue
				}
				read++
				if r.Limit > 0 && read > r.Limit {
					return true, read, stop(fmt.Errorf("more than %d records", r.Limit))
				}
				if !holdsKey(rec, key) {
					continue
				}
				raw, err := record.EncodeStreamRecord(rec, arn, "")
				if err != nil {
					continue
				}
				c, err := record.Decode(raw)
				if err != nil {
					continue
				}
				if !each(&c) {
					return true, read, nil
				}
			}
			if len(out.Records) == 0 {
				if first {
					return false, read, nil
				}
				if iter != nil {
					return true, read, nil // the open shard's end: nothing more for now
				}
			}
		}
		if first {
			return false, read, nil
		}
		// The shard is closed: its children hold its partitions' later records.
		child, ok := childOf(shards, aws.ToString(sh.ShardId))
		if !ok {
			if shards, err = r.shards(ctx, arn, true); err != nil {
				return true, read, err
			}
			if child, ok = childOf(shards, aws.ToString(sh.ShardId)); !ok {
				return true, read, nil
			}
		}
		out, err := r.api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: child.ShardId,
			ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
		if err != nil {
			return true, read, fmt.Errorf("following %s: %w", arn, err)
		}
		sh, iter = child, out.ShardIterator
	}
}

// stopped is the error of a read whose budget (its context, or Limit) ran out.
func stopped(arn, seq string, read int, why error) error {
	return fmt.Errorf("following %s after %s: stopped after %d records: %w", arn, seq, read, why)
}

// shards describes the stream (every page), from the cache unless fresh.
func (r *Reader) shards(ctx context.Context, arn string, fresh bool) ([]types.Shard, error) {
	r.mu.Lock()
	cached, ok := r.known[arn]
	r.mu.Unlock()
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
	r.mu.Lock()
	r.known[arn] = all
	r.mu.Unlock()
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
