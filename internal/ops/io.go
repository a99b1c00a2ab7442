package ops

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/table"
)

// API is the part of the DynamoDB client backfill and verify use.
type API interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// db does single-item I/O on one table: consistent reads, and writes paced by the
// write-capacity limiter and retried on throttling.
type db struct {
	api   API
	table string
	spec  table.Spec
	lim   *limiter
	// split is how many parts a count or sum target's state is split over (nil: none).
	split func(plan.Key) int

	mu       sync.Mutex
	wcu, rcu float64
	writes   int64
}

func (d *db) key(k plan.Key) record.Item {
	m := record.Item{d.spec.PartitionKey: &types.AttributeValueMemberS{Value: k.PK}}
	if d.spec.SortKey != "" {
		m[d.spec.SortKey] = &types.AttributeValueMemberS{Value: k.SK}
	}
	return m
}

func (d *db) consumed(write bool, cc *types.ConsumedCapacity) float64 {
	u := 0.0
	if cc != nil && cc.CapacityUnits != nil {
		u = *cc.CapacityUnits
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if write {
		d.wcu += u
		d.writes++
	} else {
		d.rcu += u
	}
	return u
}

// get reads an item with a consistent read; nil when it does not exist.
func (d *db) get(ctx context.Context, k plan.Key) (record.Item, error) {
	var item record.Item
	err := withRetry(ctx, "reading "+k.PK+" "+k.SK, func(ctx context.Context) error {
		out, err := d.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: d.key(k),
			ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if err != nil {
			return err
		}
		d.consumed(false, out.ConsumedCapacity)
		item = out.Item
		return nil
	})
	return item, err
}

// query reads every item of one partition of the table (index "") or of a global index
// whose sort key starts with skPrefix ("" for all), page by page; strongly consistent when
// asked (the table and local indexes only).
func (d *db) query(ctx context.Context, index, pkAttr, pk, skAttr, skPrefix string, consistent bool) ([]record.Item, error) {
	kc := expression.Key(pkAttr).Equal(expression.Value(pk))
	if skAttr != "" && skPrefix != "" {
		kc = kc.And(expression.Key(skAttr).BeginsWith(skPrefix))
	}
	e, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, fmt.Errorf("building query of %s: %w", pk, err)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(d.table), KeyConditionExpression: e.KeyCondition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	if consistent {
		in.ConsistentRead = aws.Bool(true)
	}
	var items []record.Item
	for {
		var out *dynamodb.QueryOutput
		err := withRetry(ctx, "querying "+pk, func(ctx context.Context) error {
			var err error
			out, err = d.api.Query(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
		d.consumed(false, out.ConsumedCapacity)
		for _, it := range out.Items {
			items = append(items, record.Item(it))
		}
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// update runs a conditional UpdateItem.
func (d *db) update(ctx context.Context, k plan.Key, ub expression.UpdateBuilder, cond expression.ConditionBuilder) error {
	_, err := d.updateReturning(ctx, k, ub, cond, types.ReturnValueNone)
	return err
}

// updateReturning runs a conditional UpdateItem and returns the attributes rv asks for.
func (d *db) updateReturning(ctx context.Context, k plan.Key, ub expression.UpdateBuilder, cond expression.ConditionBuilder, rv types.ReturnValue) (record.Item, error) {
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("building update of %s %s: %w", k.PK, k.SK, err)
	}
	var item record.Item
	err = d.write(ctx, "updating "+k.PK+" "+k.SK, func(ctx context.Context) (*types.ConsumedCapacity, error) {
		out, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(d.table), Key: d.key(k),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValues: rv, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if out != nil {
			item = out.Attributes
			return out.ConsumedCapacity, err
		}
		return nil, err
	})
	return item, err
}

// remove runs a conditional DeleteItem.
func (d *db) remove(ctx context.Context, k plan.Key, cond expression.ConditionBuilder) error {
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building delete of %s %s: %w", k.PK, k.SK, err)
	}
	return d.write(ctx, "deleting "+k.PK+" "+k.SK, func(ctx context.Context) (*types.ConsumedCapacity, error) {
		out, err := d.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.table), Key: d.key(k),
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if out != nil {
			return out.ConsumedCapacity, err
		}
		return nil, err
	})
}

// write takes a unit from the limiter, runs op and settles what it consumed. A failed
// condition is charged one unit, as DynamoDB charges it.
func (d *db) write(ctx context.Context, what string, op func(context.Context) (*types.ConsumedCapacity, error)) error {
	return withRetry(ctx, what, func(ctx context.Context) error {
		if err := d.lim.Wait(ctx, 1); err != nil {
			return err
		}
		cc, err := op(ctx)
		if err != nil && retry.Refused(err) {
			one := 1.0
			cc = &types.ConsumedCapacity{CapacityUnits: &one}
		}
		if cc != nil || err == nil {
			d.lim.Settle(d.consumed(true, cc) - 1)
		}
		return err
	})
}

// withRetry runs op, retrying throttling and transient errors with full-jitter exponential
// backoff (50 ms doubling to 5 s, 12 attempts) on top of the SDK's own retries: a long
// backfill must ride out throttling, not stop at it.
func withRetry(ctx context.Context, what string, op func(context.Context) error) error {
	backoff := retry.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second}
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if !retry.Transient(err) || attempt == 12 {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := retry.Sleep(ctx, backoff.Jittered(attempt)); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// raw passes an SDK attribute value through the expression builder unchanged.
type raw struct{ v types.AttributeValue }

func (r raw) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) { return r.v, nil }

func val(v types.AttributeValue) expression.OperandBuilder { return expression.Value(raw{v}) }

// unchanged is the condition that attribute name still holds v (nil: is still absent).
func unchanged(name string, v types.AttributeValue) expression.ConditionBuilder {
	if v == nil {
		return expression.AttributeNotExists(expression.Name(name))
	}
	return expression.Name(name).Equal(expression.Value(raw{v}))
}
