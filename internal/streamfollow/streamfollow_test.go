package streamfollow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/streamfollow"
	"github.com/denorm/denorm/internal/table"
)

// others is how many records of other keys lie between the start and the target's last
// record: more than one GetRecords page (1,000 records), so the read goes on past a page.
const others = 1200

// A read on from a record finds the target's records however far on they are, passes over
// the rest, says how many it went through, and stops, saying so, when its context's time is
// up or Limit records were read. A second read from inside what the first read takes the
// target's records it holds from the index and reads only what is new.
func TestAfter(t *testing.T) {
	db, streams := ddbtest.Clients(t)
	name, desc := ddbtest.NewTable(t, db, table.Spec{PartitionKey: "pk", SortKey: "sk"})
	arn := aws.ToString(desc.LatestStreamArn)
	ctx := context.Background()
	put := func(pk string, n int) types.WriteRequest {
		return types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "A"},
			"n": &types.AttributeValueMemberN{Value: fmt.Sprint(n)}}}}
	}
	// The start, the target at 100, others, the target again: 1,202 records after the start.
	writes := []types.WriteRequest{put("START", 0)}
	for i := 1; i <= others; i++ {
		writes = append(writes, put(fmt.Sprintf("OTHER#%d", i), i))
		if i == 100 {
			writes = append(writes, put("TARGET", 1))
		}
	}
	writes = append(writes, put("TARGET", 2))
	for len(writes) > 0 {
		n := min(25, len(writes))
		out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: writes[:n]}})
		if err != nil {
			t.Fatal(err)
		}
		writes = append(out.UnprocessedItems[name], writes[n:]...)
	}
	recs := ddbtest.NewStreamReader(t, streams, arn).Read(others + 3)
	start := aws.ToString(recs[0].Dynamodb.SequenceNumber)
	key := map[string]string{"pk": "TARGET", "sk": "A"}

	r := streamfollow.New(streams)
	var seen []string
	read, err := r.After(ctx, arn, start, key, func(c *record.Change) bool {
		seen = append(seen, c.New["n"].(*types.AttributeValueMemberN).Value)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "1,2" || read != others+2 {
		t.Errorf("read %d records, the target's with n %v; want %d, n [1 2]", read, seen, others+2)
	}

	// From the target's first record, after more writes: its second record comes from the
	// index, then only what is new is read, not the 1,200 other records again.
	var first string
	for _, rec := range recs {
		if pk, ok := rec.Dynamodb.Keys["pk"].(*stypes.AttributeValueMemberS); ok && pk.Value == "TARGET" {
			first = aws.ToString(rec.Dynamodb.SequenceNumber)
			break
		}
	}
	writes = []types.WriteRequest{put("OTHER#a", 0), put("TARGET", 3), put("OTHER#b", 0)}
	if _, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: writes}}); err != nil {
		t.Fatal(err)
	}
	ddbtest.NewStreamReader(t, streams, arn).Read(others + 6)
	seen = nil
	read, err = r.After(ctx, arn, first, key, func(c *record.Change) bool {
		seen = append(seen, c.New["n"].(*types.AttributeValueMemberN).Value)
		return true
	})
	if err != nil || strings.Join(seen, ",") != "2,3" || read != 4 {
		t.Errorf("from the target's first record: read %d records, the target's with n %v, %v; want 4 (1 indexed, 3 new), n [2 3]", read, seen, err)
	}

	// Stopped by the caller's time budget: no record is read, and the error says so.
	done, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-done.Done()
	read, err = r.After(done, arn, start, key, func(*record.Change) bool { t.Error("a record after the budget"); return true })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(fmt.Sprint(err), "stopped after 0 records") || read != 0 {
		t.Errorf("out of time: read %d, %v; want 0 records and the deadline", read, err)
	}

	// Stopped by Limit: the target's first record was seen, its last was not.
	r = streamfollow.New(streams)
	r.Limit = 1000
	seen = nil
	read, err = r.After(ctx, arn, start, key, func(c *record.Change) bool {
		seen = append(seen, c.New["n"].(*types.AttributeValueMemberN).Value)
		return true
	})
	if err == nil || !strings.Contains(err.Error(), "more than 1000 records") || strings.Join(seen, ",") != "1" {
		t.Errorf("with Limit 1000: read %d, saw n %v, %v; want an error after n 1", read, seen, err)
	}
	// Stopped in the middle of a page, the index still ends where reading stopped: a read
	// from the target's first record reads on from there, the 204 records left.
	r.Limit = 0
	seen = nil
	read, err = r.After(ctx, arn, first, key, func(c *record.Change) bool {
		seen = append(seen, c.New["n"].(*types.AttributeValueMemberN).Value)
		return true
	})
	if err != nil || strings.Join(seen, ",") != "2,3" || read != others+5-1001 {
		t.Errorf("after a stop by Limit: read %d records, the target's with n %v, %v; want %d, n [2 3]", read, seen, err, others+5-1001)
	}
}
