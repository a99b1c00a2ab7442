package replicator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/replicator"
)

func newReplica(t *testing.T, db *dynamodb.Client) string {
	return ddbtest.NewRawTable(t, db, &dynamodb.CreateTableInput{
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}, "")
}

func scan(t *testing.T, db *dynamodb.Client, table string) map[string]record.Item {
	t.Helper()
	out := map[string]record.Item{}
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[it["pk"].(*types.AttributeValueMemberS).Value] = it
		}
	}
	return out
}

// Writers in two Regions write, delete and re-write the same few items at once, one of
// the Regions cut off for a while: once the replicator drains, both tables hold the same
// items, each the version written last, and nothing was written back and forth for ever.
func TestConcurrentWritesInTwoRegionsConverge(t *testing.T) {
	db, streams := ddbtest.Clients(t)
	a, b := newReplica(t, db), newReplica(t, db)
	ctx := context.Background()
	r, err := replicator.Start(ctx, replicator.Config{DB: db, Streams: streams, Tables: []string{a, b}, Delay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	const keys, writes = 12, 150
	var wg sync.WaitGroup
	for region, table := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(region), 7))
			for n := range writes {
				if region == 1 && n == writes/3 {
					r.Pause(1, true) // Region b cut off for a third of its writes
				}
				if region == 1 && n == 2*writes/3 {
					r.Pause(1, false)
				}
				k := &types.AttributeValueMemberS{Value: fmt.Sprintf("item-%d", rnd.IntN(keys))}
				var err error
				if rnd.IntN(5) == 0 {
					_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: record.Item{"pk": k}})
				} else {
					_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: record.Item{"pk": k,
						"by": &types.AttributeValueMemberS{Value: fmt.Sprintf("%s/%d", table, n)}}})
				}
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(rnd.IntN(20)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := r.Drain(dctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	t.Logf("stats: %+v", st)
	ia, ib := scan(t, db, a), scan(t, db, b)
	if !reflect.DeepEqual(ia, ib) {
		t.Errorf("the replicas differ:\n%s: %v\n%s: %v", a, ia, b, ib)
	}
	// Every put changes its item; a delete of an item already gone has no record.
	if st.Local < writes || st.Local > 2*writes {
		t.Errorf("local writes read: %d, want between %d and %d", st.Local, writes, 2*writes)
	}
	if st.Conflicts == 0 {
		t.Error("no conflicting writes: the test did not write one item in both Regions within the delay")
	}
	if st.Replicated > st.Local+st.Repairs {
		t.Errorf("replicated %d writes, more than the %d local writes and %d repairs: writes went back and forth", st.Replicated, st.Local, st.Repairs)
	}
	// Quiet once drained: nothing more is written.
	before := r.Activity()
	time.Sleep(500 * time.Millisecond)
	if after := r.Activity(); after != before {
		t.Errorf("the replicator went on writing after it drained: activity %d -> %d", before, after)
	}
}
