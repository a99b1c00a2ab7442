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
// attribute and a removal of each rule's source plan without ErrUnknownKind. A variable
// that some entity buckets by time ({createdAt:day}) gets a timestamp, so the rules into
// bucket items plan effects instead of leaving them unlinked.
func TestEveryKindPlans(t *testing.T) {
	social := socialSet(t)
	if len(timeVars(social)) == 0 {
		t.Error("rules/social.yaml has no time bucket: add one, so the planner is tested with bucket targets")
	}
	seen := map[rules.Kind]bool{}
	for _, set := range []*rules.Set{social, extremeSet(t)} {
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

// timeVars are the key variables some entity of set buckets by time.
func timeVars(set *rules.Set) map[string]bool {
	out := map[string]bool{}
	for _, e := range set.Entities {
		for _, k := range e.Keys {
			for _, p := range k.T.Parts() {
				if p.Bucket != 0 {
					out[p.Var] = true
				}
			}
		}
	}
	return out
}

func everyChangePlans(t *testing.T, set *rules.Set) {
	p := plan.New(set)
	times := timeVars(set)
	for _, e := range set.Entities {
		item := record.Item{}
		vars := map[string]string{}
		for _, k := range e.Keys {
			for _, v := range k.T.Vars() {
				vars[v] = "x1"
				if times[v] {
					vars[v] = "2025-01-02T10:00:00Z"
				}
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
			res, err := p.Plan(&c)
			if errors.Is(err, plan.ErrUnknownKind) {
				t.Errorf("%s, change %d: %v", e.Name, i, err)
			}
			if err == nil && res.Unlinked > 0 {
				t.Errorf("%s, change %d: %d unlinked effects: a key variable got no usable value", e.Name, i, res.Unlinked)
			}
		}
	}
}
