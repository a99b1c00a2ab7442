// Package esm emulates a Lambda event source mapping over a DynamoDB stream, so Denorm's
// stream processor runs locally against DynamoDB Local exactly as Lambda would run it: shard
// lineage, batching, filters, retries, bisection, partial batch responses, an on-failure
// destination and a persistent checkpoint.
package esm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// Invoker runs the function for one event. It has the method set of aws-lambda-go's
// lambda.Handler, so lambda.NewHandler(fn) is an in-process Invoker; internal/runtimeapi
// provides one for a real bootstrap binary. An error is a function error: the whole batch
// failed.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// StreamsAPI is the part of the DynamoDB Streams client the mapping uses; the real
// *dynamodbstreams.Client satisfies it.
type StreamsAPI interface {
	DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// StartingPosition is where a mapping without a checkpoint starts reading.
type StartingPosition string

// Starting positions, as the Lambda event source mapping names them.
const (
	TrimHorizon StartingPosition = "TRIM_HORIZON"
	Latest      StartingPosition = "LATEST"
)

// Limits and defaults of the Lambda event source mapping for DynamoDB streams.
const (
	DefaultBatchSize    = 100
	MaxBatchSize        = 10000
	MaxRetryAttempts    = 10000
	DefaultPollInterval = 200 * time.Millisecond
	DefaultRetryBackoff = 50 * time.Millisecond
	// MaxParallelizationFactor is the most concurrent batches per shard Lambda allows.
	MaxParallelizationFactor = 10
	// maxGetRecords is the largest Limit GetRecords accepts.
	maxGetRecords = 1000
)

// Config is an event source mapping. Option names follow Lambda's CreateEventSourceMapping.
type Config struct {
	// StreamARN is the table's stream (TableDescription.LatestStreamArn).
	StreamARN string
	// StartingPosition applies to a mapping without checkpoint: TRIM_HORIZON (the default
	// here, so a local run sees everything its table holds) or LATEST. Shards found later, and
	// every shard once a checkpoint exists, are read from their checkpoint or their start.
	StartingPosition StartingPosition
	// BatchSize is the most records per invocation: default 100, at most 10000.
	BatchSize int
	// ParallelizationFactor is how many batches of one shard are processed at once: default
	// 1, at most 10. As in Lambda, each record goes to the lane its item's key (partition and
	// sort key) hashes to, so the records of one item stay in order but two items of one
	// partition may be processed at once, and the shard's checkpoint passes a record only
	// once every lane has processed everything up to it. Here the shard's reader
	// gathers up to ParallelizationFactor x BatchSize records, delivers each lane's share in
	// batches of at most BatchSize, and reads on when every lane is done.
	ParallelizationFactor int
	// MaximumBatchingWindow is how long records are gathered before invoking; 0 invokes as
	// soon as a read returns records.
	MaximumBatchingWindow time.Duration
	// MaximumRetryAttempts bounds the retries of a failed batch: nil or -1 retries until the
	// records expire (Lambda's default), 0..10000 retries that often. Use Int to set it.
	MaximumRetryAttempts *int
	// BisectBatchOnFunctionError splits a batch that failed as a whole (a function error, or
	// a batch item failure at its first record) in halves, each retried with its own retry
	// count, down to the poison record.
	BisectBatchOnFunctionError bool
	// MaximumRecordAge sends records older than this to the on-failure destination instead of
	// the function; 0 or -1 means no limit. Ages come from ApproximateCreationDateTime, which
	// DynamoDB Local rounds down to the minute.
	MaximumRecordAge time.Duration
	// ReportBatchItemFailures makes the function's {"batchItemFailures":[...]} response
	// count: the batch is checkpointed before the lowest failed sequence number.
	ReportBatchItemFailures bool
	// FilterCriteria are Lambda event filtering patterns (JSON); a record is sent when any
	// pattern matches it. Records filtered out count as processed.
	FilterCriteria []string
	// OnFailureDir receives one JSON file per discarded batch, shaped like Lambda's on-failure
	// record for streams. Empty: discarded batches are only logged and counted.
	OnFailureDir string
	// CheckpointFile keeps the last processed sequence number of every shard across restarts.
	// Empty: the checkpoint lives in memory only.
	CheckpointFile string
	// PollInterval is the pause between reads of a shard that returned nothing: default
	// 200ms. The stream is re-described every 10 intervals to find new shards.
	PollInterval time.Duration
	// RetryBackoff is the pause before the first retry of a failed batch, doubled per retry up
	// to 2s: default 50ms (Lambda's own backoff is seconds; locally we want fast tests).
	RetryBackoff time.Duration
	// FunctionARN names the function in on-failure records: default
	// arn:aws:lambda:<region>:000000000000:function:denorm-local.
	FunctionARN string
	// Region is the event's awsRegion: default the stream ARN's region.
	Region string
	// Logger receives the mapping's logs: default slog.Default().
	Logger *slog.Logger
	// Hooks let tests inject faults into deliveries.
	Hooks Hooks
}

// Int returns a pointer to n, for Config.MaximumRetryAttempts.
func Int(n int) *int { return &n }

// Mapping is a running event source mapping. Create it with New and start it with Run.
type Mapping struct {
	api    StreamsAPI
	inv    Invoker
	cfg    Config
	log    *slog.Logger
	filter *Filter
	region string
	ckpt   *checkpoint
	stats  counters

	mu        sync.Mutex
	shards    map[string]*shardState
	fresh     bool      // no checkpoint existed: StartingPosition applies to the first shards
	described time.Time // start of the last successful DescribeStream
	activity  time.Time // last time records were read or delivered
	running   bool
	done      chan struct{} // closed when Run returns
	started   chan struct{} // closed once Run holds the checkpoint and has described the stream
	wake      chan struct{} // asks the scheduler to look at the shards again
	refresh   chan struct{} // asks the scheduler to describe the stream now
}

// New checks cfg, loads the checkpoint and returns a mapping ready to Run.
func New(streams StreamsAPI, inv Invoker, cfg Config) (*Mapping, error) {
	if streams == nil || inv == nil {
		return nil, errors.New("esm: a streams client and an invoker are required")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f, err := CompileFilter(cfg.FilterCriteria)
	if err != nil {
		return nil, err
	}
	ck, err := loadCheckpoint(cfg.CheckpointFile, cfg.StreamARN, cfg.Logger)
	if err != nil {
		return nil, err
	}
	return &Mapping{
		api: streams, inv: inv, cfg: cfg, log: cfg.Logger, filter: f, region: cfg.Region,
		ckpt: ck, shards: map[string]*shardState{}, fresh: ck.empty(),
		done: make(chan struct{}), started: make(chan struct{}), wake: make(chan struct{}, 1), refresh: make(chan struct{}, 1),
	}, nil
}

func (c Config) withDefaults() (Config, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("esm: "+format, a...)) }
	region, ok := arnRegion(c.StreamARN)
	if !ok {
		bad("StreamARN %q is not a DynamoDB stream ARN (arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>)", c.StreamARN)
	}
	switch c.StartingPosition {
	case "":
		c.StartingPosition = TrimHorizon
	case TrimHorizon, Latest:
	default:
		bad("StartingPosition %q: want TRIM_HORIZON or LATEST", c.StartingPosition)
	}
	switch {
	case c.BatchSize == 0:
		c.BatchSize = DefaultBatchSize
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		bad("BatchSize %d: want 1..%d", c.BatchSize, MaxBatchSize)
	}
	switch {
	case c.ParallelizationFactor == 0:
		c.ParallelizationFactor = 1
	case c.ParallelizationFactor < 1 || c.ParallelizationFactor > MaxParallelizationFactor:
		bad("ParallelizationFactor %d: want 1..%d (concurrent batches per shard)", c.ParallelizationFactor, MaxParallelizationFactor)
	}
	if c.MaximumBatchingWindow < 0 {
		bad("MaximumBatchingWindow %v is negative", c.MaximumBatchingWindow)
	}
	if r := c.MaximumRetryAttempts; r != nil && (*r < -1 || *r > MaxRetryAttempts) {
		bad("MaximumRetryAttempts %d: want -1 (infinite) or 0..%d", *r, MaxRetryAttempts)
	}
	if c.MaximumRecordAge < -1 {
		bad("MaximumRecordAge %v: want -1 or 0 (infinite) or a positive duration", c.MaximumRecordAge)
	}
	if c.PollInterval < 0 || c.RetryBackoff < 0 {
		bad("PollInterval and RetryBackoff must not be negative")
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.Region == "" {
		c.Region = region
	}
	if c.FunctionARN == "" {
		c.FunctionARN = "arn:aws:lambda:" + c.Region + ":000000000000:function:denorm-local"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, errors.Join(errs...)
}

// gather is how many records one read of a shard gathers: a batch for each lane.
func (c Config) gather() int { return c.BatchSize * c.ParallelizationFactor }

// maxRetries returns the retry budget, -1 for infinite.
func (c Config) maxRetries() int {
	if c.MaximumRetryAttempts == nil {
		return -1
	}
	return *c.MaximumRetryAttempts
}

// arnRegion returns the region of a DynamoDB stream ARN.
func arnRegion(arn string) (string, bool) {
	p := strings.SplitN(arn, ":", 6)
	if len(p) != 6 || p[0] != "arn" || p[2] != "dynamodb" || p[3] == "" || !strings.Contains(p[5], "/stream/") {
		return "", false
	}
	return p[3], true
}
