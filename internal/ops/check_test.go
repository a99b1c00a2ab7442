package ops

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
)

// describeDrifts renders drifts as "rule kind pk sk attr:got>want ..." for comparison.
func describeDrifts(ev *Evaluator, ds []Drift) []string {
	var out []string
	for _, d := range ds {
		s := fmt.Sprintf("%s %s %s %s", ev.rules[d.Rule].r.Name, d.Kind, d.Key.PK, d.Key.SK)
		for _, a := range d.Attrs {
			s += fmt.Sprintf(" %s:%s>%s", a.Name, show(a.Got), show(a.Want))
		}
		out = append(out, s)
	}
	return out
}

// socialExpected is what the sources of a small social table expect.
func socialExpected(t *testing.T, ev *Evaluator) *Expected {
	t.Helper()
	exp := ev.NewExpected()
	w := ev.NewWorker()
	for _, it := range []record.Item{
		{"pk": S("USER#u1"), "sk": S("PROFILE"), "name": S("Ada"), "avatar": S("a.png")},
		{"pk": S("USER#u2"), "sk": S("PROFILE"), "name": S("Bob")}, // no avatar
		{"pk": S("GROUP#g1"), "sk": S("METADATA"), "name": S("Go")},
		{"pk": S("USER#u1"), "sk": S("GROUP#g1"), "gsi2pk": S("GROUP#g1"), "gsi2sk": S("USER#u1"), "role": S("admin"), "joinedAt": S("2025")},
		{"pk": S("POST#p1"), "sk": S("METADATA"), "userId": S("u1"), "title": S("Hi"), "status": S("published")},
		{"pk": S("POST#p1"), "sk": S("COMMENT#t1#c1"), "gsi1pk": S("USER#u1"), "gsi1sk": S("COMMENT#t1")},
		{"pk": S("POST#p1"), "sk": S("COMMENT#t2#c2"), "gsi1pk": S("USER#u2"), "gsi1sk": S("COMMENT#t2")},
		{"pk": S("FOLDER#f1"), "sk": S("FILE#d#x1"), "size": N("10")},
	} {
		if probs := w.Observe(it, ev.All(), exp); len(probs) > 0 {
			t.Fatalf("problems: %v", probs)
		}
	}
	return exp
}

func TestCheck(t *testing.T) {
	ev := socialEval(t)
	exp := socialExpected(t, ev)
	comment := func(user string, extra ...any) record.Item {
		it := record.Item{"pk": S("POST#p1"), "sk": S("COMMENT#t9#c9"), "gsi1pk": S("USER#" + user), "gsi1sk": S("COMMENT#t9")}
		for i := 0; i < len(extra); i += 2 {
			it[extra[i].(string)] = extra[i+1].(types.AttributeValue)
		}
		return it
	}
	for _, tc := range []struct {
		name  string
		item  record.Item
		rules []string
		want  []string
	}{
		{"copy equal", comment("u1", "userName", S("Ada"), "userAvatar", S("a.png")), []string{"comment-author"}, nil},
		{"copy differs and missing", comment("u1", "userName", S("Old")), []string{"comment-author"},
			[]string{`comment-author differs POST#p1 COMMENT#t9#c9 userName:"Old">"Ada" userAvatar:absent>"a.png"`}},
		{"copy: the source lacks an attribute, so must the target", comment("u2", "userName", S("Bob"), "userAvatar", S("x.png")), []string{"comment-author"},
			[]string{`comment-author differs POST#p1 COMMENT#t9#c9 userAvatar:"x.png">absent`}},
		{"copy: source gone, keep", comment("u7", "userName", S("Gone")), []string{"comment-author"}, nil},
		{"copy: source gone, remove", record.Item{"pk": S("USER#u1"), "sk": S("GROUP#g7"), "gsi2pk": S("GROUP#g7"), "gsi2sk": S("USER#u1"), "groupName": S("Old")},
			[]string{"membership-group-name"}, []string{`membership-group-name differs USER#u1 GROUP#g7 groupName:"Old">absent`}},
		{"copy: source gone, remove, already removed", record.Item{"pk": S("USER#u1"), "sk": S("GROUP#g7"), "gsi2pk": S("GROUP#g7"), "gsi2sk": S("USER#u1")},
			[]string{"membership-group-name"}, nil},
		{"mirror equal, other rules' attributes ignored", record.Item{"pk": S("GROUP#g1"), "sk": S("USER#u1"), "gsi1pk": S("USER#u1"), "gsi1sk": S("MEMBER#g1"),
			"role": S("admin"), "joinedAt": S("2025"), "userName": S("Ada"), "_dnv_group-members": N("9")},
			[]string{"member-name", "group-members"}, nil},
		{"mirror differs: attribute, index key, extra listed attribute", record.Item{"pk": S("USER#u1"), "sk": S("POST#p1"), "title": S("Old"), "status": S("published")},
			[]string{"user-posts"}, []string{`user-posts differs USER#u1 POST#p1 title:"Old">"Hi"`}},
		{"mirror orphan", record.Item{"pk": S("USER#u1"), "sk": S("POST#p9"), "title": S("Gone")},
			[]string{"user-posts"}, []string{`user-posts extra USER#u1 POST#p9`}},
		{"counter right", record.Item{"pk": S("POST#p1"), "sk": S("METADATA"), "userId": S("u1"), "title": S("Hi"), "status": S("published"), "commentCount": N("2")},
			[]string{"post-comment-count", "post-last-comment", "post-recent-comments"}, nil},
		{"counter equal as a number", record.Item{"pk": S("FOLDER#f1"), "sk": S("METADATA"), "fileCount": N("1.0"), "totalBytes": N("10")},
			[]string{"folder-file-count", "folder-size", "folder-large-file-count", "folder-oldest-upload"}, nil},
		{"counter wrong, missing, not a number", record.Item{"pk": S("USER#u1"), "sk": S("PROFILE"), "postCount": N("5"), "commentCount": S("1")},
			[]string{"user-post-count", "user-comment-count", "user-latest-post"},
			[]string{`user-post-count differs USER#u1 PROFILE postCount:5>1`, `user-comment-count differs USER#u1 PROFILE commentCount:"1">1`}},
		{"counter with no sources: absent and 0 are right", record.Item{"pk": S("FOLDER#f2"), "sk": S("METADATA"), "fileCount": N("0")},
			[]string{"folder-file-count", "folder-size", "folder-large-file-count", "folder-oldest-upload"}, nil},
		{"counter with no sources holding a value", record.Item{"pk": S("GROUP#g2"), "sk": S("METADATA"), "memberCount": N("3")},
			[]string{"group-member-count", "group-role-count"}, []string{`group-member-count differs GROUP#g2 METADATA memberCount:3>0`}},
		{"reserved item", record.Item{"pk": S("_dn#m#e1"), "sk": S("_dn#m#"), "commentCount": N("3")}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := ev.NewWorker()
			c := w.Check(tc.item, ev.All(), exp, ev.NewSeen())
			var gotRules []string
			for _, i := range c.Rules {
				gotRules = append(gotRules, ev.rules[i].r.Name)
			}
			if !reflect.DeepEqual(gotRules, tc.rules) {
				t.Errorf("target of %v, want %v", gotRules, tc.rules)
			}
			if got := describeDrifts(ev, c.Differing()); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("drift\n got %q\nwant %q", got, tc.want)
			}
			if len(c.Problems) > 0 {
				t.Errorf("problems %v", c.Problems)
			}
		})
	}
}

// TestCheckOrphanSource: an orphan mirror names the source that would have written it,
// so a repair can read it before deleting.
func TestCheckOrphanSource(t *testing.T) {
	ev := socialEval(t)
	c := ev.NewWorker().Check(record.Item{"pk": S("GROUP#g5"), "sk": S("USER#u5"), "gsi1pk": S("USER#u5"), "gsi1sk": S("MEMBER#g5")},
		[]int{ruleIndex(t, ev, "group-members")}, ev.NewExpected(), ev.NewSeen())
	if len(c.Drifts) != 1 || !c.Drifts[0].HasSource || c.Drifts[0].Source != (plan.Key{PK: "USER#u5", SK: "GROUP#g5"}) {
		t.Fatalf("drifts %+v, want one extra with source USER#u5 GROUP#g5", c.Drifts)
	}
}

func TestCheckOptions(t *testing.T) {
	ev := optionsEval(t)
	exp := ev.NewExpected()
	w := ev.NewWorker()
	w.Observe(record.Item{"pk": S("TEAM#t1"), "sk": S("META"), "name": S("Reds")}, ev.All(), exp)
	for _, tc := range []struct {
		name string
		item record.Item
		want []string
	}{
		{"by key, equal", record.Item{"pk": S("TEAM#t1"), "sk": S("BADGE"), "teamName": S("Reds")}, nil},
		{"by key, differs", record.Item{"pk": S("TEAM#t1"), "sk": S("BADGE")}, []string{`badge-name differs TEAM#t1 BADGE teamName:absent>"Reds"`}},
		{"source deleted: the target should go", record.Item{"pk": S("TEAM#t2"), "sk": S("BADGE"), "teamName": S("Blues")}, []string{`badge-name extra TEAM#t2 BADGE`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := w.Check(tc.item, ev.All(), exp, ev.NewSeen())
			if got := describeDrifts(ev, c.Differing()); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("drift\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	ev := socialEval(t)
	exp := socialExpected(t, ev)
	seen := ev.NewSeen()
	// The scan met the post's counter target and the user-post mirror, nothing else.
	w := ev.NewWorker()
	w.Check(record.Item{"pk": S("POST#p1"), "sk": S("METADATA"), "userId": S("u1"), "status": S("published"), "commentCount": N("2")}, ev.All(), exp, seen)
	w.Check(record.Item{"pk": S("USER#u1"), "sk": S("POST#p1"), "title": S("Hi"), "status": S("published")}, ev.All(), exp, seen)
	drifts, skipped := ev.Missing(ev.All(), exp, seen, nil)
	want := []string{"group-members missing GROUP#g1 USER#u1"}
	if got := describeDrifts(ev, drifts); !reflect.DeepEqual(got, want) {
		t.Errorf("missing\n got %q\nwant %q", got, want)
	}
	// Totals for users, the folder, the global stats item, and the group's roles: not drift
	// (missingTarget skip; a distinct target is never created) but counted.
	gotSkipped := map[string]int64{}
	for i, n := range skipped {
		if n > 0 {
			gotSkipped[ev.rules[i].r.Name] = n
		}
	}
	wantSkipped := map[string]int64{"user-post-count": 1, "user-comment-count": 2, "folder-file-count": 1, "folder-size": 1, "global-post-count": 1, "group-role-count": 1}
	if !reflect.DeepEqual(gotSkipped, wantSkipped) {
		t.Errorf("skipped %v, want %v", gotSkipped, wantSkipped)
	}

	// With the states a repairing round read: a NoTarget drift for each skipped total, and
	// for each state of a rule's target shape that no total and no scanned target named
	// (USER#u7 holds a state, no source counts into it: decided as 0); none for a state of
	// another shape (a post's, met by the scan) or for totals of targets the scan met.
	states := map[plan.Key]uint64{{PK: "USER#u7", SK: "PROFILE"}: 3, {PK: "POST#p1", SK: "METADATA"}: 2}
	drifts, _ = ev.Missing(ev.All(), exp, seen, states)
	noTarget := map[string]int{}
	for _, d := range drifts {
		if d.NoTarget {
			if len(d.Attrs) > 0 {
				t.Errorf("NoTarget drift %s %v with attributes: it writes no copy", ev.rules[d.Rule].r.Name, d.Key)
			}
			noTarget[ev.rules[d.Rule].r.Name+" "+d.Key.PK+" "+d.Total.String()]++
		}
	}
	for _, want := range []string{"user-post-count USER#u7 0", "user-comment-count USER#u7 0", "global-post-count STATS#global 1"} {
		if noTarget[want] != 1 {
			t.Errorf("no NoTarget drift %q in %v", want, noTarget)
		}
	}
	for k := range noTarget {
		if strings.Contains(k, "POST#p1") {
			t.Errorf("NoTarget drift %q for a target the scan met", k)
		}
	}

	// missingTarget: create makes a missing target drift.
	opt := optionsEval(t)
	oexp := opt.NewExpected()
	opt.NewWorker().Observe(record.Item{"pk": S("TEAM#t3"), "sk": S("PLAYER#p1"), "points": N("4"), "active": &types.AttributeValueMemberBOOL{Value: true}}, opt.All(), oexp)
	drifts, _ = opt.Missing(opt.All(), oexp, opt.NewSeen(), nil)
	if got := describeDrifts(opt, drifts); !reflect.DeepEqual(got, []string{"team-score missing TEAM#t3 META score:absent>4"}) {
		t.Errorf("create: %q", got)
	}
}

func TestCopyDiffAndMirrorDiff(t *testing.T) {
	ev := socialEval(t)
	r := ev.rules[ruleIndex(t, ev, "group-members")].r
	got := record.Item{"pk": S("GROUP#g1"), "sk": S("USER#u1"), "gsi1pk": S("USER#u9"), "gsi1sk": S("MEMBER#g1"), "role": S("member"), "joinedAt": S("x")}
	want := record.Item{"pk": S("GROUP#g1"), "sk": S("USER#u1"), "gsi1pk": S("USER#u1"), "gsi1sk": S("MEMBER#g1"), "role": S("admin")}
	var names []string
	for _, a := range mirrorDiff(ev.spec, r, got, want) {
		names = append(names, a.Name+"="+show(a.Want))
	}
	if s := strings.Join(names, " "); s != `gsi1pk="USER#u1" role="admin" joinedAt=absent` {
		t.Errorf("mirror diff: %s", s)
	}
}
