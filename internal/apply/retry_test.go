package apply

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

func TestIsConflict(t *testing.T) {
	cancelled := func(codes ...string) error {
		tc := &types.TransactionCanceledException{}
		for _, c := range codes {
			tc.CancellationReasons = append(tc.CancellationReasons, types.CancellationReason{Code: aws.String(c)})
		}
		return fmt.Errorf("applying: %w", tc)
	}
	for _, tc := range []struct {
		name      string
		err       error
		conflict  bool
		retryable bool
	}{
		{"transaction conflict", cancelled("None", "TransactionConflict"), true, true},
		{"single write during a transaction", &smithy.GenericAPIError{Code: "TransactionConflictException"}, true, true},
		{"failed condition", cancelled("ConditionalCheckFailed", "None"), false, false},
		{"throttled", &smithy.GenericAPIError{Code: "ThrottlingException"}, false, true},
		{"other", errors.New("boom"), false, false},
	} {
		if got := IsConflict(tc.err); got != tc.conflict {
			t.Errorf("%s: IsConflict = %v, want %v", tc.name, got, tc.conflict)
		}
		if got := retryable(tc.err); got != tc.retryable {
			t.Errorf("%s: retryable = %v, want %v", tc.name, got, tc.retryable)
		}
	}
}
