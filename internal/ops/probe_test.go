package ops_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/streams"
)

// answering plays the stream processor's part in a probe: it answers every probe it finds
// with names (nil: it does not answer) until stop is called.
func answering(t *testing.T, fx *fixture, names []string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			if names == nil {
				continue
			}
			out, err := fx.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(fx.table), ConsistentRead: aws.Bool(true)})
			if err != nil {
				continue
			}
			for _, it := range out.Items {
				if pk := it["pk"].(*types.AttributeValueMemberS).Value; strings.HasPrefix(pk, rules.ProbePrefix) && it[rules.ProbeAnswerAttr] == nil {
					l := &types.AttributeValueMemberL{}
					for _, n := range names {
						l.Value = append(l.Value, &types.AttributeValueMemberS{Value: n})
					}
					_, _ = fx.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(fx.table),
						Key: map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]}, UpdateExpression: aws.String("SET #a = :a"),
						ExpressionAttributeNames: map[string]string{"#a": rules.ProbeAnswerAttr}, ExpressionAttributeValues: map[string]types.AttributeValue{":a": l}})
				}
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// TestCheckProcessor: before it writes a count or sum, a backfill asks the stream processor
// through a probe item. No answer, or an answer from a processor without a rule the
// backfill writes, refuses the backfill; an answer with every rule lets it run. Either
// way the probe is gone afterwards; a backfill without counters asks nothing, and one on a
// table without a stream is refused without a probe.
func TestCheckProcessor(t *testing.T) {
	fx := newFixture(t, nil)
	f, err := rules.Load("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	evOf := func(names ...string) *ops.Evaluator {
		ev, err := ops.NewEvaluatorFor(f, names)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		ev      *ops.Evaluator
		answer  []string
		refused string // "" for allowed
	}{
		{"copies only: nothing to ask", evOf("comment-author"), nil, ""},
		{"no answer", evOf("comment-author", "post-comment-count"), nil, "did not answer a probe"},
		{"a processor without the rule", evOf("post-comment-count", "user-post-count"), []string{"comment-author", "post-comment-count"}, `does not run ["user-post-count"]`},
		{"a processor with the rules", evOf("post-comment-count", "user-post-count"), []string{"user-post-count", "post-comment-count", "comment-author"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			stop := answering(t, fx, c.answer)
			rt, err := ops.CheckProcessor(ctx, fx.db, fx.table, c.ev, 500*time.Millisecond)
			stop()
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused != "" && (!errors.Is(err, ops.ErrNoProcessor) || !strings.Contains(err.Error(), c.refused)):
				t.Fatalf("err %v, want ErrNoProcessor saying %q", err, c.refused)
			}
			if c.answer != nil && rt <= 0 {
				t.Errorf("round trip %s for an answered probe", rt)
			}
			out, err := fx.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(fx.table), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Items) != 0 {
				t.Errorf("%d items left in the table: the probe was not deleted", len(out.Items))
			}
		})
	}
	// A processor elsewhere: the registry says where, and the error names it.
	desc, err := fx.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(fx.table)})
	if err != nil {
		t.Fatal(err)
	}
	here, other := aws.ToString(desc.Table.LatestStreamArn), "arn:aws:dynamodb:eu-west-1:123456789012:table/"+fx.table+"/stream/2026-01-01T00:00:00.000"
	// A processor answers, as the current stream's would once the probe has replicated to
	// its Region: the backfill is refused all the same.
	for _, c := range []struct {
		name      string
		takeOvers []string // in order, on the registry the case before left
		want      string
	}{
		{"another Region's stream current", []string{other},
			"in this Region, " + here + " (stream not in the stream registry: " + other + " is current (epoch 1)"},
		{"this Region's stream retired", []string{here, other + "-2"},
			"in this Region, " + here + " (stream retired: " + other + "-2 took over at epoch 3): run it in the Region of the current stream"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, arn := range c.takeOvers {
				if _, _, err := streams.TakeOver(ctx, fx.db, fx.table, f.Table, arn); err != nil {
					t.Fatal(err)
				}
			}
			stop := answering(t, fx, []string{"post-comment-count"})
			_, err := ops.CheckProcessor(ctx, fx.db, fx.table, evOf("post-comment-count"), 2*time.Second)
			stop()
			if !errors.Is(err, ops.ErrNoProcessor) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrNoProcessor saying %q", err, c.want)
			}
		})
	}
	if _, err := fx.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(fx.table), Key: streams.Key(f.Table)}); err != nil {
		t.Fatal(err)
	}

	t.Run("no stream", func(t *testing.T) {
		if _, err := fx.db.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(fx.table),
			StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}}); err != nil {
			t.Fatal(err)
		}
		_, err := ops.CheckProcessor(ctx, fx.db, fx.table, evOf("post-comment-count"), 500*time.Millisecond)
		if !errors.Is(err, ops.ErrNoProcessor) || !strings.Contains(err.Error(), "has no stream") {
			t.Fatalf("err %v, want ErrNoProcessor saying the table has no stream", err)
		}
	})
}
