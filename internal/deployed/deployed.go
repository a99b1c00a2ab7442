// Package deployed holds the event source mapping settings the CDK construct deploys
// (infra/denormcdk), so that `denorm local` runs the function as it runs on AWS unless told
// otherwise.
package deployed

import "time"

const (
	// BatchSize: larger batches let the executor coalesce more deltas per target (one state
	// write and one copy per counter per batch) while one batch still fits in the timeout.
	BatchSize = 200
	// MaxBatchingWindow trades at most this much latency for fuller batches.
	MaxBatchingWindow = 1 * time.Second
	// RetryAttempts bounds retries of a failing batch (bisected halves do not count); after
	// that the failing records go to the on-failure destination and the shard moves on.
	RetryAttempts = 10
	// MaxRecordAge leaves 18 of the stream's 24 hours of retention to replay a record that
	// was sent to the on-failure destination.
	MaxRecordAge = 6 * time.Hour
	// MemoryMB is the function's memory: Lambda gives CPU in proportion to memory; the handler
	// is I/O bound (DynamoDB round trips), so 512 MB on arm64 is enough CPU for decoding and
	// planning a batch and costs little. The bench prices Lambda duration at this size.
	MemoryMB = 512
)
