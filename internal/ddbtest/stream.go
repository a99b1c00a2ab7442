package ddbtest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// StreamReader reads a table's stream from the start, remembering where it stopped, so a
// test can take "the records my last writes produced". DynamoDB Local serves few shards;
// the reader follows every shard it describes.
type StreamReader struct {
	t     testing.TB
	c     *dynamodbstreams.Client
	arn   string
	iters map[string]*string
	done  map[string]bool
}

// NewStreamReader starts reading stream arn from TRIM_HORIZON.
func NewStreamReader(t testing.TB, c *dynamodbstreams.Client, arn string) *StreamReader {
	return &StreamReader{t: t, c: c, arn: arn, iters: map[string]*string{}, done: map[string]bool{}}
}

// Read returns the records written since the last Read, waiting until want records arrived
// (or 10 s passed, which fails the test). want <= 0 returns whatever is there.
func (s *StreamReader) Read(want int) []stypes.Record {
	s.t.Helper()
	ctx := context.Background()
	var out []stypes.Record
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds, err := s.c.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(s.arn)})
		if err != nil {
			s.t.Fatal(err)
		}
		for _, sh := range ds.StreamDescription.Shards {
			id := aws.ToString(sh.ShardId)
			if s.done[id] {
				continue
			}
			it, ok := s.iters[id]
			if !ok {
				gi, err := s.c.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
					StreamArn: aws.String(s.arn), ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon,
				})
				if err != nil {
					s.t.Fatal(err)
				}
				it = gi.ShardIterator
			}
			for it != nil {
				gr, err := s.c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it})
				if err != nil {
					s.t.Fatal(err)
				}
				out = append(out, gr.Records...)
				it = gr.NextShardIterator
				if len(gr.Records) == 0 {
					break
				}
			}
			if it == nil {
				s.done[id] = true
			}
			s.iters[id] = it
		}
		if want <= 0 || len(out) >= want {
			return out
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("stream: %d records after 10 s, want %d", len(out), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
