package record

import (
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SortSets returns item with the members of every set, at any depth, in one order: DynamoDB
// keeps none, so two reads of one item can list them differently. Two items are the same
// item when their SortSets are deeply equal.
func SortSets(item Item) Item {
	if item == nil {
		return nil
	}
	out := make(Item, len(item))
	for k, v := range item {
		out[k] = sortSet(v)
	}
	return out
}

func sortSet(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Sorted(slices.Values(v.Value))}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Sorted(slices.Values(v.Value))}
	case *types.AttributeValueMemberBS:
		bs := slices.Clone(v.Value)
		slices.SortFunc(bs, func(a, b []byte) int { return slices.Compare(a, b) })
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, x := range v.Value {
			l[i] = sortSet(x)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: SortSets(v.Value)}
	}
	return v
}
