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
	"github.com/denorm/denorm/internal/ops/opstest"
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

// twoRegions is two replica tables and a replicator between them, delay apart, closed
// when the test ends.
func twoRegions(t *testing.T, delay time.Duration) (db *dynamodb.Client, a, b string, r *replicator.Replicator) {
	t.Helper()
	db, streams := ddbtest.Clients(t)
	a, b = newReplica(t, db), newReplica(t, db)
	r, err := replicator.Start(context.Background(), replicator.Config{DB: db, Streams: streams, Tables: []string{a, b}, Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return db, a, b, r
}

// scan returns a table's items by partition key.
func scan(t *testing.T, db *dynamodb.Client, table string) map[string]record.Item {
	t.Helper()
	items, err := opstest.Scan(context.Background(), db, table)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]record.Item{}
	for _, it := range items {
		out[it["pk"].(*types.AttributeValueMemberS).Value] = it
	}
	return out
}

// Writers in two Regions write, delete and re-write the same few items at once, one of
// the Regions cut off for a while: once the replicator drains, both tables hold the same
// items, and nothing goes on being written back and forth.
func TestConcurrentWritesInTwoRegionsConverge(t *testing.T) {
	db, a, b, r := twoRegions(t, 200*time.Millisecond)
	ctx := context.Background()

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
	// Quiet once drained: nothing more is written.
	before := r.Activity()
	time.Sleep(500 * time.Millisecond)
	if after := r.Activity(); after != before {
		t.Errorf("the replicator went on writing after it drained: activity %d -> %d", before, after)
	}
}

// Last writer wins, case by case, with writes timed around a 1 s delay: each ends with the
// version the replicator read last in both tables.
func TestLastWriterWins(t *testing.T) {
	db, a, b, r := twoRegions(t, time.Second)
	ctx := context.Background()
	put := func(table, k, v string) {
		t.Helper()
		before := r.Stats().Local
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: record.Item{
			"pk": &types.AttributeValueMemberS{Value: k}, "v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			t.Fatal(err)
		}
		waitLocal(t, r, before+1)
	}
	del := func(table, k string) {
		t.Helper()
		before := r.Stats().Local
		out, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table),
			Key: record.Item{"pk": &types.AttributeValueMemberS{Value: k}}, ReturnValues: types.ReturnValueAllOld})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Attributes) > 0 {
			waitLocal(t, r, before+1)
		}
	}
	drain := func() {
		t.Helper()
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := r.Drain(dctx, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}

	put(a, "apart", "a1") // replicated before the next write
	drain()
	put(b, "apart", "b1")
	put(a, "together", "a1") // two Regions within the delay: b's, read last, wins
	put(b, "together", "b1")
	put(a, "gone", "a1")
	put(b, "back", "b1")
	drain()
	del(a, "gone") // deleted in both Regions within the delay ...
	del(b, "gone")
	drain()
	put(a, "gone", "a2") // ... then put and deleted again in one: it stays deleted
	del(a, "gone")
	del(a, "back") // deleted in one Region, put again in the other within the delay
	put(b, "back", "b2")
	drain()

	want := map[string]string{"apart": "b1", "together": "b1", "back": "b2"}
	for _, table := range []string{a, b} {
		got := map[string]string{}
		for k, it := range scan(t, db, table) {
			got[k] = it["v"].(*types.AttributeValueMemberS).Value
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s holds %v, want %v", table, got, want)
		}
	}
	if st := r.Stats(); st.Conflicts < 3 {
		t.Errorf("stats %+v: want at least the 3 conflicting pairs of writes counted", st)
	}
}

// waitLocal waits until the replicator has read n local writes.
func waitLocal(t *testing.T, r *replicator.Replicator, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.Stats().Local < n {
		if time.Now().After(deadline) {
			t.Fatalf("the replicator read %d local writes, want %d", r.Stats().Local, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Sums of decimals, as a state item of a sum rule holds them: the image the replicator puts
// in the other Region comes back in that Region's stream with its numbers written as
// DynamoDB Local writes them there, and is still known as its own write: no write is read
// as the other Region's, none carried back (it would put an older version over later
// ones).
func TestNumbersWrittenOtherwiseAreEchoes(t *testing.T) {
	db, a, b, r := twoRegions(t, 10*time.Millisecond)
	ctx := context.Background()
	adds := []string{"995933.66", "0.34", "-12.5", "12.50", "1e2", "-100", "0.1", "0.20"}
	for _, n := range adds {
		if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(a),
			Key:                       record.Item{"pk": &types.AttributeValueMemberS{Value: "sum"}},
			UpdateExpression:          aws.String("ADD #t :n, #v :one"),
			ExpressionAttributeNames:  map[string]string{"#t": "total", "#v": "version"},
			ExpressionAttributeValues: record.Item{":n": &types.AttributeValueMemberN{Value: n}, ":one": &types.AttributeValueMemberN{Value: "1"}},
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // each version replicated before the next
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.Drain(dctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Local != int64(len(adds)) {
		t.Errorf("stats %+v: %d local writes read, want the %d made in the first Region", st, st.Local, len(adds))
	}
	got := scan(t, db, b)["sum"]
	if v := got["version"].(*types.AttributeValueMemberN).Value; v != fmt.Sprint(len(adds)) {
		t.Errorf("the second Region holds version %s, want %d: %v", v, len(adds), got)
	}
}
