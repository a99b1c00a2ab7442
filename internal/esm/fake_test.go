package esm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
)

// fakeStream is an in-memory DynamoDB stream for what DynamoDB Local cannot be made to do
// on demand: shard splits, expired iterators, old records, trimmed records, and the race in
// which DynamoDB Local refuses a new shard's first iterator. Everything else is tested
// against DynamoDB Local.
type fakeStream struct {
	mu     sync.Mutex
	arn    string
	shards []*fakeShard
	seq    int
	// expire and invalid make the n-th GetRecords call (1-based) on a shard fail with an
	// expired iterator, or with the ValidationException DynamoDB Local gives for a bad one.
	expire, invalid map[string]int
	calls           map[string]int
	// refused counts the TrimmedDataAccessExceptions GetRecords returned per shard.
	refused map[string]int
}

type fakeShard struct {
	id, parent string
	closed     bool
	records    []types.Record
	// horizon is the index of the oldest record left: records before it were trimmed.
	horizon int
	// gap: the shard's first record carries a later sequence number than the shard's start,
	// as in DynamoDB Local when other tables' writes took the numbers between. DynamoDB
	// Local then refuses as trimmed an iterator taken while the shard was empty.
	gap bool
}

const fakeARN = "arn:aws:dynamodb:us-east-1:000000000000:table/fake/stream/2024-01-01T00:00:00.000"

func newFakeStream() *fakeStream {
	return &fakeStream{arn: fakeARN, expire: map[string]int{}, invalid: map[string]int{}, calls: map[string]int{}, refused: map[string]int{}}
}

// add appends a shard, or records to one, creating it open under parent.
func (f *fakeStream) add(id, parent string, created time.Time, pks ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sh := f.shard(id)
	if sh == nil {
		sh = &fakeShard{id: id, parent: parent}
		f.shards = append(f.shards, sh)
	}
	for _, pk := range pks {
		f.seq++
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
		sh.records = append(sh.records, types.Record{
			EventID: aws.String(fmt.Sprintf("ev%d", f.seq)), EventName: types.OperationTypeInsert,
			EventSource: aws.String("aws:dynamodb"), EventVersion: aws.String("1.1"),
			Dynamodb: &types.StreamRecord{
				Keys: key, NewImage: key, SequenceNumber: aws.String(fmt.Sprintf("%021d", f.seq*100)),
				SizeBytes: aws.Int64(10), StreamViewType: types.StreamViewTypeNewAndOldImages,
				ApproximateCreationDateTime: aws.Time(created),
			},
		})
	}
}

// startGap makes shard id (created empty) behave as a new shard of DynamoDB Local whose
// first record comes after other tables' writes.
func (f *fakeStream) startGap(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shard(id).gap = true
}

// getCalls returns how many GetRecords calls shard id has had, and how many of them were
// refused as trimmed.
func (f *fakeStream) getCalls(id string) (calls, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id], f.refused[id]
}

// trim drops the n oldest records of shard id from the stream, as retention does.
func (f *fakeStream) trim(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shard(id).horizon += n
}

func (f *fakeStream) close(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shard(id).closed = true
}

func (f *fakeStream) shard(id string) *fakeShard {
	for _, s := range f.shards {
		if s.id == id {
			return s
		}
	}
	return nil
}

// DescribeStream pages two shards at a time, to exercise pagination.
func (f *fakeStream) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if aws.ToString(in.StreamArn) != f.arn {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no such stream")}
	}
	i := 0
	if from := aws.ToString(in.ExclusiveStartShardId); from != "" {
		for i < len(f.shards) && f.shards[i].id != from {
			i++
		}
		i++
	}
	d := &types.StreamDescription{StreamArn: in.StreamArn}
	for ; i < len(f.shards) && len(d.Shards) < 2; i++ {
		s := f.shards[i]
		r := &types.SequenceNumberRange{StartingSequenceNumber: aws.String("0")}
		if s.closed {
			r.EndingSequenceNumber = aws.String("999")
		}
		var parent *string
		if s.parent != "" {
			parent = aws.String(s.parent)
		}
		d.Shards = append(d.Shards, types.Shard{ShardId: aws.String(s.id), ParentShardId: parent, SequenceNumberRange: r})
	}
	if i < len(f.shards) {
		d.LastEvaluatedShardId = d.Shards[len(d.Shards)-1].ShardId
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: d}, nil
}

func (f *fakeStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.shard(aws.ToString(in.ShardId))
	if s == nil {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no such shard")}
	}
	pos := s.horizon
	switch in.ShardIteratorType {
	case types.ShardIteratorTypeLatest:
		pos = len(s.records)
	case types.ShardIteratorTypeAfterSequenceNumber:
		pos = 0
		for pos < len(s.records) && *s.records[pos].Dynamodb.SequenceNumber != aws.ToString(in.SequenceNumber) {
			pos++
		}
		pos++
		if pos < s.horizon {
			return nil, trimmedError()
		}
	}
	if s.gap && len(s.records) == 0 {
		// At the shard's starting sequence number, before the first record's.
		return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(s.id + "|0|start")}, nil
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(s.id + "|" + strconv.Itoa(pos))}, nil
}

func (f *fakeStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, p, _ := strings.Cut(aws.ToString(in.ShardIterator), "|")
	p, atStart, _ := strings.Cut(p, "|")
	pos, _ := strconv.Atoi(p)
	s := f.shard(id)
	f.calls[id]++
	if f.expire[id] == f.calls[id] {
		return nil, &types.ExpiredIteratorException{Message: aws.String("expired")}
	}
	if f.invalid[id] == f.calls[id] {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "Invalid ShardIterator"}
	}
	if pos < s.horizon || (atStart != "" && len(s.records) > 0) {
		f.refused[id]++
		return nil, trimmedError()
	}
	if atStart != "" {
		return &dynamodbstreams.GetRecordsOutput{NextShardIterator: in.ShardIterator}, nil
	}
	end := min(len(s.records), pos+int(aws.ToInt32(in.Limit)))
	out := &dynamodbstreams.GetRecordsOutput{Records: s.records[pos:end]}
	if !s.closed || end < len(s.records) {
		out.NextShardIterator = aws.String(id + "|" + strconv.Itoa(end))
	}
	return out, nil
}

func trimmedError() error {
	return &types.TrimmedDataAccessException{Message: aws.String("The operation attempted to read past the oldest stream record in a shard.")}
}
