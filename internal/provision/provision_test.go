package provision_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/table"
)

// The default table as DynamoDB Local builds it: 5 LSIs, the GSIs, a NEW_AND_OLD_IMAGES
// stream, and a write that comes back as a stream record with both keys and the new image.
func TestDefaultTableStreamsAWrite(t *testing.T) {
	db, streams := ddbtest.Clients(t)
	ctx := context.Background()
	spec := table.Default()
	name, desc := ddbtest.NewTable(t, db, spec)

	if got := len(desc.LocalSecondaryIndexes); got != 5 {
		t.Errorf("local indexes = %d, want 5", got)
	}
	if got := len(desc.GlobalSecondaryIndexes); got != len(spec.GlobalIndexes) {
		t.Errorf("global indexes = %d, want %d", got, len(spec.GlobalIndexes))
	}
	if desc.StreamSpecification == nil || desc.StreamSpecification.StreamViewType != types.StreamViewTypeNewAndOldImages {
		t.Fatalf("stream = %+v, want NEW_AND_OLD_IMAGES", desc.StreamSpecification)
	}
	// Ensure is idempotent on an existing table.
	if _, err := provision.Ensure(ctx, db, name, spec); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}

	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "USER#1"}, "sk": &types.AttributeValueMemberS{Value: "PROFILE"},
		"lsi0_sk": &types.AttributeValueMemberS{Value: "NAME#Ada"}, "name": &types.AttributeValueMemberS{Value: "Ada"},
	}})
	if err != nil {
		t.Fatal(err)
	}

	rec := firstRecord(t, streams, aws.ToString(desc.LatestStreamArn))
	if rec.EventName != stypes.OperationTypeInsert {
		t.Errorf("event = %s, want INSERT", rec.EventName)
	}
	if got := rec.Dynamodb.NewImage["name"]; got == nil || got.(*stypes.AttributeValueMemberS).Value != "Ada" {
		t.Errorf("new image name = %v, want Ada", got)
	}
	if aws.ToString(rec.Dynamodb.SequenceNumber) == "" {
		t.Error("stream record has no sequence number")
	}
	t.Logf("table %s: %d LSIs, %d GSIs, stream %s", name, len(desc.LocalSecondaryIndexes), len(desc.GlobalSecondaryIndexes),
		desc.StreamSpecification.StreamViewType)
	t.Logf("stream record: %s %s seq=%s keys=%d new=%d attributes", rec.EventName, aws.ToString(rec.EventID),
		aws.ToString(rec.Dynamodb.SequenceNumber), len(rec.Dynamodb.Keys), len(rec.Dynamodb.NewImage))
}

func firstRecord(t *testing.T, c *dynamodbstreams.Client, arn string) stypes.Record {
	t.Helper()
	ctx := context.Background()
	ds, err := c.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, sh := range ds.StreamDescription.Shards {
		it, err := c.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil && time.Now().Before(deadline) {
			out, err := c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Records) > 0 {
				return out.Records[0]
			}
			iter = out.NextShardIterator
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Fatal("no stream record within 10 s")
	return stypes.Record{}
}

// A name DynamoDB would refuse is refused before CreateTable, saying what a name may hold.
func TestEnsureRefusesBadName(t *testing.T) {
	_, err := provision.Ensure(context.Background(), nil, "my table!", table.Default())
	if !errors.Is(err, table.ErrBadName) || !strings.Contains(err.Error(), "3 to 255 characters") {
		t.Errorf("Ensure(%q) = %v, want table.ErrBadName", "my table!", err)
	}
}
