package workload

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/exprval"
)

// Writer is the part of the DynamoDB client the workload uses.
type Writer interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Write applies ops phase after phase; within a phase a few at a time where order does not
// matter (writes to different items), calling progress after each. Ops on the same item
// keep their order.
func Write(ctx context.Context, db Writer, table string, ops []Op, workers int, progress func()) error {
	for len(ops) > 0 {
		n := 1
		for n < len(ops) && ops[n].Phase == ops[0].Phase {
			n++
		}
		if err := writePhase(ctx, db, table, ops[:n], workers, progress); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

func writePhase(ctx context.Context, db Writer, table string, ops []Op, workers int, progress func()) error {
	if workers < 1 {
		workers = 1
	}
	// Shard ops by item key so each item's writes stay ordered.
	lanes := make([][]Op, workers)
	for _, op := range ops {
		k := op.ItemKey()
		h := fnv(fmt.Sprint(k["pk"], k["sk"]))
		lanes[h%uint32(workers)] = append(lanes[h%uint32(workers)], op)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for _, lane := range lanes {
		wg.Add(1)
		go func(lane []Op) {
			defer wg.Done()
			for _, op := range lane {
				if err := Apply(ctx, db, table, op); err != nil {
					errs <- fmt.Errorf("writing workload: %w", err)
					return
				}
				if progress != nil {
					progress()
				}
			}
		}(lane)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func fnv(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// Apply writes one op as an application would: PutItem, DeleteItem, or an UpdateItem that
// sets op.Set and removes op.Remove on op.Key.
func Apply(ctx context.Context, db Writer, table string, op Op) error {
	switch {
	case op.Put != nil:
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: op.Put})
		return err
	case op.Del != nil:
		_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: op.Del})
		return err
	}
	var ub expression.UpdateBuilder
	for name, v := range op.Set {
		ub = ub.Set(expression.Name(name), exprval.Of(v))
	}
	for _, name := range op.Remove {
		ub = ub.Remove(expression.Name(name))
	}
	e, err := expression.NewBuilder().WithUpdate(ub).Build()
	if err != nil {
		return err
	}
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: op.Key,
		UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	return err
}
