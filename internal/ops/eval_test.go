package ops

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func N(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// socialEval is the evaluator of rules/social.yaml.
func socialEval(t testing.TB) *Evaluator {
	t.Helper()
	f, err := rules.Load("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// optionsYAML exercises what social.yaml does not: onSourceDelete delete, a copy by key,
// missingTarget create, a sum with a where.
const optionsYAML = `version: 1
table: {partitionKey: pk, sortKey: sk}
entities:
  Team:    {pk: "TEAM#{teamId}", sk: "META", attributes: [name, score]}
  Badge:   {pk: "TEAM#{teamId}", sk: "BADGE", attributes: [teamName]}
  Player:  {pk: "TEAM#{teamId}", sk: "PLAYER#{playerId}", attributes: [points, active]}
rules:
  - name: badge-name
    copy: {from: Team, to: Badge, via: key, set: {teamName: name}, onSourceDelete: delete}
  - name: team-score
    sum: {of: Player, into: Team, value: points, attribute: score, where: {active: true}, missingTarget: create}
`

func optionsEval(t testing.TB) *Evaluator {
	t.Helper()
	f, err := rules.Parse("options.yaml", []byte(optionsYAML))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func key(pk, sk string) plan.Key { return plan.Key{PK: pk, SK: sk} }

func ruleIndex(t testing.TB, ev *Evaluator, name string) int {
	t.Helper()
	i, err := ev.index(name)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestNewEvaluatorOnly(t *testing.T) {
	f, err := rules.Load("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(f, "folder-size")
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Rules(); len(got) != 1 || got[0].Name != "folder-size" {
		t.Fatalf("rules %v, want [folder-size]", got)
	}
	if _, err := NewEvaluator(f, "nope"); err == nil || !strings.Contains(err.Error(), `no rule "nope"`) || !strings.Contains(err.Error(), "folder-size") {
		t.Fatalf("unknown rule: err %v, want it to name the rule and list the others", err)
	}
}

// TestLevels: a mirror comes before the rules that count or copy into the items it creates.
func TestLevels(t *testing.T) {
	ev := socialEval(t)
	var got [][]string
	for _, l := range ev.Levels() {
		var names []string
		for _, i := range l {
			names = append(names, ev.rules[i].r.Name)
		}
		got = append(got, names)
	}
	want := [][]string{
		{"comment-author", "membership-group-name", "user-posts", "group-members", "post-comment-count",
			"user-post-count", "user-comment-count", "group-role-count", "folder-file-count", "folder-size", "folder-large-file-count", "global-post-count", "post-daily-comments",
			"post-last-comment", "folder-oldest-upload", "folder-daily-files"},
		{"member-name", "group-member-count", "user-latest-post", "post-recent-comments"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("levels\n got %v\nwant %v", got, want)
	}
}

func TestObserve(t *testing.T) {
	ev := socialEval(t)
	opt := optionsEval(t)
	type totals map[string]map[plan.Key]string
	for _, tc := range []struct {
		name    string
		ev      *Evaluator
		item    record.Item
		copies  map[string]map[plan.Key]CopyValues
		mirrors map[string]map[plan.Key]MirrorWant
		totals  totals
		probs   []string // "rule: fragment"
	}{
		{
			name:   "user: copy values, absent avatar left out",
			ev:     ev,
			item:   record.Item{"pk": S("USER#u1"), "sk": S("PROFILE"), "name": S("Ada")},
			copies: map[string]map[plan.Key]CopyValues{"comment-author": {key("USER#u1", "PROFILE"): {"userName": S("Ada")}}, "member-name": {key("USER#u1", "PROFILE"): {"userName": S("Ada")}}},
		},
		{
			name: "published post: mirror with rendered keys, counted into its author",
			ev:   ev,
			item: record.Item{"pk": S("POST#p1"), "sk": S("METADATA"), "userId": S("u1"), "title": S("Hi"), "status": S("published"), "commentCount": N("3")},
			mirrors: map[string]map[plan.Key]MirrorWant{"user-posts": {key("USER#u1", "POST#p1"): {Source: key("POST#p1", "METADATA"),
				Item: record.Item{"pk": S("USER#u1"), "sk": S("POST#p1"), "title": S("Hi"), "status": S("published")}}}},
			totals: totals{"user-post-count": {key("USER#u1", "PROFILE"): "1"}, "global-post-count": {key("STATS#global", "STATS"): "1"}},
		},
		{
			name: "draft post: not counted into its author (where), still mirrored, counted globally",
			ev:   ev,
			item: record.Item{"pk": S("POST#p1"), "sk": S("METADATA"), "userId": S("u1"), "status": S("draft")},
			mirrors: map[string]map[plan.Key]MirrorWant{"user-posts": {key("USER#u1", "POST#p1"): {Source: key("POST#p1", "METADATA"),
				Item: record.Item{"pk": S("USER#u1"), "sk": S("POST#p1"), "status": S("draft")}}}},
			totals: totals{"global-post-count": {key("STATS#global", "STATS"): "1"}},
		},
		{
			// As the stream processor does: an item without the attribute that links it to
			// a target counts nowhere and has no mirror; that is not a problem. The global
			// count needs no variable of the post.
			name:   "post without author: counted only globally, mirrored nowhere",
			ev:     ev,
			item:   record.Item{"pk": S("POST#p1"), "sk": S("METADATA"), "status": S("published")},
			totals: totals{"global-post-count": {key("STATS#global", "STATS"): "1"}},
		},
		{
			name: "comment: counted into its post, its author and its post's day",
			ev:   ev,
			item: record.Item{"pk": S("POST#p1"), "sk": S("COMMENT#2025-01-01T00:00:00Z#c1"), "gsi1pk": S("USER#u2"), "gsi1sk": S("COMMENT#2025-01-01T00:00:00Z")},
			totals: totals{"post-comment-count": {key("POST#p1", "METADATA"): "1"},
				"user-comment-count": {key("USER#u2", "PROFILE"): "1"}, "post-daily-comments": {key("POST#p1", "DAY#2025-01-01"): "1"}},
		},
		{
			name: "membership: mirror with index keys",
			ev:   ev,
			item: record.Item{"pk": S("USER#u1"), "sk": S("GROUP#g1"), "gsi2pk": S("GROUP#g1"), "gsi2sk": S("USER#u1"), "role": S("admin"), "groupName": S("G")},
			mirrors: map[string]map[plan.Key]MirrorWant{"group-members": {key("GROUP#g1", "USER#u1"): {Source: key("USER#u1", "GROUP#g1"),
				Item: record.Item{"pk": S("GROUP#g1"), "sk": S("USER#u1"), "gsi1pk": S("USER#u1"), "gsi1sk": S("MEMBER#g1"), "role": S("admin")}}}},
			// and one source of its group's reference item for the role admin
			totals: totals{"group-role-count": {plan.DistinctRef(key("GROUP#g1", "METADATA"), "group-role-count", "Sadmin"): "1"}},
		},
		{
			name:   "file: counted and summed",
			ev:     ev,
			item:   record.Item{"pk": S("FOLDER#f1"), "sk": S("FILE#2025-01-01#x1"), "size": N("1.5")},
			totals: totals{"folder-file-count": {key("FOLDER#f1", "METADATA"): "1"}, "folder-size": {key("FOLDER#f1", "METADATA"): "1.5"}},
		},
		{
			name:   "file of size zero: counted, adds nothing",
			ev:     ev,
			item:   record.Item{"pk": S("FOLDER#f1"), "sk": S("FILE#2025-01-01#x1"), "size": N("0")},
			totals: totals{"folder-file-count": {key("FOLDER#f1", "METADATA"): "1"}},
		},
		{
			name:   "file with a text size: a problem for the sum only",
			ev:     ev,
			item:   record.Item{"pk": S("FOLDER#f1"), "sk": S("FILE#2025-01-01#x1"), "size": S("big")},
			totals: totals{"folder-file-count": {key("FOLDER#f1", "METADATA"): "1"}},
			probs:  []string{"folder-size: sum value size is a string"},
		},
		{name: "reserved item: ignored", ev: ev, item: record.Item{"pk": S("_dn#m#e1"), "sk": S("_dn#m#")}},
		{name: "no entity: ignored", ev: ev, item: record.Item{"pk": S("OTHER#1"), "sk": S("X")}},
		{
			name:   "member: a copy target (no expectation) counted into its group",
			ev:     ev,
			item:   record.Item{"pk": S("GROUP#g1"), "sk": S("USER#u1"), "gsi1pk": S("USER#u1"), "gsi1sk": S("MEMBER#g1")},
			totals: totals{"group-member-count": {key("GROUP#g1", "METADATA"): "1"}},
		},
		{
			name: "sum with where: inactive player not summed",
			ev:   opt,
			item: record.Item{"pk": S("TEAM#t1"), "sk": S("PLAYER#p1"), "points": N("5"), "active": &types.AttributeValueMemberBOOL{Value: false}},
		},
		{
			name:   "sum with where: active player summed",
			ev:     opt,
			item:   record.Item{"pk": S("TEAM#t1"), "sk": S("PLAYER#p1"), "points": N("5"), "active": &types.AttributeValueMemberBOOL{Value: true}},
			totals: totals{"team-score": {key("TEAM#t1", "META"): "5"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tc.ev.NewExpected()
			probs := tc.ev.NewWorker().Observe(tc.item, tc.ev.All(), exp)
			for i, rs := range tc.ev.rules {
				name := rs.r.Name
				if want := tc.copies[name]; len(want) > 0 || len(exp.Copies[i]) > 0 {
					if !reflect.DeepEqual(exp.Copies[i], want) {
						t.Errorf("%s copies\n got %v\nwant %v", name, exp.Copies[i], want)
					}
				}
				if want := tc.mirrors[name]; len(want) > 0 || len(exp.Mirrors[i]) > 0 {
					if !reflect.DeepEqual(exp.Mirrors[i], want) {
						t.Errorf("%s mirrors\n got %v\nwant %v", name, exp.Mirrors[i], want)
					}
				}
				got := map[plan.Key]string{}
				for k, n := range exp.Totals[i] {
					got[k] = n.String()
				}
				if want := tc.totals[name]; len(want) > 0 || len(got) > 0 {
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s totals %v, want %v", name, got, want)
					}
				}
			}
			var gotProbs []string
			for _, p := range probs {
				gotProbs = append(gotProbs, tc.ev.rules[p.Rule].r.Name+": "+p.Msg)
			}
			if len(gotProbs) != len(tc.probs) {
				t.Fatalf("problems %q, want %q", gotProbs, tc.probs)
			}
			for i, want := range tc.probs {
				if !strings.HasPrefix(gotProbs[i], want[:strings.Index(want, ":")+1]) || !strings.Contains(gotProbs[i], want[strings.Index(want, ":")+2:]) {
					t.Errorf("problem %d: %q, want %q", i, gotProbs[i], want)
				}
			}
		})
	}
}

// TestMergeAddsTotals: segments' partial totals add up; a total that cancels out goes.
func TestMergeAddsTotals(t *testing.T) {
	ev := socialEval(t)
	i := ruleIndex(t, ev, "folder-size")
	a, b := ev.NewExpected(), ev.NewExpected()
	k := plan.Key{PK: "FOLDER#f1", SK: "METADATA"}
	a.Totals[i][k] = value.Int(5)
	b.Totals[i][k] = value.Int(7)
	b.Totals[i][plan.Key{PK: "FOLDER#f2", SK: "METADATA"}] = value.Int(1)
	a.Merge(b)
	if got := a.Totals[i][k].String(); got != "12" || len(a.Totals[i]) != 2 {
		t.Fatalf("merged totals %v", a.Totals[i])
	}
	c := ev.NewExpected()
	c.Totals[i][k] = value.Int(-12)
	a.Merge(c)
	if _, ok := a.Totals[i][k]; ok {
		t.Fatalf("a zero total is kept: %v", a.Totals[i])
	}
}
