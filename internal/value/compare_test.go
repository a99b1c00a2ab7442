package value

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/rules"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b types.AttributeValue
		want int
	}{
		{n("10"), n("9.5"), 1}, {n("-1"), n("1e-3"), -1}, {n("1.0"), n("1"), 0},
		{s("2026-01-02"), s("2026-01-10"), -1}, {s("b"), s("a"), 1},
		{n("1000"), s("1"), -1}, {s("1"), n("1000"), 1},
	} {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", Brief(tc.a), Brief(tc.b), got, tc.want)
		}
	}
	if !Comparable(n("1")) || !Comparable(s("")) || Comparable(&types.AttributeValueMemberBOOL{}) || Comparable(nil) {
		t.Error("Comparable")
	}
	if !Better(rules.KindMin, n("1"), nil) || Better(rules.KindMax, n("1"), n("1")) || !Better(rules.KindMin, n("1"), n("2")) {
		t.Error("Better")
	}
}
