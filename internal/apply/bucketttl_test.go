package apply

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// A counter update of a bucket item whose rule has a ttl sets the TTL attribute, if the
// item has none, to the end of the bucket plus the ttl; other updates are left alone.
func TestWithBucketTTL(t *testing.T) {
	set, err := rules.ParseSet("t.yaml", []byte(`version: 1
entities:
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt]}
  PostDay: {pk: "POST#{postId}", sk: "DAY#{createdAt:day}", attributes: [comments]}
  PostMonth: {pk: "POST#{postId}", sk: "MONTH#{createdAt:month}", attributes: [comments]}
rules:
  - name: daily
    count: {of: Comment, into: PostDay, attribute: comments, missingTarget: create, ttl: 2d}
  - name: monthly
    count: {of: Comment, into: PostMonth, attribute: comments, missingTarget: create}
`))
	if err != nil {
		t.Fatal(err)
	}
	key := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
	}
	for _, tc := range []struct {
		rule, sk string
		want     string // the ttl value set, "" for none
	}{
		{"daily", "DAY#2026-11-23", "1795651200"}, // 2026-11-26T00:00:00Z: the 24th plus 2 days
		{"monthly", "MONTH#2026-11", ""},
		{"daily", "METADATA", ""}, // not a bucket of the rule
	} {
		attrs := []plan.AttrAmount{{Attribute: "comments", Rule: set.Rule(tc.rule), Amount: value.Int(1), Create: true}}
		ub := expression.Add(expression.Name("comments"), num("1"))
		ub = withBucketTTL(ub, set.Table, key("POST#p1", tc.sk), attrs)
		e, err := expression.NewBuilder().WithUpdate(ub).Build()
		if err != nil {
			t.Fatal(err)
		}
		upd := *e.Update()
		gotTTL := ""
		for _, v := range e.Values() {
			if n, ok := v.(*types.AttributeValueMemberN); ok && n.Value != "1" {
				gotTTL = n.Value
			}
		}
		hasTTL := false
		for _, n := range e.Names() {
			hasTTL = hasTTL || n == "ttl"
		}
		if gotTTL != tc.want || hasTTL != (tc.want != "") || (tc.want != "" && !strings.Contains(upd, "if_not_exists")) {
			t.Errorf("%s %s: update %q names %v values %v; want ttl %q set if not exists", tc.rule, tc.sk, upd, e.Names(), e.Values(), tc.want)
		}
	}
}
