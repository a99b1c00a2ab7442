package bench

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/workload"
)

// tagAttr carries an operation's index on the items the lag phase writes, so a stream
// record can be traced to the write that caused it. No rule reads it, and it is not copied.
const tagAttr = "benchSeq"

// tagged returns op with tagAttr set to i (deletes carry no tag: they are matched by key).
func tagged(op workload.Op, i int) workload.Op {
	n := &types.AttributeValueMemberN{Value: strconv.Itoa(i)}
	switch {
	case op.Put != nil:
		op.Put = maps.Clone(op.Put)
		op.Put[tagAttr] = n
	case op.Set != nil:
		op.Set = maps.Clone(op.Set)
		op.Set[tagAttr] = n
	}
	return op
}

// writePaced writes ops open-loop at rate per second (op i is due at start + i/rate), in
// order per item, and returns when each write was acknowledged.
func writePaced(ctx context.Context, db workload.Writer, table string, ops []workload.Op, rate float64, workers int) ([]time.Time, error) {
	acks := make([]time.Time, len(ops))
	lanes := make([]chan int, workers)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	for l := range lanes {
		lanes[l] = make(chan int, len(ops))
		wg.Add(1)
		go func(in chan int) {
			defer wg.Done()
			for i := range in {
				if err := workload.Apply(ctx, db, table, tagged(ops[i], i)); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("writing op %d: %w", i, err) })
					continue
				}
				acks[i] = time.Now()
			}
		}(lanes[l])
	}
	start := time.Now()
	for i, op := range ops {
		due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		k := op.ItemKey()
		lanes[laneOf(str(k["pk"])+"\x00"+str(k["sk"]), workers)] <- i
	}
	for _, l := range lanes {
		close(l)
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return acks, firstErr
}

func laneOf(s string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// writeOp makes one application write as workload.Write does.
// lagObserver traces delivered records to the lag phase's writes and keeps, per write, the
// last time a handler reported its record fully applied.
type lagObserver struct {
	mu      sync.Mutex
	byEvent map[string]int
	deletes map[[2]string][]int // delete ops per item key, in order
	visible []time.Time
}

func newLagObserver(ops []workload.Op) *lagObserver {
	o := &lagObserver{byEvent: map[string]int{}, deletes: map[[2]string][]int{}, visible: make([]time.Time, len(ops))}
	for i, op := range ops {
		if op.Del != nil {
			k := [2]string{str(op.Del["pk"]), str(op.Del["sk"])}
			o.deletes[k] = append(o.deletes[k], i)
		}
	}
	return o
}

func (o *lagObserver) observe(rec *events.DynamoDBEventRecord, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	idx, ok := o.byEvent[rec.EventID]
	if !ok {
		idx = -1
		switch rec.EventName {
		case "INSERT", "MODIFY":
			n, has := tagOf(rec.Change.NewImage)
			if was, had := tagOf(rec.Change.OldImage); has && (!had || was != n) && n < len(o.visible) {
				idx = n
			}
		case "REMOVE":
			k := [2]string{str(rec.Change.Keys["pk"]), str(rec.Change.Keys["sk"])}
			if q := o.deletes[k]; len(q) > 0 {
				idx, o.deletes[k] = q[0], q[1:]
			}
		}
		o.byEvent[rec.EventID] = idx
	}
	if idx >= 0 && at.After(o.visible[idx]) {
		o.visible[idx] = at
	}
}

func tagOf(img map[string]events.DynamoDBAttributeValue) (int, bool) {
	v, ok := img[tagAttr]
	if !ok || v.DataType() != events.DataTypeNumber {
		return 0, false
	}
	n, err := strconv.Atoi(v.Number())
	return n, err == nil
}

// recordLags returns, for every write whose record a handler applied, the time from its
// acknowledgement to the end of that application; and how many writes had no record
// delivered (filtered out: no rule watches them).
func (o *lagObserver) recordLags(acks []time.Time) (lags []time.Duration, unseen int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, v := range o.visible {
		if v.IsZero() || acks[i].IsZero() {
			unseen++
			continue
		}
		lags = append(lags, max(0, v.Sub(acks[i])))
	}
	return lags, unseen
}

// Dist summarises a latency distribution in milliseconds.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50ms"`
	P99 float64 `json:"p99ms"`
	Max float64 `json:"maxMs"`
}

func distOf(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return ms(s[max(0, min(i, len(s)-1))])
	}
	return Dist{N: len(s), P50: rank(0.50), P99: rank(0.99), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
