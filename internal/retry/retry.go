// Package retry classifies DynamoDB errors (transient, a transaction conflict, a failed
// condition) and paces retries: exponential backoff, with full jitter where many writers
// retry at once. The processor's executor, the operations engine, the bench and the event
// source mapping emulator share it.
package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Transient reports whether err is worth retrying as it is: throttling, a transaction
// conflict or a transient service error, alone or as a reason a transaction was cancelled
// for. DynamoDB Local never raises TransactionConflict; tests inject it.
func Transient(err error) bool {
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				return true
			}
		}
		return false
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
			"InternalServerError", "ServiceUnavailable", "TransactionInProgressException",
			"TransactionConflictException":
			return true
		}
	}
	return false
}

// Conflict reports whether err is a transaction conflict: a TransactWriteItems cancelled
// with a TransactionConflict reason (another request was writing one of its items), or a
// single-item write refused because a transaction held its item.
func Conflict(err error) bool {
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			if aws.ToString(r.Code) == "TransactionConflict" {
				return true
			}
		}
		return false
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "TransactionConflictException"
}

// CondFailed returns the failed condition of a single-item write (its Item holds the item
// as it was when the write asked for ReturnValuesOnConditionCheckFailure).
func CondFailed(err error) (*types.ConditionalCheckFailedException, bool) {
	var cf *types.ConditionalCheckFailedException
	ok := errors.As(err, &cf)
	return cf, ok
}

// Refused reports whether err is a single-item write refused by its condition.
func Refused(err error) bool {
	_, ok := CondFailed(err)
	return ok
}

// Backoff is an exponential backoff: Base before the first retry, doubled for each one
// after it, never more than Max.
type Backoff struct {
	Base, Max time.Duration
}

// Delay is the pause before retry number attempt (1-based).
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Base
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Jittered is a pause drawn uniformly from [0, Delay(attempt)] ("full jitter"), so writers
// that failed together do not retry together.
func (b Backoff) Jittered(attempt int) time.Duration {
	return time.Duration(rand.Int64N(int64(b.Delay(attempt)) + 1))
}

// Sleep waits d or until ctx ends, and returns ctx's error if it ended first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
