package plan_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// Every rule kind goes through the planner: the social example and the max/min example
// (internal/rules/testdata/valid/extremes.yaml) hold at least one rule of each kind (a kind
// added to rules.Kinds must be added to one of them), and an insert, a change of every
// attribute and a removal of each rule's source plan without ErrUnknownKind.
func TestEveryKindPlans(t *testing.T) {
	seen := map[rules.Kind]bool{}
	for _, set := range []*rules.Set{socialSet(t), extremeSet(t)} {
		for _, e := range set.Entities {
			for _, c := range set.RulesFrom(e) {
				seen[c.Kind] = true
			}
		}
		everyChangePlans(t, set)
	}
	for _, k := range rules.Kinds {
		if !seen[k] {
			t.Errorf("neither rules/social.yaml nor the extremes example has a %s rule: add one, so the planner is tested with every kind", k)
		}
	}
}

func everyChangePlans(t *testing.T, set *rules.Set) {
	p := plan.New(set)
	for _, e := range set.Entities {
		item := record.Item{}
		vars := map[string]string{}
		for _, k := range e.Keys {
			for _, v := range k.T.Vars() {
				vars[v] = "x1"
			}
		}
		for _, k := range e.Keys {
			s, err := k.T.Render(func(v string) (string, bool) { return vars[v], true })
			if err != nil {
				t.Fatal(err)
			}
			item[k.Attr] = &types.AttributeValueMemberS{Value: s}
		}
		if e.TypeAttr != "" {
			item[e.TypeAttr] = &types.AttributeValueMemberS{Value: e.TypeEquals}
		}
		changed := record.Item{}
		for k, v := range item {
			changed[k] = v
		}
		for _, a := range e.Attributes {
			item[a] = &types.AttributeValueMemberN{Value: "1"}
			changed[a] = &types.AttributeValueMemberN{Value: "2"}
		}
		keys := record.Item{"pk": item["pk"], "sk": item["sk"]}
		for i, c := range []record.Change{
			{Op: record.Insert, New: item},
			{Op: record.Modify, Old: item, New: changed},
			{Op: record.Remove, Old: changed},
		} {
			c.EventID, c.Seq, c.Keys = "ev", "100", keys
			if _, err := p.Plan(&c); errors.Is(err, plan.ErrUnknownKind) {
				t.Errorf("%s, change %d: %v", e.Name, i, err)
			}
		}
	}
}
