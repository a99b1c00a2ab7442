package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/table"
)

// Ceiling is what DynamoDB Local itself sustains on this machine, with no stream processing
// in the way: the best rate over a few client concurrencies, on a table of the same layout
// (indexes and stream) as the workloads'.
type Ceiling struct {
	// Transact is a 2-item TransactWriteItems per request (a marker Put and a counter ADD):
	// the naive handler's unit of work per record.
	Transact CeilingShape `json:"transact2"`
	// Update is one UpdateItem (ADD) per request: the unit of Denorm's coalesced writes.
	Update CeilingShape `json:"update"`
	// Copy is one UpdateItem (SET) of an item that is in a global index, as every comment
	// is: the unit of a copy fan-out (the table and the index are written).
	Copy CeilingShape `json:"copy"`
}

// CeilingShape is one request shape's rates by concurrency and the best of them.
type CeilingShape struct {
	ByConcurrency map[int]float64 `json:"requestsPerSecByConcurrency"`
	BestRequests  float64         `json:"requestsPerSec"`
	BestItems     float64         `json:"itemsPerSec"`
	BestAt        int             `json:"bestConcurrency"`
}

var ceilingConcurrency = []int{1, 4, 16}

func measureCeiling(ctx context.Context, db *dynamodb.Client, spec table.Spec, d time.Duration) (Ceiling, error) {
	name := fmt.Sprintf("bench-ceiling-%06x", rand.Uint32()&0xffffff)
	if _, err := provision.Ensure(ctx, db, name, spec); err != nil {
		return Ceiling{}, err
	}
	defer func() { _ = provision.Delete(context.WithoutCancel(ctx), db, name) }()
	tx, up, cp := shapes(db, name)
	var c Ceiling
	for _, s := range []struct {
		shape *CeilingShape
		items int
		op    func(context.Context, int, int) error
	}{{&c.Transact, 2, tx}, {&c.Update, 1, up}, {&c.Copy, 1, cp}} {
		s.shape.ByConcurrency = map[int]float64{}
		for _, conc := range ceilingConcurrency {
			rate, err := hammer(ctx, conc, d, s.op)
			if err != nil {
				return Ceiling{}, err
			}
			s.shape.ByConcurrency[conc] = rate
			if rate > s.shape.BestRequests {
				s.shape.BestRequests, s.shape.BestItems, s.shape.BestAt = rate, rate*float64(s.items), conc
			}
		}
	}
	return c, nil
}

// warmUp loads a fresh emulator with every request shape for d each, on a scratch table
// of the same layout, so its JIT is warm before anything is measured.
func warmUp(ctx context.Context, db *dynamodb.Client, spec table.Spec, d time.Duration) error {
	name := fmt.Sprintf("bench-warmup-%06x", rand.Uint32()&0xffffff)
	if _, err := provision.Ensure(ctx, db, name, spec); err != nil {
		return err
	}
	defer func() { _ = provision.Delete(context.WithoutCancel(ctx), db, name) }()
	tx, up, cp := shapes(db, name)
	for _, op := range []func(context.Context, int, int) error{tx, up, cp} {
		if _, err := hammer(ctx, 4, d, op); err != nil {
			return err
		}
	}
	return nil
}

// shapes returns the request shapes of the ceiling on table name.
func shapes(db *dynamodb.Client, name string) (tx, up, cp func(context.Context, int, int) error) {
	var n atomic.Int64
	tx = func(ctx context.Context, w, i int) error {
		id := strconv.Itoa(w) + "-" + strconv.Itoa(i) + "-" + strconv.FormatInt(n.Add(1), 10)
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(name), Item: item{
				"pk": &types.AttributeValueMemberS{Value: "_dn#marker#" + id}, "sk": &types.AttributeValueMemberS{Value: "MARKER"},
				"ttl": &types.AttributeValueMemberN{Value: "2000000000"}}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			{Update: &types.Update{TableName: aws.String(name), Key: key(fmt.Sprintf("POST#w%d-%d", w, i%64), "METADATA"),
				UpdateExpression:          aws.String("ADD commentCount :one"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}},
		}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		return err
	}
	up = func(ctx context.Context, w, i int) error {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name),
			Key:                       key(fmt.Sprintf("POST#w%d-%d", w, i%64), "METADATA"),
			UpdateExpression:          aws.String("ADD commentCount :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal})
		return err
	}
	cp = func(ctx context.Context, w, i int) error {
		at := fmt.Sprintf("2025-01-01T00:00:%02d", i%64)
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name),
			Key:              key(fmt.Sprintf("POST#w%d", w), "COMMENT#"+at),
			UpdateExpression: aws.String("SET gsi1pk = :u, gsi1sk = :s, userName = :n"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: "USER#ceiling"},
				":s": &types.AttributeValueMemberS{Value: "COMMENT#" + at}, ":n": &types.AttributeValueMemberS{Value: "name " + strconv.Itoa(i)}},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		return err
	}
	return tx, up, cp
}

// hammer runs op from conc goroutines for d and returns the requests per second.
func hammer(ctx context.Context, conc int, d time.Duration, op func(context.Context, int, int) error) (float64, error) {
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				if err := op(ctx, w, i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		}(w)
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), firstErr
}
