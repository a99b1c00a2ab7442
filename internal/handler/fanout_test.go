package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
)

// A rename reaching 10,000 comments completes in pages across invocations: the source's
// invocation writes the first pages, then the job item's own stream records carry the
// cursor (a 2 s job budget ends each invocation's share).
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

	start := time.Now()
	e.put(map[string]string{"pk": "USER#big", "sk": "PROFILE", "name": "after"})
	invocations := 0
	e.drain(100, func(b []json.RawMessage) { invocations++; e.lambdaLike(b) })
	elapsed := time.Since(start)

	stale := 0
	for _, it := range e.scan() {
		if s(it["gsi1pk"]) == "USER#big" && s(it["userName"]) != "after" {
			stale++
		}
	}
	if stale > 0 {
		t.Fatalf("%d of %d comments still show the old name", stale, targets)
	}
	t.Logf("fan-out to %d targets: %s, %d batches delivered", targets, elapsed.Round(time.Millisecond), invocations)
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
