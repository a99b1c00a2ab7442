package value

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/rules"
)

// Where reports whether item passes a's where (rules/where.go): every test of its
// attributes and, with an any, all the tests of one of its alternatives. It runs for every
// source image the planner sees, so it builds no message (Failing does).
func Where(a *rules.Aggregate, item map[string]types.AttributeValue) bool {
	if !passesAll(a.Where, a.WhereOrder, item) {
		return false
	}
	for _, alt := range a.WhereAny {
		if passesAll(alt.Tests, alt.Order, item) {
			return true
		}
	}
	return len(a.WhereAny) == 0
}

func passesAll(tests map[string][]rules.Test, order []string, item map[string]types.AttributeValue) bool {
	for _, attr := range order {
		for _, t := range tests[attr] {
			if !Passes(t, item[attr]) {
				return false
			}
		}
	}
	return true
}

// Failing describes the first test of a's where that item fails, as `denorm explain`
// prints it (`temp 70 fails gt: 80`), or, when it passes those, why each alternative of its
// any fails (`none of any passes: priority 1 fails gte: 3; pinned absent fails eq: true`);
// "" when it passes.
func Failing(a *rules.Aggregate, item map[string]types.AttributeValue) string {
	if f := failing(a.Where, a.WhereOrder, item); f != "" {
		return f
	}
	if len(a.WhereAny) == 0 {
		return ""
	}
	why := make([]string, 0, len(a.WhereAny))
	for _, alt := range a.WhereAny {
		f := failing(alt.Tests, alt.Order, item)
		if f == "" {
			return ""
		}
		why = append(why, f)
	}
	return "none of any passes: " + strings.Join(why, "; ")
}

// failing describes the first of the tests (attribute -> tests, in order) that item fails;
// "" when it passes them all.
func failing(tests map[string][]rules.Test, order []string, item map[string]types.AttributeValue) string {
	for _, attr := range order {
		for _, t := range tests[attr] {
			if v := item[attr]; !Passes(t, v) {
				found := "absent"
				if v != nil {
					found = Brief(v)
				}
				return fmt.Sprintf("%s %s fails %s", attr, found, t)
			}
		}
	}
	return ""
}

// Passes reports whether v (nil: absent) passes t. A value of another type than the
// test's fails eq, in and the order tests, and passes ne and notIn.
func Passes(t rules.Test, v types.AttributeValue) bool {
	switch t.Op {
	case rules.OpExists:
		return (v != nil) == t.Exists
	case rules.OpEq:
		return matches(v, t.Values[0])
	case rules.OpNe:
		return !matches(v, t.Values[0])
	case rules.OpIn, rules.OpNotIn:
		in := false
		for _, o := range t.Values {
			in = in || matches(v, o)
		}
		return in == (t.Op == rules.OpIn)
	}
	c, ok := compareOperand(v, t.Values[0])
	if !ok {
		return false
	}
	switch t.Op {
	case rules.OpLt:
		return c < 0
	case rules.OpLte:
		return c <= 0
	case rules.OpGt:
		return c > 0
	case rules.OpGte:
		return c >= 0
	}
	return false
}

// matches reports whether v is the operand's value: same type, numbers by value.
func matches(v types.AttributeValue, o rules.Operand) bool {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return o.Kind == rules.StringOperand && x.Value == o.Text
	case *types.AttributeValueMemberN:
		return o.Kind == rules.NumberOperand && SameNumber(x.Value, o.Text)
	case *types.AttributeValueMemberBOOL:
		return o.Kind == rules.BoolOperand && x.Value == o.Bool
	}
	return false
}

// compareOperand orders v against a number or string operand of its own type: false when
// v is absent, of another type, or not a number.
func compareOperand(v types.AttributeValue, o rules.Operand) (int, bool) {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		if o.Kind == rules.StringOperand {
			return strings.Compare(x.Value, o.Text), true
		}
	case *types.AttributeValueMemberN:
		if o.Kind != rules.NumberOperand {
			return 0, false
		}
		a, errA := ParseNumber(x.Value)
		b, errB := ParseNumber(o.Text)
		if errA == nil && errB == nil {
			return a.Cmp(b), true
		}
	}
	return 0, false
}
