package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/rules"
)

// fold moves what was parked for target k while it was missing into k, now that it exists:
// one consistent read of the park item, then one transaction that adds its amounts to the
// target (which must exist) and deletes the park (which must be unchanged). Folding is
// idempotent whatever record triggers it: a park is moved once, and a missing target keeps
// it for the INSERT that re-creates it.
func (r *run) fold(k plan.Key) error {
	x := r.x
	pk := x.key(parkKey(k))
	for attempt := 0; attempt < 4; attempt++ {
		var park map[string]types.AttributeValue
		err := r.do("reading the park of "+k.PK+" "+k.SK, func(ctx context.Context) error {
			out, err := x.api.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(x.table), Key: pk, ConsistentRead: aws.Bool(true),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			if out != nil {
				r.consumed(false, out.ConsumedCapacity)
				park = out.Item
			} else {
				r.consumed(false)
			}
			return err
		})
		if err != nil || len(park) == 0 {
			return err
		}
		items, err := r.foldItems(k, park)
		if err != nil {
			return err
		}
		var cancel *types.TransactionCanceledException
		err = r.do("folding the park into "+k.PK+" "+k.SK, func(ctx context.Context) error {
			out, err := x.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
				TransactItems: items, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			if out != nil {
				r.consumed(true, ccPtrs(out.ConsumedCapacity)...)
			} else {
				r.consumed(true)
			}
			return err
		})
		r.count(func(s *Stats) { s.Transactions++ })
		if err == nil {
			r.count(func(s *Stats) { s.Folded++ })
			return nil
		}
		if !errors.As(err, &cancel) || retryable(err) {
			return err
		}
		if len(items) == 2 && len(cancel.CancellationReasons) > 0 && code(cancel.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
			return nil // the target is gone again: its re-creation folds the park
		}
		// The park changed between the read and the write: read it again.
	}
	return fmt.Errorf("folding the park into %s %s: it kept changing", k.PK, k.SK)
}

// foldItems is the transaction that moves park into target k: the target's ADDs (when the
// park holds a non-zero amount) and the park's conditional delete.
func (r *run) foldItems(k plan.Key, park map[string]types.AttributeValue) ([]types.TransactWriteItem, error) {
	x := r.x
	spec := x.set.Table
	var items []types.TransactWriteItem
	var ub expression.UpdateBuilder
	n := 0
	for name, v := range park {
		nv, ok := v.(*types.AttributeValueMemberN)
		if !ok || name == spec.PartitionKey || name == spec.SortKey || name == spec.TTLAttribute || strings.HasPrefix(name, rules.ReservedPrefix) {
			continue
		}
		if amt, err := plan.ParseNumber(nv.Value); err != nil || amt.IsZero() {
			continue
		}
		ub = ub.Add(expression.Name(name), num(nv.Value))
		n++
	}
	if wm, ok := park[rules.WatermarkAttr]; ok {
		// A same-partition park's records all precede the target's own watermark, if it has
		// one; if it has none, the park's keeps a redelivered record from counting twice.
		ub = ub.Set(expression.Name(rules.WatermarkAttr), expression.IfNotExists(expression.Name(rules.WatermarkAttr), expression.Value(wm)))
		n++
	}
	if n > 0 {
		ub = ub.Add(expression.Name(rules.WritesAttr), num("1"))
		e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(exists(spec.PartitionKey)).Build()
		if err != nil {
			return nil, fmt.Errorf("building fold: %w", err)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(x.table), Key: x.key(k),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}})
	}
	// The park is deleted only as read: its watermark (same-partition parks) and its write
	// count (parks written in transactions) say it did not change.
	cond := unchangedAttr(rules.WatermarkAttr, park).And(unchangedAttr(rules.WritesAttr, park))
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("building fold: %w", err)
	}
	items = append(items, types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(x.table), Key: x.key(parkKey(k)),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}})
	return items, nil
}

// unchangedAttr is the condition that attribute name still holds what item holds (or is
// still absent).
func unchangedAttr(name string, item map[string]types.AttributeValue) expression.ConditionBuilder {
	if v, ok := item[name]; ok {
		return expression.Name(name).Equal(expression.Value(v))
	}
	return expression.AttributeNotExists(expression.Name(name))
}
