package record

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamstypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/table"
)

// Real stream records from DynamoDB Local, for an item holding every attribute type, go
// through EncodeStreamRecord and Decode unchanged: ops, sequence numbers, keys and images.
func TestStreamRecordsDecode(t *testing.T) {
	db, streams := ddbtest.Clients(t)
	ctx := context.Background()
	name, desc := ddbtest.NewTable(t, db, table.Default())
	arn := aws.ToString(desc.LatestStreamArn)

	keys := Item{"pk": s("TYPES#1"), "sk": s("ALL")}
	// Numbers in the form DynamoDB returns them, so images compare exactly. No empty M:
	// DynamoDB Local 3.3.1 writes it into stream records as {} (no type), which the SDK's
	// streams deserializer turns into the previous attribute's value or nil.
	item := Item{
		"pk": s("TYPES#1"), "sk": s("ALL"), "s": s("quote \" é 中 😀 \n"), "n": n("-12.5"),
		"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 0xff}}, "t": &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			s("a"), n("1"), &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"deep": &types.AttributeValueMemberNS{Value: []string{"7"}}}},
		}},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"name": s("Joe"), "age": n("35")}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"Giraffe", "Zebra"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"0.001", "1234", "567.8"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1, 2}, []byte("x")}},
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
		t.Fatal(err)
	}
	_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(name), Key: keys,
		UpdateExpression:          aws.String("SET s = :s ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": s("changed"), ":one": n("1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	updated := maps.Clone(item)
	updated["s"], updated["n"] = s("changed"), n("-11.5")
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: keys}); err != nil {
		t.Fatal(err)
	}

	recs := readStream(t, streams, arn, 3)
	var raws []json.RawMessage
	var got []Change
	for _, r := range recs {
		raw, err := EncodeStreamRecord(r, arn, "us-east-1")
		if err != nil {
			t.Fatal(err)
		}
		c, err := Decode(raw)
		if err != nil {
			t.Fatalf("%v\n%s", err, raw)
		}
		if c.Seq != aws.ToString(r.Dynamodb.SequenceNumber) || c.EventID != aws.ToString(r.EventID) || c.Source != arn || c.Created.IsZero() {
			t.Errorf("record %s: seq %s id %s source %s created %v", raw, c.Seq, c.EventID, c.Source, c.Created)
		}
		raws = append(raws, raw)
		got = append(got, c)
	}

	want := []struct {
		op       Op
		old, new Item
	}{{Insert, nil, item}, {Modify, item, updated}, {Remove, updated, nil}}
	for i, w := range want {
		c := got[i]
		if c.Op != w.op || c.TTL {
			t.Errorf("record %d: op %s ttl %t, want %s", i, c.Op, c.TTL, w.op)
		}
		if !sameItem(c.Keys, keys) || !sameItem(c.Old, w.old) || !sameItem(c.New, w.new) {
			t.Errorf("record %d: images differ:\n got: %s\nwant old %s\nwant new %s", i, render(c),
				renderValue(&types.AttributeValueMemberM{Value: w.old}), renderValue(&types.AttributeValueMemberM{Value: w.new}))
		}
		if i > 0 && CompareSeq(got[i-1].Seq, c.Seq) >= 0 {
			t.Errorf("sequence numbers not increasing: %s then %s", got[i-1].Seq, c.Seq)
		}
	}

	// The batch the local event source mapping builds splits back into the same records.
	split, err := SplitEvent(EncodeEvent(raws))
	if err != nil || len(split) != len(raws) {
		t.Fatalf("split %d records: %v", len(split), err)
	}
	for i := range split {
		if string(split[i]) != string(raws[i]) {
			t.Errorf("record %d changed in the event envelope", i)
		}
	}
}

// readStream reads records from every shard of the stream, from the trim horizon, until it
// has want of them or 10 s pass.
func readStream(t *testing.T, c *dynamodbstreams.Client, arn string, want int) []streamstypes.Record {
	t.Helper()
	ctx := context.Background()
	ds, err := c.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	var out []streamstypes.Record
	deadline := time.Now().Add(10 * time.Second)
	for _, sh := range ds.StreamDescription.Shards {
		it, err := c.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: streamstypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatal(err)
		}
		for iter := it.ShardIterator; iter != nil && len(out) < want && time.Now().Before(deadline); {
			page, err := c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, page.Records...)
			iter = page.NextShardIterator
			if len(page.Records) == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	if len(out) != want {
		t.Fatalf("%d stream records within 10 s, want %d", len(out), want)
	}
	return out
}

// sameItem compares items with set members in any order: DynamoDB does not keep it.
func sameItem(a, b Item) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return reflect.DeepEqual(SortSets(a), SortSets(b))
}

// Several clients deleting one item at once: DynamoDB Local writes a REMOVE for every
// DeleteItem, and those that found the item already gone carry no OldImage (DynamoDB writes
// none). Every record decodes; exactly one removal per round has the old image.
func TestConcurrentDeletesDecode(t *testing.T) {
	db, streams := ddbtest.Clients(t)
	ctx := context.Background()
	name, desc := ddbtest.NewTable(t, db, table.Default())
	arn := aws.ToString(desc.LatestStreamArn)
	reader := ddbtest.NewStreamReader(t, streams, arn)

	const rounds, clients = 10, 8
	keys := Item{"pk": s("RACE#1"), "sk": s("ITEM")}
	for range rounds {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: Item{"pk": s("RACE#1"), "sk": s("ITEM"), "n": n("1")}}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: keys}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	// A last item marks the end: the stream of one table is one shard, in write order.
	end := Item{"pk": s("END"), "sk": s("END")}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: end}); err != nil {
		t.Fatal(err)
	}
	var recs []streamstypes.Record
	for done := false; !done; {
		for _, r := range reader.Read(1) {
			if pk, ok := r.Dynamodb.Keys["pk"].(*streamstypes.AttributeValueMemberS); ok && pk.Value == "END" {
				done = true
				break
			}
			recs = append(recs, r)
		}
	}

	var withOld, without int
	for _, r := range recs {
		raw, err := EncodeStreamRecord(r, arn, "us-east-1")
		if err != nil {
			t.Fatal(err)
		}
		c, err := Decode(raw)
		if err != nil {
			t.Fatalf("%v\n%s", err, raw)
		}
		switch {
		case c.Op != Remove:
		case c.Old != nil:
			withOld++
		default:
			without++
			if c.New != nil || !sameItem(c.Keys, keys) {
				t.Errorf("removal without OldImage: %s", render(c))
			}
		}
	}
	if withOld != rounds {
		t.Errorf("%d removals with OldImage, want one per round (%d)", withOld, rounds)
	}
	// The race is DynamoDB Local's; say when this run did not reproduce it.
	t.Logf("%d rounds of %d concurrent deletes: %d removals with OldImage, %d without", rounds, clients, withOld, without)
}
