package record

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestDynamoJSONRoundTrip(t *testing.T) {
	item := Item{
		"pk":   &types.AttributeValueMemberS{Value: "USER#1"},
		"n":    &types.AttributeValueMemberN{Value: "1.50"},
		"ok":   &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1}},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberN{Value: "-3"}}},
		}},
	}
	b, err := MarshalItem(item)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"b":{"B":"AAE="},"l":`) || !strings.Contains(string(b), `"n":{"N":"1.50"}`) {
		t.Errorf("not sorted DynamoDB JSON keeping the digits: %s", b)
	}
	back, err := UnmarshalItem(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := MarshalItem(back)
	if string(again) != string(b) {
		t.Errorf("round trip:\n%s\n%s", b, again)
	}
	for _, null := range []string{"null", " null "} {
		if v, err := UnmarshalValue([]byte(null)); v != nil || err != nil {
			t.Errorf("%q: %v %v", null, v, err)
		}
		if it, err := UnmarshalItem([]byte(null)); it != nil || err != nil {
			t.Errorf("%q: %v %v", null, it, err)
		}
	}
	if b, _ := MarshalValue(nil); string(b) != "null" {
		t.Errorf("nil value: %s", b)
	}
	for in, want := range map[string]string{
		`{"N":"x"}`:         "not a number",
		`{"S":"a","N":"1"}`: "",
		`{"Q":"a"}`:         "",
		`{"S":"a"} x`:       "unexpected data",
	} {
		if _, err := UnmarshalValue([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", in, err, want)
		}
	}
}
