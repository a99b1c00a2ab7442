package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
)

// A rename reaching 10,000 comments completes in pages across invocations: the source's
// invocation writes the first pages, then the job item's own stream records carry the
// cursor (a 2 s job budget ends each invocation's share). The handler holds a page, not
// the fan-out: across every invocation, its live heap (what garbage collection, run often
// here, finds reachable) grows by a fraction of what the 10,000 targets take, read as the
// scan reads them.
func TestFanOut10000Targets(t *testing.T) {
	if testing.Short() {
		t.Skip("large fan-out")
	}
	const targets = 10000
	e := newEnv(t, apply.Options{JobBudget: 2 * time.Second})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#big", "sk": "PROFILE", "name": "before"})
	e.batchComments(targets)
	e.records() // the inserts are not what this test is about

	// A collection every 10 % of heap growth, so the live heap is measured often.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	var grew uint64 // the most the live heap grew during one invocation
	invoke := func(b []json.RawMessage) {
		runtime.GC()
		base := liveHeap()
		done := make(chan struct{})
		peak := make(chan uint64)
		go func() {
			top := base
			for {
				select {
				case <-done:
					peak <- top
					return
				case <-time.After(time.Millisecond):
					top = max(top, liveHeap())
				}
			}
		}()
		e.lambdaLike(b)
		close(done)
		if top := <-peak; top > base {
			grew = max(grew, top-base)
		}
	}

	start := time.Now()
	e.put(map[string]string{"pk": "USER#big", "sk": "PROFILE", "name": "after"})
	invocations := 0
	e.drain(100, func(b []json.RawMessage) { invocations++; invoke(b) })
	elapsed := time.Since(start)

	runtime.GC()
	before := liveHeap()
	items := e.scan()
	runtime.GC()
	held := liveHeap() - before
	stale := 0
	for _, it := range items {
		if s(it["gsi1pk"]) == "USER#big" && s(it["userName"]) != "after" {
			stale++
		}
	}
	if stale > 0 {
		t.Fatalf("%d of %d comments still show the old name", stale, targets)
	}
	t.Logf("fan-out to %d targets: %s, %d batches delivered; live heap grew by at most %.2f MiB in one invocation, the table's items take %.2f MiB",
		targets, elapsed.Round(time.Millisecond), invocations, float64(grew)/(1<<20), float64(held)/(1<<20))
	if grew > held/4 {
		t.Errorf("the live heap grew by %.2f MiB in one invocation, over a quarter of what the targets take (%.2f MiB): the fan-out is held, not paged",
			float64(grew)/(1<<20), float64(held)/(1<<20))
	}
	runtime.KeepAlive(items)
}

// liveHeap is the heap the last garbage collection found reachable.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// batchComments writes n comments by USER#big across 20 posts, with BatchWriteItem.
func (e *env) batchComments(n int) {
	e.t.Helper()
	ctx := context.Background()
	var reqs []types.WriteRequest
	flush := func() {
		for len(reqs) > 0 {
			out, err := e.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{e.table: reqs}})
			if err != nil {
				e.t.Fatal(err)
			}
			reqs = out.UnprocessedItems[e.table]
		}
	}
	for i := 0; i < n; i++ {
		sk := fmt.Sprintf("COMMENT#c%06d", i)
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("POST#p%d", i%20)}, "sk": &types.AttributeValueMemberS{Value: sk},
			"gsi1pk": &types.AttributeValueMemberS{Value: "USER#big"}, "gsi1sk": &types.AttributeValueMemberS{Value: sk},
			"status": &types.AttributeValueMemberS{Value: "visible"}, "userName": &types.AttributeValueMemberS{Value: "before"},
		}}})
		if len(reqs) == 25 {
			flush()
		}
	}
	flush()
}
