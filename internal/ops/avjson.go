package ops

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
)

// The checkpoint and the --json report hold attribute values in DynamoDB JSON
// ({"S": "x"}, {"N": "1"}, {"M": {...}}): it is what the AWS CLI prints, and it keeps a
// number's exact digits and the difference between a string and a number.

// avValue is the JSON form of an attribute value; nil is JSON null (absent).
func avValue(v types.AttributeValue) any {
	switch x := v.(type) {
	case nil:
		return nil
	case *types.AttributeValueMemberS:
		return map[string]any{"S": x.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": x.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": x.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": x.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": x.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": x.Value}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": x.Value}
	case *types.AttributeValueMemberL:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = avValue(e)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": itemValue(x.Value)}
	}
	return nil
}

func itemValue(item record.Item) map[string]any {
	if item == nil {
		return nil
	}
	m := make(map[string]any, len(item))
	for k, v := range item {
		m[k] = avValue(v)
	}
	return m
}

// avJSON is one attribute value in DynamoDB JSON (nil: absent, JSON null).
type avJSON struct{ v types.AttributeValue }

func (a avJSON) MarshalJSON() ([]byte, error) { return json.Marshal(avValue(a.v)) }

func (a *avJSON) UnmarshalJSON(b []byte) error {
	v, err := parseAV(b)
	a.v = v
	return err
}

// itemJSON is an item in DynamoDB JSON.
type itemJSON record.Item

func (it itemJSON) MarshalJSON() ([]byte, error) { return json.Marshal(itemValue(record.Item(it))) }

func (it *itemJSON) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*it = nil
		return nil
	}
	out := make(itemJSON, len(raw))
	for k, r := range raw {
		v, err := parseAV(r)
		if err != nil {
			return fmt.Errorf("attribute %s: %w", k, err)
		}
		out[k] = v
	}
	*it = out
	return nil
}

// parseAV reads one DynamoDB JSON value; null is absent (nil).
func parseAV(b []byte) (types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("attribute value: %w", err)
	}
	if m == nil {
		return nil, nil
	}
	if len(m) != 1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("attribute value has %d type keys %v, want 1", len(m), keys)
	}
	for t, r := range m {
		switch t {
		case "S":
			var s string
			err := json.Unmarshal(r, &s)
			return &types.AttributeValueMemberS{Value: s}, err
		case "N":
			var s string
			err := json.Unmarshal(r, &s)
			return &types.AttributeValueMemberN{Value: s}, err
		case "B":
			var b []byte
			err := json.Unmarshal(r, &b)
			return &types.AttributeValueMemberB{Value: b}, err
		case "BOOL":
			var v bool
			err := json.Unmarshal(r, &v)
			return &types.AttributeValueMemberBOOL{Value: v}, err
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "SS":
			var v []string
			err := json.Unmarshal(r, &v)
			return &types.AttributeValueMemberSS{Value: v}, err
		case "NS":
			var v []string
			err := json.Unmarshal(r, &v)
			return &types.AttributeValueMemberNS{Value: v}, err
		case "BS":
			var v [][]byte
			err := json.Unmarshal(r, &v)
			return &types.AttributeValueMemberBS{Value: v}, err
		case "L":
			var raws []json.RawMessage
			if err := json.Unmarshal(r, &raws); err != nil {
				return nil, err
			}
			l := make([]types.AttributeValue, len(raws))
			for i, e := range raws {
				v, err := parseAV(e)
				if err != nil {
					return nil, err
				}
				l[i] = v
			}
			return &types.AttributeValueMemberL{Value: l}, nil
		case "M":
			var it itemJSON
			if err := json.Unmarshal(r, &it); err != nil {
				return nil, err
			}
			if it == nil {
				it = itemJSON{}
			}
			return &types.AttributeValueMemberM{Value: record.Item(it)}, nil
		default:
			return nil, fmt.Errorf("unknown attribute value type %q", t)
		}
	}
	return nil, nil
}
