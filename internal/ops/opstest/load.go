package opstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Writer is the part of the DynamoDB client loading uses.
type Writer interface {
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Load writes items with BatchWriteItem (25 per call, a few calls at a time).
func Load(ctx context.Context, db Writer, table string, items []Item) error {
	var reqs []types.WriteRequest
	for _, it := range items {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	}
	return batch(ctx, db, table, reqs)
}

// Apply writes a corruption to the table.
func Apply(ctx context.Context, db Writer, table string, c Corruption) error {
	var reqs []types.WriteRequest
	for _, it := range c.Puts {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	}
	for _, k := range c.Deletes {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: Item{"pk": s(k[0]), "sk": s(k[1])}}})
	}
	return batch(ctx, db, table, reqs)
}

func batch(ctx context.Context, db Writer, table string, reqs []types.WriteRequest) error {
	var chunks [][]types.WriteRequest
	for len(reqs) > 0 {
		n := min(25, len(reqs))
		chunks = append(chunks, reqs[:n])
		reqs = reqs[n:]
	}
	work := make(chan []types.WriteRequest)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for chunk := range work {
				for try := 0; len(chunk) > 0; try++ {
					if try == 20 {
						errs <- fmt.Errorf("batch write: items left unprocessed after %d tries", try)
						return
					}
					out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: chunk}})
					if err != nil {
						errs <- fmt.Errorf("batch write: %w", err)
						return
					}
					chunk = out.UnprocessedItems[table]
					if len(chunk) > 0 {
						time.Sleep(time.Duration(try+1) * 20 * time.Millisecond)
					}
				}
			}
		}()
	}
	for _, c := range chunks {
		select {
		case work <- c:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return nil
}

// Scan returns every item of a table (for assertions).
func Scan(ctx context.Context, db interface {
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}, table string) ([]Item, error) {
	var out []Item
	var start map[string]types.AttributeValue
	for {
		page, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}
