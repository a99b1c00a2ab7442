package streamfollow

import (
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/record"
)

// DefaultIndexLimit bounds the records a reader keeps positions of (IndexLimitFor 512 MB).
const DefaultIndexLimit = 1_024_000

// IndexLimitFor is the index limit for a process of memoryMB: a fifth of it, at 101 bytes a
// record (BenchmarkIndex: 1,000,000 records of 200,000 keys; keys with fewer records cost
// more a record).
func IndexLimitFor(memoryMB int) int { return memoryMB * 2000 }

// index is a stretch of one shard's partitions read in order (the shard, then its
// children), from its first record on: where each key's records lie, and where reading
// stopped, to go on from there.
type index struct {
	arn  string
	keys map[string][]pos // per key (recordKey), in stream order
	n    int
	// Where reading stopped: after record last of shard ("" for none of it yet), with iter
	// (nil: take one after last); closed when the shard's end was read (its child is next).
	shard  types.Shard
	last   string
	iter   *string
	closed bool
}

type pos struct{ shard, seq string }

// add indexes rec, read from the shard ix is at, and moves ix's end past it.
func (ix *index) add(rec types.Record) {
	ix.last = aws.ToString(rec.Dynamodb.SequenceNumber)
	if k, ok := recordKey(rec); ok {
		ix.keys[k] = append(ix.keys[k], pos{aws.ToString(ix.shard.ShardId), ix.last})
		ix.n++
	}
}

// indexes are a reader's, oldest first.
type indexes []*index

// covering is the index whose stretch holds seq as a record of key k, and its position in
// k's records (nil when none does: seq is not indexed under k, or k is not the whole key
// of its record, and the stream is read instead).
func (xs indexes) covering(arn, seq, k string) (*index, int) {
	for _, ix := range xs {
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

// keep adds ix unless it is there, then drops the oldest while they hold more than limit
// records.
func (xs indexes) keep(ix *index, limit int) indexes {
	if !slices.Contains(xs, ix) {
		xs = append(xs, ix)
	}
	total := 0
	for _, o := range xs {
		total += o.n
	}
	drop := 0
	for drop < len(xs) && total > limit {
		total -= xs[drop].n
		drop++
	}
	return slices.Delete(xs, 0, drop)
}

// drop removes ix.
func (xs indexes) drop(ix *index) indexes {
	return slices.DeleteFunc(xs, func(o *index) bool { return o == ix })
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
	names := make([]string, 0, 2)
	for n := range rec.Dynamodb.Keys {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		s, ok := rec.Dynamodb.Keys[n].(*types.AttributeValueMemberS)
		if !ok {
			return "", false
		}
		b.WriteString(n)
		b.WriteByte(0)
		b.WriteString(s.Value)
		b.WriteByte(0)
	}
	return b.String(), true
}
