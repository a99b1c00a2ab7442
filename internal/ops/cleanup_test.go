package ops_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/ops/opstest"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/rulesdiff"
)

// withoutRules writes rules/social.yaml without the named rules to a temporary file.
func withoutRules(t *testing.T, names ...string) string {
	t.Helper()
	data, err := os.ReadFile("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []string
	skip := false
	for _, l := range lines {
		if strings.HasPrefix(l, "  - name: ") {
			skip = false
			for _, n := range names {
				if strings.TrimPrefix(l, "  - name: ") == n {
					skip = true
				}
			}
		}
		if !skip {
			out = append(out, l)
		}
	}
	path := filepath.Join(t.TempDir(), "new.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCleanup removes what comment-author and post-comment-count left after the rules
// lost them: the copied names and versions on comments, the counters and copy versions on
// posts, the counter in the posts' state items (a post's and a missing post's), the copy's
// registry and job items. A dry run writes nothing; a second run finds nothing; the new
// rules' attributes and state stay.
func TestCleanup(t *testing.T) {
	s, n := sAV, nAV
	c1 := commentItem("p1", "c1", "u1")
	c1["userName"], c1["userAvatar"], c1["_dnv_comment-author"] = s("User u1"), s("a.png"), n(7)
	c2 := commentItem("p1", "c2", "u2")
	c2["userName"], c2["_dnv_comment-author"] = s("User u2"), n(8)
	c3 := commentItem("p2", "c3", "u1") // written after the rule was gone: nothing to remove
	p1 := postItem("p1", "u1", true)
	p1["commentCount"] = n(2)
	u1 := userItem("u1")
	u1["commentCount"], u1["postCount"] = n(2), n(1) // user-comment-count stays
	items := []opstest.Item{userItem("u2"), u1, p1, postItem("p2", "u1", false), c1, c2, c3,
		opstest.StateOf(p1, 3, []string{"commentCount"}, rules.WatermarkAttr, n(900)),
		opstest.StateOf(u1, 5, []string{"commentCount", "postCount"}, rules.RelayWatermarkAttr, n(960)),
		// The state of a post that does not exist (deleted, or not written yet).
		{"pk": s(rules.StatePrefix + "POST#p9"), "sk": s("METADATA"), "commentCount": n(3), rules.WatermarkAttr: n(950), rules.StateVersionAttr: n(4)},
		// A part of p1's state, left by a split.
		{"pk": s(rules.StatePartPrefix + "2#POST#p1"), "sk": s("METADATA"), "commentCount": n(1), rules.StateVersionAttr: n(1)},
		{"pk": s("_dn#ver#comment-author#USER#u1#PROFILE"), "sk": s("_dn#ver#"), "v": n(7)},
		{"pk": s("_dn#job#comment-author#USER#u1#PROFILE"), "sk": s("_dn#job#"), "v": n(7)},
		{"pk": s("_dn#ver#membership-group-name#GROUP#g1#METADATA"), "sk": s("_dn#ver#"), "v": n(3)},
	}
	fx := newFixture(t, items)
	ctx := context.Background()
	oldF, err := rules.Load("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	newF, err := rules.Load(withoutRules(t, "comment-author", "post-comment-count"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := rulesdiff.Compare(oldF, newF)
	if err != nil {
		t.Fatal(err)
	}
	oldSet, _ := rules.Compile(oldF)
	newSet, _ := rules.Compile(newF)
	cfg := ops.CleanupConfig{API: fx.db, Table: fx.table, Old: oldSet, New: newSet, Cleanups: d.Cleanups(), Segments: 2, Examples: 5}

	run := func(dry bool) *ops.CleanupReport {
		t.Helper()
		cfg.DryRun = dry
		rep, err := ops.Cleanup(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_ = rep.WriteText(&b)
		t.Logf("%s", b.String())
		return rep
	}
	stats := func(rep *ops.CleanupReport) map[string]ops.CleanupStats {
		m := map[string]ops.CleanupStats{}
		for _, st := range rep.Rules {
			c := *st
			c.Examples = nil
			m[st.Rule] = c
		}
		return m
	}
	// post-comment-count: p1 (commentCount, _dn_cv), the state items of p1 and p9 and the
	// state part of p1 (commentCount).
	want := map[string]ops.CleanupStats{
		"comment-author":     {Rule: "comment-author", Entity: "Comment", Items: 2, Cleaned: 2, Attributes: 5, Deleted: 2},
		"post-comment-count": {Rule: "post-comment-count", Entity: "Post", Items: 4, Cleaned: 4, Attributes: 5},
	}
	before, _ := opstest.Scan(ctx, fx.db, fx.table)
	dry := run(true)
	if got := stats(dry); !equalStats(got, want) || dry.Writes != 0 || dry.Left != 8 {
		t.Errorf("dry run: %+v, %d writes, %d left; want %+v, no writes, 8 left (6 items, 2 reserved items)", got, dry.Writes, dry.Left, want)
	}
	if after, _ := opstest.Scan(ctx, fx.db, fx.table); len(after) != len(before) {
		t.Errorf("the dry run changed the table")
	}
	rep := run(false)
	if got := stats(rep); !equalStats(got, want) || rep.Left != 0 {
		t.Errorf("cleanup: %+v, %d left; want %+v", got, rep.Left, want)
	}
	got, err := opstest.Scan(ctx, fx.db, fx.table)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range got {
		pk, sk := it["pk"].(*types.AttributeValueMemberS).Value, it["sk"].(*types.AttributeValueMemberS).Value
		var names []string
		for a := range it {
			names = append(names, a)
		}
		sort.Strings(names)
		all := strings.Join(names, ",")
		switch {
		case strings.HasPrefix(pk, "_dn#ver#comment-author#"), strings.HasPrefix(pk, "_dn#job#comment-author#"):
			t.Errorf("%s %s: comment-author's reserved item is still there", pk, sk)
		case strings.HasPrefix(pk, "POST#") && strings.HasPrefix(sk, "COMMENT#"):
			if strings.Contains(all, "userName") || strings.Contains(all, "userAvatar") || strings.Contains(all, "_dnv_") {
				t.Errorf("%s %s still has %s", pk, sk, all)
			}
		case pk == "POST#p1":
			if all != "pk,sk,status,title,userId" {
				t.Errorf("%s %s has %s, want its counter and copy version gone", pk, sk, all)
			}
		case pk == rules.StatePrefix+"POST#p1", pk == rules.StatePrefix+"POST#p9":
			if all != "_dn_v,_dn_wm,pk,sk" {
				t.Errorf("the state item of %s %s has %s, want its counter gone", pk, sk, all)
			}
		case pk == rules.StatePartPrefix+"2#POST#p1":
			if all != "_dn_v,pk,sk" {
				t.Errorf("the state part %s %s has %s, want its counter gone", pk, sk, all)
			}
		case pk == "USER#u1":
			if all != "_dn_cv,commentCount,name,pk,postCount,sk" {
				t.Errorf("%s %s has %s: the new rules' counters and copy version must stay", pk, sk, all)
			}
		case pk == rules.StatePrefix+"USER#u1":
			if all != "_dn_v,_dn_wr,commentCount,pk,postCount,sk" {
				t.Errorf("the state item of %s %s has %s: the new rules' state must stay", pk, sk, all)
			}
		}
	}
	for _, pk := range []string{rules.StatePrefix + "POST#p1", rules.StatePrefix + "POST#p9", rules.StatePrefix + "USER#u1"} {
		if _, ok := findItem(got, pk); !ok {
			t.Errorf("the state item %s is gone", pk)
		}
	}
	if _, ok := findItem(got, "_dn#ver#membership-group-name#GROUP#g1#METADATA"); !ok {
		t.Errorf("another rule's registry item was deleted")
	}
	again := run(false)
	if again.Writes != 0 || again.Left != 0 {
		t.Errorf("second run: %d writes, %d left, want nothing to do", again.Writes, again.Left)
	}
}

// TestCleanupKeepsWhatTheNewRulesWrite: a clean-up that names an attribute the new rules
// write on an item (the copy renamed) leaves it, and removes only the old version.
func TestCleanupKeepsWhatTheNewRulesWrite(t *testing.T) {
	c1 := commentItem("p1", "c1", "u1")
	c1["userName"], c1["userAvatar"], c1["_dnv_comment-author"] = sAV("User u1"), sAV("a.png"), nAV(7)
	fx := newFixture(t, []opstest.Item{userItem("u1"), postItem("p1", "u1", true), c1})
	ctx := context.Background()
	oldSet, err := rules.LoadSet("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile("../../rules/social.yaml")
	renamed := filepath.Join(t.TempDir(), "renamed.yaml")
	if err := os.WriteFile(renamed, []byte(strings.Replace(string(data), "name: comment-author", "name: comment-user", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	newSet, err := rules.LoadSet(renamed)
	if err != nil {
		t.Fatal(err)
	}
	// Told to remove everything comment-author wrote, as a clean-up without --new would be.
	cl := rulesdiff.Cleanup{Rule: "comment-author", Entity: "Comment", Attributes: []string{"_dnv_comment-author", "userAvatar", "userName"}}
	rep, err := ops.Cleanup(ctx, ops.CleanupConfig{API: fx.db, Table: fx.table, Old: oldSet, New: newSet, Cleanups: []rulesdiff.Cleanup{cl}})
	if err != nil {
		t.Fatal(err)
	}
	if st := rep.Rules[0]; st.Cleaned != 1 || st.Attributes != 1 || st.Kept != 2 {
		t.Errorf("%+v, want 1 attribute removed (the version), 2 kept (the new rule copies them)", *st)
	}
	out, err := fx.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(fx.table), Key: opstest.Item{"pk": c1["pk"], "sk": c1["sk"]}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item["userName"] == nil || out.Item["userAvatar"] == nil || out.Item["_dnv_comment-author"] != nil {
		t.Errorf("comment after the clean-up: %v", out.Item)
	}
}

// TestCleanupYieldsToConcurrentWrites: an item that changed between the scan and the
// write is read again and cleaned as it is now.
func TestCleanupYieldsToConcurrentWrites(t *testing.T) {
	c1 := commentItem("p1", "c1", "u1")
	c1["userName"], c1["_dnv_comment-author"] = sAV("User u1"), nAV(7)
	fx := newFixture(t, []opstest.Item{userItem("u1"), postItem("p1", "u1", true), c1})
	ctx := context.Background()
	oldSet, _ := rules.LoadSet("../../rules/social.yaml")
	api := &interfere{API: fx.db, before: map[[2]string]func(){
		{"POST#p1", "COMMENT#2025-01-01T00:00:00Z#c1"}: func() {
			// A late copy of the old processor lands between the scan and the clean-up.
			_, err := fx.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(fx.table), Key: opstest.Item{"pk": c1["pk"], "sk": c1["sk"]},
				UpdateExpression: aws.String("SET userName = :n, userAvatar = :a, #v = :v"), ExpressionAttributeNames: map[string]string{"#v": "_dnv_comment-author"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":n": sAV("Ada"), ":a": sAV("a.png"), ":v": nAV(9)}})
			if err != nil {
				t.Error(err)
			}
		},
	}}
	cl := rulesdiff.Cleanup{Rule: "comment-author", Entity: "Comment", Attributes: []string{"_dnv_comment-author", "userAvatar", "userName"}}
	rep, err := ops.Cleanup(ctx, ops.CleanupConfig{API: api, Table: fx.table, Old: oldSet, Cleanups: []rulesdiff.Cleanup{cl}})
	if err != nil {
		t.Fatal(err)
	}
	if st := rep.Rules[0]; st.Cleaned != 1 || st.Attributes != 3 || st.Conflicts != 0 {
		t.Errorf("%+v, want the item cleaned on the second attempt, 3 attributes", *st)
	}
	out, _ := fx.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(fx.table), Key: opstest.Item{"pk": c1["pk"], "sk": c1["sk"]}})
	for _, a := range []string{"userName", "userAvatar", "_dnv_comment-author"} {
		if out.Item[a] != nil {
			t.Errorf("%s is still there", a)
		}
	}
}

func equalStats(a, b map[string]ops.CleanupStats) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !reflect.DeepEqual(b[k], v) {
			return false
		}
	}
	return true
}

func findItem(items []opstest.Item, pk string) (opstest.Item, bool) {
	for _, it := range items {
		if v, ok := it["pk"].(*types.AttributeValueMemberS); ok && v.Value == pk {
			return it, true
		}
	}
	return nil, false
}
