package workload

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Writer is the part of the DynamoDB client the workload uses.
type Writer interface {
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Write applies ops in order, a few at a time where order does not matter (writes to
// different items), calling progress after each. Ops on the same item keep their order.
func Write(ctx context.Context, db Writer, table string, ops []Op, workers int, progress func()) error {
	if workers < 1 {
		workers = 1
	}
	// Shard ops by item key so each item's writes stay ordered.
	lanes := make([][]Op, workers)
	for _, op := range ops {
		k := op.Put
		if k == nil {
			k = op.Del
		}
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
				var err error
				if op.Put != nil {
					_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: op.Put})
				} else {
					_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: op.Del})
				}
				if err != nil {
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
