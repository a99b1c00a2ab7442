package retry

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

func TestClassify(t *testing.T) {
	cancelled := func(codes ...string) error {
		tc := &types.TransactionCanceledException{}
		for _, c := range codes {
			tc.CancellationReasons = append(tc.CancellationReasons, types.CancellationReason{Code: aws.String(c)})
		}
		return fmt.Errorf("applying: %w", tc)
	}
	for _, tc := range []struct {
		name                string
		err                 error
		conflict, transient bool
		condFailed          bool
	}{
		{name: "transaction conflict", err: cancelled("None", "TransactionConflict"), conflict: true, transient: true},
		{name: "single write during a transaction", err: &smithy.GenericAPIError{Code: "TransactionConflictException"}, conflict: true, transient: true},
		{name: "a transaction's failed condition", err: cancelled("ConditionalCheckFailed", "None")},
		{name: "a transaction throttled", err: cancelled("None", "ThrottlingError"), transient: true},
		{name: "throttled", err: &smithy.GenericAPIError{Code: "ThrottlingException"}, transient: true},
		{name: "service unavailable", err: &smithy.GenericAPIError{Code: "ServiceUnavailable"}, transient: true},
		{name: "failed condition", err: fmt.Errorf("writing: %w", &types.ConditionalCheckFailedException{}), condFailed: true},
		{name: "other", err: errors.New("boom")},
	} {
		if got := Conflict(tc.err); got != tc.conflict {
			t.Errorf("%s: Conflict = %v, want %v", tc.name, got, tc.conflict)
		}
		if got := Transient(tc.err); got != tc.transient {
			t.Errorf("%s: Transient = %v, want %v", tc.name, got, tc.transient)
		}
		if _, got := CondFailed(tc.err); got != tc.condFailed {
			t.Errorf("%s: CondFailed = %v, want %v", tc.name, got, tc.condFailed)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 40: time.Second} {
		if got := b.Delay(attempt); got != want {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, want)
		}
		for range 20 {
			if got := b.Jittered(attempt); got < 0 || got > want {
				t.Errorf("Jittered(%d) = %v, outside [0, %v]", attempt, got, want)
			}
		}
	}
}
