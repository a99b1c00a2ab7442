package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/table"
)

func init() {
	register(command{name: "demo", summary: "write an item to DynamoDB Local and print its stream record", run: runDemo})
}

func runDemo(ctx context.Context, args []string) error {
	fs := newFlags("demo", "[--endpoint URL]")
	endpoint := fs.String("endpoint", os.Getenv("DENORM_DYNAMODB_ENDPOINT"), "DynamoDB endpoint (DynamoDB Local)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *endpoint == "" {
		return fmt.Errorf("no endpoint: pass --endpoint or run through `make demo`")
	}
	cfg, err := awsconf.Load(ctx, *endpoint)
	if err != nil {
		return err
	}
	db, streams := awsconf.Clients(cfg, true)
	name := fmt.Sprintf("denorm-demo-%d", time.Now().Unix())
	desc, err := provision.Ensure(ctx, db, name, table.Default())
	if err != nil {
		return err
	}
	fmt.Printf("created table %s: %d LSIs, %d GSIs, stream %s\n", name, len(desc.LocalSecondaryIndexes),
		len(desc.GlobalSecondaryIndexes), desc.StreamSpecification.StreamViewType)
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "USER#1"}, "sk": &types.AttributeValueMemberS{Value: "PROFILE"},
		"name": &types.AttributeValueMemberS{Value: "Ada"},
	}})
	if err != nil {
		return fmt.Errorf("writing item: %w", err)
	}
	rec, err := firstStreamRecord(ctx, streams, aws.ToString(desc.LatestStreamArn))
	if err != nil {
		return err
	}
	out, _ := json.MarshalIndent(rec, "", "  ")
	fmt.Printf("stream record:\n%s\n", out)
	return nil
}

func firstStreamRecord(ctx context.Context, c *dynamodbstreams.Client, arn string) (*stypes.Record, error) {
	ds, err := c.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("describing stream: %w", err)
	}
	for _, sh := range ds.StreamDescription.Shards {
		it, err := c.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			return nil, fmt.Errorf("getting shard iterator: %w", err)
		}
		out, err := c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			return nil, fmt.Errorf("reading stream: %w", err)
		}
		if len(out.Records) > 0 {
			return &out.Records[0], nil
		}
	}
	return nil, fmt.Errorf("no stream record found")
}
