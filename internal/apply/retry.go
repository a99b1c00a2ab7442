package apply

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// ErrDeadline means the invocation's deadline was too near to start another write; the
// record is reported as not applied and the stream retries it.
var ErrDeadline = errors.New("invocation deadline too near to start a write")

// retryable reports whether err is transient: throttling, a transaction conflict, a
// transient service error. DynamoDB Local never raises TransactionConflict; tests inject it.
func retryable(err error) bool {
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			switch code(r.Code) {
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
			"InternalServerError", "TransactionInProgressException", "TransactionConflictException":
			return true
		}
	}
	return false
}

// IsConflict reports whether err is a transaction conflict: a TransactWriteItems cancelled
// with a TransactionConflict reason (another request was writing one of its items), or a
// single-item write refused because a transaction held its item.
func IsConflict(err error) bool {
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			if code(r.Code) == "TransactionConflict" {
				return true
			}
		}
		return false
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "TransactionConflictException"
}

func code(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// isCondFailed reports whether err is a failed condition of a single-item write.
func isCondFailed(err error) (*types.ConditionalCheckFailedException, bool) {
	var cf *types.ConditionalCheckFailedException
	ok := errors.As(err, &cf)
	return cf, ok
}

// do runs op, retrying transient errors with full-jitter exponential backoff until the
// invocation's deadline margin. what names the operation in the returned error.
func (r *run) do(what string, op func(ctx context.Context) error) error {
	backoff := 25 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if err := r.checkDeadline(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		err := op(r.ctx)
		if err == nil || !retryable(err) {
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
		r.mu.Lock()
		r.stats.Retries++
		if IsConflict(err) {
			r.stats.Conflicts++
		}
		r.mu.Unlock()
		sleep := time.Duration(rand.Int64N(int64(backoff) + 1))
		if backoff < r.x.opt.MaxBackoff {
			backoff *= 2
		}
		select {
		case <-r.ctx.Done():
			return fmt.Errorf("%s: %w", what, r.ctx.Err())
		case <-time.After(sleep):
		}
	}
}

func (r *run) checkDeadline() error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if dl, ok := r.ctx.Deadline(); ok && time.Until(dl) < r.x.opt.DeadlineMargin {
		return ErrDeadline
	}
	return nil
}
