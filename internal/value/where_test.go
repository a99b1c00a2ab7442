package value

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/rules"
)

func TestPasses(t *testing.T) {
	str := func(v string) rules.Operand { return rules.Operand{Kind: rules.StringOperand, Text: v} }
	num := func(v string) rules.Operand { return rules.Operand{Kind: rules.NumberOperand, Text: v} }
	boolean := rules.Operand{Kind: rules.BoolOperand, Bool: true}
	test := func(op rules.Op, vs ...rules.Operand) rules.Test { return rules.Test{Op: op, Values: vs} }
	yes := &types.AttributeValueMemberBOOL{Value: true}
	for _, tc := range []struct {
		test rules.Test
		v    types.AttributeValue
		want bool
	}{
		{test(rules.OpEq, str("ok")), s("ok"), true},
		{test(rules.OpEq, str("1")), n("1"), false}, // a string is not a number
		{test(rules.OpEq, num("1")), n("1.0"), true},
		{test(rules.OpEq, boolean), yes, true},
		{test(rules.OpEq, str("ok")), nil, false},
		{test(rules.OpNe, str("faulty")), s("ok"), true},
		{test(rules.OpNe, str("faulty")), s("faulty"), false},
		{test(rules.OpNe, str("faulty")), nil, true}, // absent is not faulty
		{test(rules.OpNe, num("1")), s("1"), true},
		{test(rules.OpGt, num("80")), n("80.000001"), true},
		{test(rules.OpGt, num("80")), n("80"), false},
		{test(rules.OpGte, num("80")), n("8e1"), true},
		{test(rules.OpLt, num("0.3")), n("0.29999999999999999999999"), true}, // exact, not float64
		{test(rules.OpLte, num("-1")), n("-1"), true},
		{test(rules.OpGt, num("80")), s("90"), false}, // another type fails an order test
		{test(rules.OpGt, num("80")), nil, false},
		{test(rules.OpLt, str("2026-02")), s("2026-01-31"), true},
		{test(rules.OpGte, str("b")), s("a"), false},
		{test(rules.OpIn, str("ok"), str("calibrated")), s("calibrated"), true},
		{test(rules.OpIn, str("ok"), num("1")), n("1"), true},
		{test(rules.OpIn, str("ok")), nil, false},
		{test(rules.OpNotIn, str("faulty"), str("retired")), s("ok"), true},
		{test(rules.OpNotIn, str("faulty"), str("retired")), s("retired"), false},
		{test(rules.OpNotIn, str("faulty")), nil, true},
		{rules.Test{Op: rules.OpExists, Exists: true}, &types.AttributeValueMemberNULL{Value: true}, true},
		{rules.Test{Op: rules.OpExists, Exists: true}, nil, false},
		{rules.Test{Op: rules.OpExists, Exists: false}, nil, true},
		{rules.Test{Op: rules.OpExists, Exists: false}, s(""), false},
	} {
		if got := Passes(tc.test, tc.v); got != tc.want {
			t.Errorf("%s on %s: %v, want %v", tc.test, Brief(tc.v), got, tc.want)
		}
	}
}

func TestFailing(t *testing.T) {
	a := &rules.Aggregate{WhereOrder: []string{"status", "temp"}, Where: map[string][]rules.Test{
		"status": {{Op: rules.OpNe, Values: []rules.Operand{{Kind: rules.StringOperand, Text: "faulty"}}}},
		"temp": {{Op: rules.OpGte, Values: []rules.Operand{{Kind: rules.NumberOperand, Text: "10"}}},
			{Op: rules.OpLt, Values: []rules.Operand{{Kind: rules.NumberOperand, Text: "20"}}}},
	}}
	for _, tc := range []struct {
		item map[string]types.AttributeValue
		want string
	}{
		{map[string]types.AttributeValue{"temp": n("15")}, ""},
		{map[string]types.AttributeValue{"temp": n("25"), "status": s("ok")}, `temp 25 fails lt: 20`},
		{map[string]types.AttributeValue{"temp": n("15"), "status": s("faulty")}, `status "faulty" fails ne: "faulty"`},
		{map[string]types.AttributeValue{}, `temp absent fails gte: 10`},
	} {
		if got := Failing(a, tc.item); got != tc.want {
			t.Errorf("Failing(%v) = %q, want %q", tc.item, got, tc.want)
		}
		if Where(a, tc.item) != (tc.want == "") {
			t.Errorf("Where(%v) disagrees with Failing", tc.item)
		}
	}
}

// A where with an any passes when its attributes' tests pass and all the tests of one
// alternative do; Failing says why every alternative failed.
func TestWhereAny(t *testing.T) {
	num := func(v string) []rules.Operand { return []rules.Operand{{Kind: rules.NumberOperand, Text: v}} }
	a := &rules.Aggregate{WhereOrder: []string{"status"}, Where: map[string][]rules.Test{
		"status": {{Op: rules.OpEq, Values: []rules.Operand{{Kind: rules.StringOperand, Text: "open"}}}},
	}, WhereAny: []rules.WhereAlt{
		{Order: []string{"priority"}, Tests: map[string][]rules.Test{"priority": {{Op: rules.OpGte, Values: num("3")}}}},
		{Order: []string{"pinned", "priority"}, Tests: map[string][]rules.Test{
			"pinned":   {{Op: rules.OpEq, Values: []rules.Operand{{Kind: rules.BoolOperand, Bool: true}}}},
			"priority": {{Op: rules.OpGte, Values: num("1")}},
		}},
	}}
	b := func(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }
	for _, tc := range []struct {
		item map[string]types.AttributeValue
		want string
	}{
		{map[string]types.AttributeValue{"status": s("open"), "priority": n("3")}, ""},                    // the first
		{map[string]types.AttributeValue{"status": s("open"), "priority": n("1"), "pinned": b(true)}, ""}, // the second
		{map[string]types.AttributeValue{"status": s("closed"), "priority": n("5")}, `status "closed" fails eq: "open"`},
		{map[string]types.AttributeValue{"status": s("open"), "priority": n("2.5")}, `none of any passes: priority 2.5 fails gte: 3; pinned absent fails eq: true`},
		{map[string]types.AttributeValue{"status": s("open"), "priority": n("0"), "pinned": b(true)}, `none of any passes: priority 0 fails gte: 3; priority 0 fails gte: 1`},
	} {
		if got := Failing(a, tc.item); got != tc.want {
			t.Errorf("Failing(%v) = %q, want %q", tc.item, got, tc.want)
		}
		if Where(a, tc.item) != (tc.want == "") {
			t.Errorf("Where(%v) disagrees with Failing", tc.item)
		}
	}
	if got := a.WhereAttributes(); !slices.Equal(got, []string{"status", "priority", "pinned"}) {
		t.Errorf("WhereAttributes = %v, want status, priority, pinned (watched and projected)", got)
	}
}
