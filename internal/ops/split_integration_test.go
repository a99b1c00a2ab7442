package ops_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ops/opstest"
	"github.com/denorm/denorm/internal/rules"
)

// The global post count of rules/social.yaml is split over 4 parts. Verify reads the state
// item and the parts added up; a repair sets the state item to the total less the parts,
// whatever they hold, and copies the sum onto the target.
func TestRepairSplitState(t *testing.T) {
	data := opstest.Correct(1, opstest.Small)
	posts := opstest.Small.Posts
	num := func(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	state := opstest.Item{"pk": str(rules.StatePrefix + "STATS#global"), "sk": str("STATS"), "postCount": num(posts - 3), rules.StateVersionAttr: num(1 + posts)}
	parts := []opstest.Item{
		{"pk": str(rules.StatePartPrefix + "0#STATS#global"), "sk": str("STATS"), "postCount": num(5), rules.StateVersionAttr: num(2)},
		{"pk": str(rules.StatePartPrefix + "3#STATS#global"), "sk": str("STATS"), "postCount": num(-2), rules.StateVersionAttr: num(1)},
	}
	var items []opstest.Item
	for _, it := range data.Items() {
		switch text(it["pk"]) {
		case rules.StatePrefix + "STATS#global":
			it = state
		case "STATS#global":
			it[rules.CopyVersionAttr] = num(1 + posts + 3) // the copy of the sum of all four
		}
		items = append(items, it)
	}
	fx := newFixture(t, append(items, parts...))

	cfg := fx.config(false)
	cfg.Mode = "verify (split state right)"
	requireClean(t, fx.run(cfg))

	// The state item is 3 too high and the target shows that sum: consistent, and wrong.
	ctx := context.Background()
	for _, it := range []opstest.Item{
		{"pk": str(rules.StatePrefix + "STATS#global"), "sk": str("STATS"), "postCount": num(posts), rules.StateVersionAttr: num(1 + posts)},
		{"pk": str("STATS#global"), "sk": str("STATS"), "postCount": num(posts + 3), rules.CopyVersionAttr: num(1 + posts + 3)},
	} {
		if _, err := fx.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(fx.table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Mode = "verify (split state wrong)"
	if got := drift(fx.run(cfg)); got["global-post-count"] != 1 || len(got) != 1 {
		t.Fatalf("drift %v, want global-post-count 1", got)
	}
	cfg = fx.config(true)
	cfg.Mode = "verify --repair"
	rep := fx.run(cfg)
	for _, r := range rep.Rules {
		if r.Rule == "global-post-count" && r.Repaired != 1 {
			t.Errorf("global-post-count: %+v, want 1 repaired", r.RuleStats)
		}
	}
	cfg = fx.config(false)
	cfg.Mode = "verify (repaired)"
	requireClean(t, fx.run(cfg))
	for key, want := range map[string]int{rules.StatePrefix + "STATS#global": posts - 3, "STATS#global": posts} {
		out, err := fx.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(fx.table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": str(key), "sk": str("STATS")}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(out.Item["postCount"]); got != strconv.Itoa(want) {
			t.Errorf("%s postCount = %s, want %d (the parts hold 3 of %d)", key, got, want, posts)
		}
	}
}

// text is a string's or a number's text ("" for anything else).
func text(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	}
	return ""
}
