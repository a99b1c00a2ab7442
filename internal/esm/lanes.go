package esm

import (
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/record"
)

// deliverAll delivers the records of one read. With ParallelizationFactor 1 they are one
// batch. Otherwise each record goes to the lane its item's key (partition and sort key)
// hashes to, which is the order Lambda promises above factor 1: per item, not per partition; the lanes run
// concurrently, each delivering its share in order in batches of at most BatchSize, and the
// shard's checkpoint advances only past records that every lane has processed up to.
func (w *worker) deliverAll(ctx context.Context, recs []pending) error {
	m := w.m
	n := m.cfg.ParallelizationFactor
	if n <= 1 {
		m.stats.batches.Add(1)
		return w.deliver(ctx, recs)
	}
	t := &lanes{recs: recs, of: make([]int, len(recs)), upTo: make([]string, n)}
	shares := make([][]pending, n)
	for i, p := range recs {
		l := laneOf(p.item, n)
		t.of[i] = l
		shares[l] = append(shares[l], p)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for l, share := range shares {
		if len(share) == 0 {
			continue
		}
		lw := &worker{m: m, s: w.s, id: w.id, lane: &lane{t: t, n: l}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range slices.Chunk(share, m.cfg.BatchSize) {
				m.stats.batches.Add(1)
				if errs[l] = lw.deliver(ctx, batch); errs[l] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// lanes tracks how far each lane of one read has processed its records.
type lanes struct {
	mu   sync.Mutex
	recs []pending // in stream order
	of   []int     // lane of recs[i]
	upTo []string  // per lane: the last sequence number it processed ("" for none)
	next int       // recs[:next] are processed
}

// lane is one lane's handle on the tracker.
type lane struct {
	t *lanes
	n int
}

// processed notes that the lane processed its records up to seq and returns the last record
// before which every record is processed, "" when there is none yet.
func (l *lane) processed(seq string) string {
	t := l.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if u := t.upTo[l.n]; u == "" || record.CompareSeq(seq, u) > 0 {
		t.upTo[l.n] = seq
	}
	for t.next < len(t.recs) {
		u := t.upTo[t.of[t.next]]
		if u == "" || record.CompareSeq(u, t.recs[t.next].seq) < 0 {
			break
		}
		t.next++
	}
	if t.next == 0 {
		return ""
	}
	return t.recs[t.next-1].seq
}

// laneOf hashes an item's key onto one of n lanes.
func laneOf(item string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(item))
	return int(h.Sum32() % uint32(n))
}

// itemKey renders a record's key attributes (the table's partition and sort key), which
// decide its lane: records of one item share a lane, two items of one partition need not.
func itemKey(keys map[string]types.AttributeValue) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(keyValue(keys[k]))
		b.WriteByte(0)
	}
	return b.String()
}

// keyValue renders a key attribute's value with its type, so "1" and 1 differ.
func keyValue(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + x.Value
	case *types.AttributeValueMemberN:
		return "N:" + x.Value
	case *types.AttributeValueMemberB:
		return "B:" + string(x.Value)
	}
	return ""
}
