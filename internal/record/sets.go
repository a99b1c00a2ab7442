package record

import (
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SortSets returns item with the members of every set, at any depth, in one order: DynamoDB
// keeps none, so two reads of one item can list them differently. Two items are the same
// item when their SortSets are deeply equal.
func SortSets(item Item) Item { return MapValues(item, sortSet) }

// MapValues returns item with f applied to each of its values that is not a map or a list,
// at any depth (the maps and lists are copied; item is not changed). A nil item stays nil.
func MapValues(item Item, f func(types.AttributeValue) types.AttributeValue) Item {
	if item == nil {
		return nil
	}
	out := make(Item, len(item))
	for k, v := range item {
		out[k] = mapValue(v, f)
	}
	return out
}

func mapValue(v types.AttributeValue, f func(types.AttributeValue) types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, x := range v.Value {
			l[i] = mapValue(x, f)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: MapValues(v.Value, f)}
	}
	return f(v)
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
	}
	return v
}
