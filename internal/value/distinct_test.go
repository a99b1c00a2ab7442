package value

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestDistinctKeyFollowsEqual(t *testing.T) {
	vals := []types.AttributeValue{
		&types.AttributeValueMemberS{Value: "1"},
		&types.AttributeValueMemberS{Value: "u1"},
		&types.AttributeValueMemberN{Value: "1"},
		&types.AttributeValueMemberN{Value: "1.0"},
		&types.AttributeValueMemberN{Value: "10e-1"},
		&types.AttributeValueMemberN{Value: "2"},
		&types.AttributeValueMemberBOOL{Value: true},
		&types.AttributeValueMemberBOOL{Value: false},
	}
	for _, a := range vals {
		for _, b := range vals {
			ka, _ := DistinctKey(a)
			kb, _ := DistinctKey(b)
			if (ka == kb) != Equal(a, b) {
				t.Errorf("DistinctKey(%v)=%q, DistinctKey(%v)=%q, Equal=%v", a, ka, b, kb, Equal(a, b))
			}
		}
	}
	for _, v := range []types.AttributeValue{nil, &types.AttributeValueMemberNULL{Value: true},
		&types.AttributeValueMemberL{}, &types.AttributeValueMemberSS{Value: []string{"a"}}} {
		if k, ok := DistinctKey(v); ok {
			t.Errorf("DistinctKey(%#v) = %q, want no value", v, k)
		}
	}
}
