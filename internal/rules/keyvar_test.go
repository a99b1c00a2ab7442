package rules

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
)

func TestSourceValueOfAKeyVariable(t *testing.T) {
	for src, want := range map[string]bool{"{readingId}": true, "readingId": false, "{}": false, "{a:4}": false, "{a}{b}": false} {
		if _, got := KeyVar(src); got != want {
			t.Errorf("KeyVar(%q) = %v, want %v", src, got, want)
		}
	}
	f, err := Parse("t.yaml", []byte(`version: 1
entities:
  Device:  {pk: "DEVICE#{deviceId}", sk: METADATA, attributes: [last]}
  Reading: {pk: "DEVICE#{deviceId}", sk: "READING#{readingId}", attributes: [at, temp]}
rules:
  - {name: last, latest: {of: Reading, into: Device, by: at, set: {last: "{readingId}"}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	r := set.Rule("last")
	item := record.Item{"pk": &types.AttributeValueMemberS{Value: "DEVICE#d1"}, "sk": &types.AttributeValueMemberS{Value: "READING#r7"},
		"at": &types.AttributeValueMemberS{Value: "2026"}}
	v, ok := r.SourceValue(item, "{readingId}")
	if s, _ := v.(*types.AttributeValueMemberS); !ok || s == nil || s.Value != "r7" {
		t.Errorf("SourceValue = %v, %v; want r7", v, ok)
	}
	if _, ok := r.SourceValue(item, "temp"); ok {
		t.Error("an absent attribute has a value")
	}
	if got := r.SetAttributes(); len(got) != 0 {
		t.Errorf("SetAttributes = %v: a key variable is not an attribute to watch", got)
	}
}
