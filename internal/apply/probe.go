package apply

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
)

// answerProbes answers the batch's probes (rules.ProbePrefix) whose records come before its
// first failure: by then every earlier record of the batch is applied, so the answer says
// that the function runs and has applied its shard up to the probe. The answer is the names
// of the rules, written on the probe if it still exists; `denorm backfill` reads it.
func (r *run) answerProbes(probes []plan.ProbeGroup) {
	for _, p := range probes {
		r.mu.Lock()
		failed := r.failed
		r.mu.Unlock()
		if failed >= 0 && p.Rec >= failed {
			continue // the batch resumes before it, and the probe comes again
		}
		if err := r.answerProbe(p.Key); err != nil {
			r.fail(p.Rec, err)
		}
	}
}

func (r *run) answerProbe(k plan.Key) error {
	x := r.x
	names := &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	for _, cr := range x.set.Compiled() {
		names.Value = append(names.Value, &types.AttributeValueMemberS{Value: cr.Name})
	}
	e, err := expression.NewBuilder().
		WithUpdate(expression.Set(expression.Name(rules.ProbeAnswerAttr), val(names))).
		WithCondition(expression.AttributeExists(expression.Name(x.set.Table.PartitionKey))).Build()
	if err != nil {
		return err
	}
	err = r.do("answering probe "+k.PK, func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(x.table), Key: x.key(k),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		r.written(GuardNone, out, err)
		return err
	})
	if retry.Refused(err) {
		return nil // the backfill that wrote it gave up and deleted it
	}
	return err
}
