package apply

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
)

// relay writes one source's deltas of the batch to its relay item in the target's
// partition: one UpdateItem that replaces the item's deltas with those of the records after
// the ones it holds, on condition that it holds none of them. A source's records come in
// order on one shard, and each relay write takes all of the batch's records of its source
// for the target, so the item's sequence number is the last record it holds and every one
// before it was held: a redelivered batch finds its records held (a duplicate) or some of
// them (the write takes the rest). The write is made even when the deltas sum to zero, so
// that the sequence number moves past them.
//
// The item's stream record carries the deltas to the target (plan.Planner.relayed), whose
// watermark makes that exactly once in turn. The item expires after the stream's retention
// (when the table has a TTL attribute): no record it could mistake for new is delivered
// after that.
func (r *run) relay(g *plan.RelayGroup) (int, error) {
	x := r.x
	spec := x.set.Table
	key := x.key(plan.RelayKey(g.Target, g.Source))
	held := ""
	for attempt := 0; attempt < 4; attempt++ {
		amounts, minSeq, maxSeq := g.After(held)
		if amounts == nil {
			r.count(func(s *Stats) { s.Duplicates++ })
			return -1, nil
		}
		deltas := make(map[string]types.AttributeValue, len(amounts))
		for name, n := range amounts {
			deltas[name] = &types.AttributeValueMemberN{Value: n.String()}
		}
		ub := expression.Set(expression.Name(rules.RelayTargetAttr), expression.Value(g.Target.SK)).
			Set(expression.Name(rules.RelaySourceAttr), expression.Value(g.Source.PK+" "+g.Source.SK)).
			Set(expression.Name(rules.RelaySeqAttr), num(record.NormSeq(maxSeq))).
			Set(expression.Name(rules.RelayDeltasAttr), val(&types.AttributeValueMemberM{Value: deltas}))
		if spec.TTLAttribute != "" {
			ttl := strconv.FormatInt(x.opt.Now().Add(x.opt.MarkerTTL).Unix(), 10)
			ub = ub.Set(expression.Name(spec.TTLAttribute), num(ttl))
		}
		cond := expression.AttributeNotExists(expression.Name(rules.RelaySeqAttr)).
			Or(expression.Name(rules.RelaySeqAttr).LessThan(num(record.NormSeq(minSeq))))
		e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
		if err != nil {
			return g.Rec(), fmt.Errorf("building relay write: %w", err)
		}
		var old map[string]types.AttributeValue
		err = r.do("relaying deltas of "+g.Source.PK+" "+g.Source.SK+" to "+g.Target.PK+" "+g.Target.SK, func(ctx context.Context) error {
			out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(x.table), Key: key,
				UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
				ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
				ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
			})
			r.written(GuardRelay, out, err)
			if cf, ok := retry.CondFailed(err); ok {
				old = cf.Item
			}
			return err
		})
		if err == nil {
			r.count(func(s *Stats) { s.Relayed++ })
			return -1, nil
		}
		if _, ok := retry.CondFailed(err); !ok {
			return g.Rec(), err
		}
		held = record.SeqOf(old[rules.RelaySeqAttr])
		if held == "" {
			return g.Rec(), fmt.Errorf("relay write to %s %s refused without a sequence number", g.Target.PK, g.Target.SK)
		}
	}
	return g.Rec(), fmt.Errorf("relay write to %s %s: its sequence number kept moving", g.Target.PK, g.Target.SK)
}
