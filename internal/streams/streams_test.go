package streams

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
)

// What the registry makes of each stream, and what a takeover claims.
func TestRegistryOf(t *testing.T) {
	var none *Registry
	if none.Of("a") != First || none.Err("a") != nil || none.TakeOverEpoch() != 1 {
		t.Errorf("no registry: %v, %v, takeover epoch %d; want First, no error, 1", none.Of("a"), none.Err("a"), none.TakeOverEpoch())
	}
	reg := &Registry{Current: "b", Epoch: 2, Retired: []string{"a"}}
	for arn, want := range map[string]Status{"b": Current, "a": Retired, "c": Unregistered} {
		if got := reg.Of(arn); got != want {
			t.Errorf("Of(%s) = %v, want %v", arn, got, want)
		}
	}
	if !errors.Is(reg.Err("a"), ErrRetired) || !errors.Is(reg.Err("c"), ErrUnregistered) || reg.Err("b") != nil || reg.TakeOverEpoch() != 3 {
		t.Errorf("errors %v / %v / %v, takeover epoch %d", reg.Err("a"), reg.Err("c"), reg.Err("b"), reg.TakeOverEpoch())
	}
	if _, err := Claim("t", table.Spec{PartitionKey: "pk", SortKey: "sk"}, reg, "c", record.MaxEpoch+1); err == nil {
		t.Error("a claim beyond the last epoch: no error")
	}
}

// A registry item that is not one is an error naming what is wrong, never a guess.
func TestParse(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	if reg, err := Parse(nil); reg != nil || err != nil {
		t.Errorf("no item: %v, %v", reg, err)
	}
	reg, err := Parse(record.Item{rules.StreamCurrentAttr: s("b"), rules.StreamEpochAttr: n("2"),
		rules.StreamRetiredAttr: &types.AttributeValueMemberSS{Value: []string{"a"}}})
	if err != nil || reg.Current != "b" || reg.Epoch != 2 || len(reg.Retired) != 1 {
		t.Errorf("registry: %+v, %v", reg, err)
	}
	for _, bad := range []record.Item{
		{rules.StreamEpochAttr: n("2")},
		{rules.StreamCurrentAttr: s("b"), rules.StreamEpochAttr: n("-1")},
		{rules.StreamCurrentAttr: s("b"), rules.StreamEpochAttr: n("100")},
		{rules.StreamCurrentAttr: s("b"), rules.StreamEpochAttr: s("2")},
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%v): no error", bad)
		}
	}
}
