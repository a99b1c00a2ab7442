// Package denormcdk is the reusable CDK construct for Denorm. From a rules file and the
// built function code it defines the stream processor function, the event source mapping
// with filters derived from the rules, the on-failure queue, the processor's permissions and
// the alarms an operator needs, on a DynamoDB table it creates from the rules file or on an
// existing table of the app or of the account.
package denormcdk

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/denorm/denorm/internal/deployed"
)

// Defaults for Props fields left at their zero value. The reasons are in README.md
// ("Sizing and delivery settings"); the short version is in each comment.
const (
	// DefaultMemoryMB: Lambda gives CPU in proportion to memory; the handler is I/O bound
	// (DynamoDB round trips), so 512 MB on arm64 is enough CPU for decoding and planning a
	// batch and costs little; raise it only if Duration grows with CPU-bound work. `denorm
	// bench` prices Lambda duration at this size (internal/deployed).
	DefaultMemoryMB = deployed.MemoryMB
	// DefaultTimeout bounds one batch. The handler stops taking new work about 5 s before its
	// deadline and reports the rest as batch item failures, so a slow batch is resumed, not
	// retried from the start.
	DefaultTimeout = 60 * time.Second
	// DefaultBatchSize, DefaultMaxBatchingWindow, DefaultRetryAttempts and DefaultMaxRecordAge
	// are the mapping's settings (internal/deployed says why each), which `denorm local` uses
	// by default too.
	DefaultBatchSize         = deployed.BatchSize
	DefaultMaxBatchingWindow = deployed.MaxBatchingWindow
	DefaultRetryAttempts     = deployed.RetryAttempts
	DefaultMaxRecordAge      = deployed.MaxRecordAge
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

// Props configures a Denorm construct. RulesFile is required; every other field has a
// default that suits a production table.
type Props struct {
	// RulesFile is the path of the rules file; a relative path is relative to the working
	// directory of the CDK app, where its cdk.json is. The construct loads, validates and
	// compiles it with the function's own compiler and derives from it the table's layout, the
	// event filters and the indexes the function may query; it is packaged with the function
	// as rules.yaml. Give either RulesFile or Rules.
	RulesFile string
	// Rules is the rules file's content, instead of RulesFile: for example a file embedded
	// with //go:embed, so that the app does not depend on the directory it runs in. RulesName
	// names it in error messages (default "rules.yaml").
	Rules     []byte
	RulesName string
	// Code is the function's code, already built: a directory holding the `bootstrap`
	// executable or a zip file with `bootstrap` at its root (what `make build` writes in
	// Denorm's repository: dist/streamproc, dist/streamproc.zip). Only bootstrap is taken
	// from it. Empty (the default): the construct builds FunctionPackage at synth for
	// Architecture with the go command on PATH, in the app's module, so the function is the
	// version of github.com/denorm/denorm the app's go.mod selects; the build cache makes it
	// a link after the first synth.
	Code string
	// Table is an existing table to attach Denorm to; nil: the construct creates the table
	// from the rules file's table section. It is either a table of the same app
	// (awsdynamodb.NewTable with Stream NEW_AND_OLD_IMAGES, in any stack of the app; or
	// awsdynamodb.NewTableV2 with DynamoStream NEW_AND_OLD_IMAGES, with replicas or not: a
	// global table is processed in the stack's Region alone, docs/processor.md "Global
	// tables") or one imported with awsdynamodb.Table_FromTableAttributes giving TableName and
	// TableStreamArn, and EncryptionKey when a customer managed key encrypts it. Its stream
	// must carry new and old images, and the rules file's table section must describe it.
	//
	// The construct checks that the table has a stream, the stream view type of a table
	// of the same app, and that an imported stream ARN names the imported table; it cannot
	// see an existing table's keys and indexes. `denorm check-table --rules RULES --table
	// NAME` compares the deployed table with the rules file.
	Table awsdynamodb.ITable
	// ExtraReadActions are DynamoDB read actions on the table beyond the ones every
	// processor needs (for example "dynamodb:BatchGetItem").
	ExtraReadActions []string

	// Dev makes the stack disposable: the queue, the log group and the table the construct
	// creates are deleted with the stack, and that table has no deletion protection. Off:
	// they are retained and the table is protected. An existing Table is never changed.
	Dev bool

	// Architecture of the function; default ARM64 (cheaper per GB-second). The construct
	// builds for it; a Code built for the other one does not run.
	Architecture awslambda.Architecture
	MemoryMB     int             // default DefaultMemoryMB
	Timeout      awscdk.Duration // default DefaultTimeout; whole seconds
	LogRetention awslogs.RetentionDays
	// ReservedConcurrency reserves that many concurrent executions of the account's pool for
	// the function (it needs one per shard; see README "Sizing"); 0: unreserved.
	ReservedConcurrency int
	// NoRuntimeLayer packs bootstrap into the function's own code. By default bootstrap is in
	// a Lambda layer that every Denorm construct of a stack with the same code shares, so
	// several constructs in an app deploy the executable once and each function's own code
	// holds only its rules.yaml. Set it for a platform that does not apply layers.
	NoRuntimeLayer bool

	BatchSize         int             // default DefaultBatchSize
	MaxBatchingWindow awscdk.Duration // default DefaultMaxBatchingWindow; whole seconds
	RetryAttempts     int             // default DefaultRetryAttempts
	MaxRecordAge      awscdk.Duration // default DefaultMaxRecordAge; whole seconds
	// StartingPosition of the event source mapping: TRIM_HORIZON (the default) reads every
	// record the stream still holds, so nothing written while the stack deployed is missed.
	// LATEST skips them; then run `denorm backfill` once the mapping runs (docs/operations.md).
	StartingPosition awslambda.StartingPosition
	// MaxFilters is the filters-per-mapping quota of the account; raise it after a quota increase.
	MaxFilters int

	// FailureQueue or FailureTopic is the app's own on-failure destination for batches the
	// mapping gives up on (at most one of them); nil: the construct creates a queue
	// (DeadLetterQueue). The processor's role is granted sqs:SendMessage or sns:Publish on it,
	// and the use of its KMS key when it has one. A queue gets the FailedBatches alarm; a
	// topic's subscribers see each message themselves.
	FailureQueue awssqs.IQueue
	FailureTopic awssns.ITopic

	// NoAlarms: define no alarms (an app that monitors the function its own way).
	NoAlarms bool
	// IteratorAgeThreshold; default DefaultIteratorAgeThreshold.
	IteratorAgeThreshold awscdk.Duration
	// AlarmActions are added to every alarm (for example an SNS topic action); OKActions
	// to every alarm's return to OK.
	AlarmActions []awscloudwatch.IAlarmAction
	OKActions    []awscloudwatch.IAlarmAction
}

// settings are Props with every default filled in and the durations as time.Duration.
type settings struct {
	Props
	timeout, maxBatchingWindow, maxRecordAge, iteratorAgeThreshold time.Duration
	startingPosition                                               string
}

// withDefaults returns p's settings, zero fields set to their defaults.
func (p Props) withDefaults() settings {
	if p.Architecture == nil {
		p.Architecture = awslambda.Architecture_ARM_64()
	}
	if p.MemoryMB == 0 {
		p.MemoryMB = DefaultMemoryMB
	}
	if p.LogRetention == "" {
		p.LogRetention = awslogs.RetentionDays_ONE_MONTH
	}
	if p.BatchSize == 0 {
		p.BatchSize = DefaultBatchSize
	}
	if p.RetryAttempts == 0 {
		p.RetryAttempts = DefaultRetryAttempts
	}
	if p.MaxFilters == 0 {
		p.MaxFilters = DefaultMaxFilters
	}
	if p.Rules != nil && p.RulesName == "" {
		p.RulesName = RulesFileName
	}
	s := settings{Props: p,
		timeout:              duration(p.Timeout, DefaultTimeout),
		maxBatchingWindow:    duration(p.MaxBatchingWindow, DefaultMaxBatchingWindow),
		maxRecordAge:         duration(p.MaxRecordAge, DefaultMaxRecordAge),
		iteratorAgeThreshold: duration(p.IteratorAgeThreshold, DefaultIteratorAgeThreshold),
		startingPosition:     string(awslambda.StartingPosition_TRIM_HORIZON),
	}
	if p.StartingPosition != "" {
		s.startingPosition = string(p.StartingPosition)
	}
	return s
}

// duration is d as a time.Duration, or def when d is not set.
func duration(d awscdk.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d.ToMilliseconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)}) * float64(time.Millisecond))
}

// validate reports every problem with the settings at once, before any resource is defined,
// so a bad rules file stops the synth with all its reasons and leaves no half-built
// construct tree. It returns what the construct takes from the rules file.
func (p settings) validate() (compiledRules, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var r compiledRules
	switch {
	case p.RulesFile == "" && p.Rules == nil:
		bad("RulesFile (a path) or Rules (the file's content) is required")
	case p.RulesFile != "" && p.Rules != nil:
		bad("give RulesFile or Rules, not both")
	default:
		if loaded, err := loadRules(p.RulesFile, p.RulesName, p.Rules); err != nil {
			errs = append(errs, err)
		} else {
			r = loaded
			if err := CheckFilterPatterns(r.filterPatterns, p.MaxFilters); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := checkCode(p.Code); err != nil {
		errs = append(errs, err)
	}
	if p.Table != nil {
		if err := checkStream(p.Table); err != nil {
			errs = append(errs, err)
		}
		if r.filterPatterns != nil || r.table.PartitionKey != "" {
			if err := checkShape(p.Table, r.table); err != nil {
				errs = append(errs, err)
			}
			if err := checkReplicas(p.Table, r.keepExpired); err != nil {
				errs = append(errs, err)
			}
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
	if p.timeout < time.Second || p.timeout > 15*time.Minute || p.timeout%time.Second != 0 {
		bad("Timeout %s must be whole seconds between 1s and 15m", p.timeout)
	}
	if p.ReservedConcurrency < 0 {
		bad("ReservedConcurrency %d is negative (0 leaves the function unreserved)", p.ReservedConcurrency)
	}
	if p.BatchSize < 1 || p.BatchSize > 10000 {
		bad("BatchSize %d is outside 1..10000", p.BatchSize)
	}
	if p.maxBatchingWindow < 0 || p.maxBatchingWindow > 300*time.Second || p.maxBatchingWindow%time.Second != 0 {
		bad("MaxBatchingWindow %s must be whole seconds up to 300s", p.maxBatchingWindow)
	}
	// Lambda's -1 (retry until the record expires) is deliberately not offered: a poison
	// record must not block its shard for the stream's whole retention.
	if p.RetryAttempts < 1 || p.RetryAttempts > 10000 {
		bad("RetryAttempts %d is outside 1..10000", p.RetryAttempts)
	}
	if p.maxRecordAge < 60*time.Second || p.maxRecordAge > 7*24*time.Hour || p.maxRecordAge%time.Second != 0 {
		bad("MaxRecordAge %s must be whole seconds between 60s and 7 days", p.maxRecordAge)
	}
	if p.iteratorAgeThreshold <= 0 {
		bad("IteratorAgeThreshold %s must be positive", p.iteratorAgeThreshold)
	}
	switch p.startingPosition {
	case string(awslambda.StartingPosition_TRIM_HORIZON), string(awslambda.StartingPosition_LATEST):
	default:
		bad("StartingPosition %s: a DynamoDB stream starts at TRIM_HORIZON or LATEST", p.startingPosition)
	}
	if p.FailureQueue != nil && p.FailureTopic != nil {
		bad("give FailureQueue or FailureTopic, not both")
	}
	// Lambda refuses a FIFO queue or topic as a stream mapping's on-failure destination.
	if p.FailureQueue != nil && isTrue(p.FailureQueue.Fifo()) {
		bad("FailureQueue is a FIFO queue: a stream mapping's on-failure destination must be a standard queue")
	}
	if p.FailureTopic != nil && isTrue(p.FailureTopic.Fifo()) {
		bad("FailureTopic is a FIFO topic: a stream mapping's on-failure destination must be a standard topic")
	}
	return r, errors.Join(errs...)
}

func isTrue(b *bool) bool { return b != nil && *b }

var allowedExtraReadActions = map[string]bool{
	"dynamodb:BatchGetItem":     true,
	"dynamodb:TransactGetItems": true,
}
