// Package denormcdk is the reusable CDK construct for Denorm: from a table spec and a rules
// file it builds the DynamoDB table, the stream processor function, the event source mapping
// with filters derived from the rules, the on-failure queue and the alarms an operator needs.
package denormcdk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/denorm/denorm/internal/table"
)

// Defaults for Props fields left at their zero value. The reasons are in README.md
// ("Sizing and delivery settings"); the short version is in each comment.
const (
	// DefaultMemoryMB: Lambda gives CPU in proportion to memory; the handler is I/O bound
	// (DynamoDB round trips), so 512 MB on arm64 is enough CPU for decoding and planning a
	// batch and costs little; raise it only if Duration grows with CPU-bound work.
	DefaultMemoryMB = 512
	// DefaultTimeout bounds one batch. The handler stops taking new work about 5 s before its
	// deadline and reports the rest as batch item failures, so a slow batch is resumed, not
	// retried from the start.
	DefaultTimeout = 60 * time.Second
	// DefaultBatchSize: larger batches let the executor coalesce more deltas per target
	// (one write per counter per batch) while one batch still fits comfortably in the timeout.
	DefaultBatchSize = 200
	// DefaultMaxBatchingWindow trades at most this much copy latency for fuller batches.
	DefaultMaxBatchingWindow = 1 * time.Second
	// DefaultRetryAttempts bounds retries of a failing batch (bisected halves do not count);
	// after that the failing records' metadata goes to the on-failure queue and the shard moves on.
	DefaultRetryAttempts = 10
	// DefaultMaxRecordAge leaves 18 of the stream's 24 hours of retention to replay a record
	// that was sent to the on-failure queue, from the shard and sequence numbers in the message.
	DefaultMaxRecordAge = 6 * time.Hour
	// DefaultMaxFilters is Lambda's default quota of filters per event source mapping.
	DefaultMaxFilters = 5
	// MaxFilterPatternLength is Lambda's limit on one filter pattern, in characters.
	MaxFilterPatternLength = 4096
	// DefaultIteratorAgeThreshold alarms when the oldest record of a batch waits this long.
	DefaultIteratorAgeThreshold = 60 * time.Second
)

// RulesFileName is the name of the rules file inside the function's code, next to bootstrap.
// The function reads it from DENORM_RULES, relative to its working directory /var/task.
const RulesFileName = "rules.yaml"

// Props configures a Denorm construct. Table, RulesFile and CodeDir are required; every
// other field has a default that suits a production table.
type Props struct {
	// Table is the table layout, usually the table section of the rules file.
	Table table.Spec
	// RulesFile is packaged with the function as rules.yaml.
	RulesFile string
	// CodeDir is a directory holding the function's `bootstrap` executable
	// (`make build` writes dist/streamproc/bootstrap).
	CodeDir string
	// FilterPatterns are Lambda event filter patterns (JSON objects): only records matching
	// one of them invoke the function. Empty: every record does.
	FilterPatterns []string
	// QueriedIndexes names the secondary indexes the processor queries; the function may
	// query those and no others. Each must be an index of Table.
	QueriedIndexes []string
	// ExtraReadActions are DynamoDB read actions on the table beyond the ones every
	// processor needs (for example "dynamodb:BatchGetItem").
	ExtraReadActions []string

	// Dev makes the stack disposable: the table, queue and log group are deleted with the
	// stack and the table has no deletion protection. Off: they are retained and protected.
	Dev bool

	// Architecture of bootstrap; default ARM64 (cheaper per GB-second, what `make build` emits).
	Architecture awslambda.Architecture
	MemoryMB     int           // default DefaultMemoryMB
	Timeout      time.Duration // default DefaultTimeout
	LogRetention awslogs.RetentionDays

	BatchSize         int           // default DefaultBatchSize
	MaxBatchingWindow time.Duration // default DefaultMaxBatchingWindow
	RetryAttempts     int           // default DefaultRetryAttempts
	MaxRecordAge      time.Duration // default DefaultMaxRecordAge
	// MaxFilters is the filters-per-mapping quota of the account; raise it after a quota increase.
	MaxFilters int

	// IteratorAgeThreshold; default DefaultIteratorAgeThreshold.
	IteratorAgeThreshold time.Duration
	// AlarmActions are added to every alarm (for example an SNS topic action).
	AlarmActions []awscloudwatch.IAlarmAction
}

// withDefaults returns p with zero fields set to their defaults.
func (p Props) withDefaults() Props {
	if p.Architecture == nil {
		p.Architecture = awslambda.Architecture_ARM_64()
	}
	if p.MemoryMB == 0 {
		p.MemoryMB = DefaultMemoryMB
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.LogRetention == "" {
		p.LogRetention = awslogs.RetentionDays_ONE_MONTH
	}
	if p.BatchSize == 0 {
		p.BatchSize = DefaultBatchSize
	}
	if p.MaxBatchingWindow == 0 {
		p.MaxBatchingWindow = DefaultMaxBatchingWindow
	}
	if p.RetryAttempts == 0 {
		p.RetryAttempts = DefaultRetryAttempts
	}
	if p.MaxRecordAge == 0 {
		p.MaxRecordAge = DefaultMaxRecordAge
	}
	if p.MaxFilters == 0 {
		p.MaxFilters = DefaultMaxFilters
	}
	if p.IteratorAgeThreshold == 0 {
		p.IteratorAgeThreshold = DefaultIteratorAgeThreshold
	}
	return p
}

// validate reports every problem with p at once, before any resource is defined, so a bad
// rules file stops the synth with all its reasons and leaves no half-built construct tree.
func (p Props) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if err := p.Table.Validate(); err != nil {
		errs = append(errs, err)
	}
	if p.RulesFile == "" {
		bad("RulesFile is required")
	} else if st, err := os.Stat(p.RulesFile); err != nil || !st.Mode().IsRegular() {
		bad("rules file %s: not a readable file", p.RulesFile)
	}
	if p.CodeDir == "" {
		bad("CodeDir is required")
	} else if st, err := os.Stat(filepath.Join(p.CodeDir, "bootstrap")); err != nil || !st.Mode().IsRegular() {
		bad("function code: no bootstrap in %s (run `make build` first)", p.CodeDir)
	}
	for _, name := range p.QueriedIndexes {
		if name == "" || name == "table" {
			continue // the base table is always queryable
		}
		if _, ok := p.Table.Index(name); !ok {
			bad("queried index %q is not an index of the table", name)
		}
	}
	for _, a := range p.ExtraReadActions {
		if !allowedExtraReadActions[a] {
			bad("extra read action %q is not one of dynamodb:BatchGetItem, dynamodb:TransactGetItems", a)
		}
	}
	if p.MemoryMB < 128 || p.MemoryMB > 10240 {
		bad("MemoryMB %d is outside Lambda's 128..10240", p.MemoryMB)
	}
	if p.Timeout < time.Second || p.Timeout > 15*time.Minute || p.Timeout%time.Second != 0 {
		bad("Timeout %s must be whole seconds between 1s and 15m", p.Timeout)
	}
	if p.BatchSize < 1 || p.BatchSize > 10000 {
		bad("BatchSize %d is outside 1..10000", p.BatchSize)
	}
	if p.MaxBatchingWindow < 0 || p.MaxBatchingWindow > 300*time.Second || p.MaxBatchingWindow%time.Second != 0 {
		bad("MaxBatchingWindow %s must be whole seconds up to 300s", p.MaxBatchingWindow)
	}
	// Lambda's -1 (retry until the record expires) is deliberately not offered: a poison
	// record must not block its shard for the stream's whole retention.
	if p.RetryAttempts < 1 || p.RetryAttempts > 10000 {
		bad("RetryAttempts %d is outside 1..10000", p.RetryAttempts)
	}
	if p.MaxRecordAge < 60*time.Second || p.MaxRecordAge > 7*24*time.Hour || p.MaxRecordAge%time.Second != 0 {
		bad("MaxRecordAge %s must be whole seconds between 60s and 7 days", p.MaxRecordAge)
	}
	if err := CheckFilterPatterns(p.FilterPatterns, p.MaxFilters); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

var allowedExtraReadActions = map[string]bool{
	"dynamodb:BatchGetItem":     true,
	"dynamodb:TransactGetItems": true,
}
