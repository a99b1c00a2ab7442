package ops_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ops/opstest"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
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
		switch it["pk"].(*types.AttributeValueMemberS).Value {
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
	fx.checkGlobalPostCount(posts-3, posts) // the parts hold 3
}

// The split of the global post count lowered from 4 to 2 after the processor wrote all
// four parts: parts 2 and 3 are no longer read, so the state's values and version drop
// below what the target shows. A repair sets the state item to the total less parts 0 and
// 1, and copies over the target's copy version, which is now above the state's; pass 0
// adds up only the parts getState reads, so the target is not taken for moved.
func TestRepairAfterSplitLowered(t *testing.T) {
	data := opstest.Correct(1, opstest.Small)
	posts := opstest.Small.Posts
	num := func(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	part := func(i, count, version int) opstest.Item {
		return opstest.Item{"pk": str(rules.StatePartPrefix + strconv.Itoa(i) + "#STATS#global"), "sk": str("STATS"),
			"postCount": num(count), rules.StateVersionAttr: num(version)}
	}
	// Under split 4: the state item 140, parts 4 + 3 + 2 + 1: 150 in all, version 1+150+10.
	var items []opstest.Item
	for _, it := range data.Items() {
		switch it["pk"].(*types.AttributeValueMemberS).Value {
		case rules.StatePrefix + "STATS#global":
			it["postCount"] = num(posts - 10)
		case "STATS#global":
			// The last copy before the split was lowered; two posts were counted since, and
			// their copies refused (the state's version dropped below this one).
			it["postCount"], it[rules.CopyVersionAttr] = num(posts-2), num(1+posts+10)
		}
		items = append(items, it)
	}
	items = append(items, part(0, 4, 1), part(1, 3, 2), part(2, 2, 3), part(3, 1, 4))
	raw, err := os.ReadFile("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lowered := strings.Replace(string(raw), "attribute: postCount, split: 4}", "attribute: postCount, split: 2}", 1)
	if lowered == string(raw) {
		t.Fatal("rules/social.yaml: global-post-count is not split: 4")
	}
	path := filepath.Join(t.TempDir(), "social.yaml")
	if err := os.WriteFile(path, []byte(lowered), 0o644); err != nil {
		t.Fatal(err)
	}
	fx := newFixtureOf(t, path, items)

	cfg := fx.config(true)
	cfg.Mode = "verify --repair (split lowered to 2)"
	rep := fx.run(cfg)
	for _, r := range rep.Rules {
		if r.Rule == "global-post-count" && (r.Repaired != 1 || r.Conflicts != 0) {
			t.Errorf("global-post-count: %+v, want 1 repaired", r.RuleStats)
		}
	}
	cfg = fx.config(false)
	cfg.Mode = "verify (repaired)"
	requireClean(t, fx.run(cfg))
	fx.checkGlobalPostCount(posts-7, posts) // parts 0 and 1 hold 7
}

// checkGlobalPostCount reads the postCount of STATS#global's state item and of the target.
func (fx *fixture) checkGlobalPostCount(state, target int) {
	fx.t.Helper()
	for key, want := range map[string]int{rules.StatePrefix + "STATS#global": state, "STATS#global": target} {
		out, err := fx.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(fx.table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}, "sk": &types.AttributeValueMemberS{Value: "STATS"}}})
		if err != nil {
			fx.t.Fatal(err)
		}
		if got := value.NumberOf(out.Item["postCount"]).String(); got != strconv.Itoa(want) {
			fx.t.Errorf("%s postCount = %s, want %d", key, got, want)
		}
	}
}
