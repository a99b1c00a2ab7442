package counter_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
)

func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func TestStateKey(t *testing.T) {
	k := counter.StateKey(plan.Key{PK: "POST#p1", SK: "METADATA"})
	if k != (plan.Key{PK: "_dn#s#POST#p1", SK: "METADATA"}) {
		t.Fatalf("state key %v", k)
	}
	back, ok := counter.TargetOf(k)
	if !ok || back != (plan.Key{PK: "POST#p1", SK: "METADATA"}) {
		t.Fatalf("TargetOf %v %v", back, ok)
	}
	if _, ok := counter.TargetOf(plan.Key{PK: "POST#p1"}); ok {
		t.Fatal("an application key taken for a state item's")
	}
}

// Whether a target as seen shows the state: absent and zero are the same; anything else
// must be the same number.
func TestDiffers(t *testing.T) {
	state := record.Item{"commentCount": n("3"), "totalBytes": n("0"), rules.StateVersionAttr: n("9")}
	attrs := []string{"commentCount", "totalBytes", "likes"}
	for _, tc := range []struct {
		name string
		seen record.Item
		want bool
	}{
		{"same values", record.Item{"commentCount": n("3"), "totalBytes": n("0")}, false},
		{"zero absent", record.Item{"commentCount": n("3")}, false},
		{"same number written otherwise", record.Item{"commentCount": n("3.0")}, false},
		{"lower", record.Item{"commentCount": n("2")}, true},
		{"missing", record.Item{}, true},
		{"not a number", record.Item{"commentCount": &types.AttributeValueMemberS{Value: "3"}}, true},
		{"an attribute the state lacks written", record.Item{"commentCount": n("3"), "likes": n("1")}, true},
	} {
		if got := counter.Differs(state, tc.seen, attrs); got != tc.want {
			t.Errorf("%s: Differs %v, want %v", tc.name, got, tc.want)
		}
	}
	if counter.Differs(nil, record.Item{"commentCount": n("0")}, attrs) {
		t.Error("no state and a zero: differs")
	}
	if !counter.Differs(nil, record.Item{"commentCount": n("2")}, attrs) {
		t.Error("no state and a count: same")
	}
}

// The copy holds every attribute asked for, zero where the state has none, and the state's
// version; the state's values are every attribute but keys, TTL and Denorm's.
func TestCopy(t *testing.T) {
	spec := table.Spec{PartitionKey: "pk", SortKey: "sk", TTLAttribute: "ttl"}
	state := record.Item{"pk": &types.AttributeValueMemberS{Value: "_dn#s#POST#p1"}, "sk": &types.AttributeValueMemberS{Value: "METADATA"},
		"ttl": n("1"), rules.WatermarkAttr: n("500"), rules.StateVersionAttr: n("4"), "commentCount": n("2")}
	if v := counter.Values(spec, state); len(v) != 1 || v[0] != "commentCount" {
		t.Fatalf("Values %v", v)
	}
	got := counter.Copy(state, []string{"commentCount", "likes"})
	want := []plan.AttrValue{{Name: "commentCount", Value: n("2")}, {Name: "likes", Value: n("0")}, {Name: rules.CopyVersionAttr, Value: n("4")}}
	if len(got) != len(want) {
		t.Fatalf("Copy %v", got)
	}
	for i := range want {
		if got[i].Name != want[i].Name || !value.Equal(got[i].Value, want[i].Value) {
			t.Errorf("Copy[%d] = %s %v, want %s %v", i, got[i].Name, got[i].Value, want[i].Name, want[i].Value)
		}
	}
	if v := counter.Copy(nil, nil); len(v) != 1 || !value.Equal(v[0].Value, n("0")) {
		t.Errorf("copy of no state %v, want version 0", v)
	}
}

// The copy's condition never lets an older version overwrite a newer one, and requires the
// target unless a rule creates it.
func TestCopyWrite(t *testing.T) {
	copy := []plan.AttrValue{{Name: "commentCount", Value: n("2")}, {Name: rules.CopyVersionAttr, Value: n("4")}}
	placeholder := regexp.MustCompile(`:\d+`)
	for _, tc := range []struct {
		create bool
		want   string
	}{
		{false, "(attribute_exists (pk)) AND ((attribute_not_exists (_dn_cv)) OR (_dn_cv <= :v))"},
		{true, "(attribute_not_exists (_dn_cv)) OR (_dn_cv <= :v)"},
	} {
		ub, cond := counter.CopyWrite("pk", copy, tc.create)
		e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
		if err != nil {
			t.Fatal(err)
		}
		c := *e.Condition()
		for name, v := range e.Names() {
			c = strings.ReplaceAll(c, name, v)
		}
		if c = placeholder.ReplaceAllString(c, ":v"); c != tc.want {
			t.Errorf("create %v: condition %s, want %s", tc.create, c, tc.want)
		}
		upd := *e.Update()
		for name, v := range e.Names() {
			upd = strings.ReplaceAll(upd, name, v)
		}
		if upd = placeholder.ReplaceAllString(upd, ":v"); upd != "SET commentCount = :v, _dn_cv = :v\n" && upd != "SET commentCount = :v, _dn_cv = :v" {
			t.Errorf("update %q", upd)
		}
	}
}

// A copy version above the state's is the application's (an item copied whole from
// another target); one at or below it, or none, is not.
func TestForeign(t *testing.T) {
	state := record.Item{rules.StateVersionAttr: n("5")}
	for _, tc := range []struct {
		seen record.Item
		want bool
	}{
		{record.Item{}, false},
		{record.Item{rules.CopyVersionAttr: n("5")}, false},
		{record.Item{rules.CopyVersionAttr: n("3")}, false},
		{record.Item{rules.CopyVersionAttr: n("6")}, true},
		{record.Item{rules.CopyVersionAttr: &types.AttributeValueMemberS{Value: "1"}}, true},
	} {
		if got := counter.Foreign(state, tc.seen) != nil; got != tc.want {
			t.Errorf("seen %v: foreign %v, want %v", tc.seen, got, tc.want)
		}
	}
	if counter.Foreign(nil, record.Item{rules.CopyVersionAttr: n("1")}) == nil {
		t.Error("a version on a target without state: not foreign")
	}
}

// The attributes a copy writes are those asked for, then the state's others, each once.
func TestValuesAlso(t *testing.T) {
	spec := table.Spec{PartitionKey: "pk", SortKey: "sk"}
	state := record.Item{"pk": n("1"), rules.StateVersionAttr: n("2"), "commentCount": n("3")}
	got := counter.Values(spec, state, "likes", "commentCount")
	if len(got) != 2 || got[0] != "likes" || got[1] != "commentCount" {
		t.Errorf("Values = %v, want [likes commentCount]", got)
	}
}
