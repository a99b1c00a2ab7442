package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/workload"
)

// writeSetup writes a workload's setup. Puts of distinct items (all setups) go 25 to a
// BatchWriteItem, which is several times faster on DynamoDB Local than one PutItem each and
// is not measured; anything else goes through workload.Write.
func writeSetup(ctx context.Context, db *dynamodb.Client, table string, ops []workload.Op) error {
	var reqs []types.WriteRequest
	seen := map[[2]string]bool{}
	for _, op := range ops {
		k := op.ItemKey()
		id := [2]string{str(k["pk"]), str(k["sk"])}
		if op.Put == nil || seen[id] {
			return workload.Write(ctx, db, table, ops, 8, nil)
		}
		seen[id] = true
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: op.Put}})
	}
	work := make(chan []types.WriteRequest)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range work {
				if err := batchWrite(ctx, db, table, batch); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for len(reqs) > 0 {
		n := min(25, len(reqs))
		work <- reqs[:n]
		reqs = reqs[n:]
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

func batchWrite(ctx context.Context, db *dynamodb.Client, table string, batch []types.WriteRequest) error {
	for attempt := 0; len(batch) > 0; attempt++ {
		if attempt > 20 {
			return fmt.Errorf("writing setup: %d items still unprocessed", len(batch))
		}
		out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: batch}})
		if err != nil {
			return fmt.Errorf("writing setup: %w", err)
		}
		batch = out.UnprocessedItems[table]
		if len(batch) > 0 {
			time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
		}
	}
	return nil
}
