package rulesdiff_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/rulesdiff"
)

var update = flag.Bool("update", false, "rewrite the golden plan.txt files")

// Each case is a pair of rules files in testdata/<name>/ (old.yaml, new.yaml) and the
// printed comparison in plan.txt.
func TestCompare(t *testing.T) {
	type cleanup struct {
		entity   string
		attrs    string // comma-separated
		state    string // counter attributes removed from state items
		registry bool
		refs     bool // a distinct rule's reference items deleted
	}
	for _, tc := range []struct {
		name     string
		action   bool
		status   map[string]rulesdiff.Status // rules not listed are unchanged
		backfill []string
		cleanups map[string]cleanup // by old rule
		matching []string           // entities that recognise items differently
		table    []rulesdiff.Order
	}{
		{name: "cosmetic", action: false},
		{name: "rollout", action: true,
			status:   map[string]rulesdiff.Status{"folder-size": rulesdiff.Changed, "user-comment-count": rulesdiff.Added, "comment-author": rulesdiff.Removed},
			backfill: []string{"folder-size", "user-comment-count"},
			cleanups: map[string]cleanup{"comment-author": {"Comment", "_dnv_comment-author,userAvatar,userName", "", true, false}}},
		{name: "copies", action: true,
			status:   map[string]rulesdiff.Status{"comment-author": rulesdiff.Changed, "comment-email": rulesdiff.Added},
			backfill: []string{"comment-author", "comment-email"},
			// The rule stays: only the attribute it no longer copies goes, not its version.
			cleanups: map[string]cleanup{"comment-author": {"Comment", "userAvatar", "", false, false}}},
		{name: "renamed", action: true,
			status:   map[string]rulesdiff.Status{"comment-user": rulesdiff.Renamed, "post-comments": rulesdiff.Renamed},
			cleanups: map[string]cleanup{"comment-author": {"Comment", "_dnv_comment-author", "", true, false}}},
		{name: "entity-keys", action: true,
			status:   map[string]rulesdiff.Status{"comment-author": rulesdiff.Changed, "post-comment-count": rulesdiff.Changed},
			backfill: []string{"comment-author", "post-comment-count"},
			matching: []string{"Comment"}},
		{name: "indexes", action: true,
			status:   map[string]rulesdiff.Status{"comment-author": rulesdiff.Changed, "post-comment-count": rulesdiff.Changed},
			backfill: []string{"comment-author", "post-comment-count"},
			matching: []string{"Comment"},
			table:    []rulesdiff.Order{rulesdiff.Setting, rulesdiff.NewTable, rulesdiff.AfterDeploy, rulesdiff.BeforeDeploy}},
		{name: "counters", action: true,
			status: map[string]rulesdiff.Status{"user-posts": rulesdiff.Changed, "user-post-count": rulesdiff.Changed,
				"folder-file-count": rulesdiff.Changed, "folder-size": rulesdiff.Changed, "post-comment-count": rulesdiff.Removed},
			// onExpiry ignore and a dropped mirror attribute need no backfill.
			backfill: []string{"folder-file-count", "user-post-count"},
			cleanups: map[string]cleanup{
				"user-posts":         {"UserPost", "status", "", false, false},
				"user-post-count":    {"User", "postCount", "postCount", false, false},
				"post-comment-count": {"Post", "_dn_cv,commentCount", "commentCount", false, false},
			}},
		// Changing the guard needs no backfill, only a verify once the stream drained.
		{name: "exactly-once", action: true,
			status: map[string]rulesdiff.Status{"user-post-count": rulesdiff.Changed}},
		// A distinct counting another value needs a backfill; a removed one's reference
		// items go with its attribute; a top's ttl applies to new bucket items only.
		{name: "distinct", action: true,
			status:   map[string]rulesdiff.Status{"product-reviewers": rulesdiff.Changed, "product-raters": rulesdiff.Removed, "product-day-best": rulesdiff.Changed},
			backfill: []string{"product-reviewers"},
			cleanups: map[string]cleanup{"product-raters": {"Product", "raters", "raters", false, true}}},
		// 90d written as 2160h is no change; a shorter ttl applies to new bucket items only.
		{name: "buckets", action: true,
			status: map[string]rulesdiff.Status{"customer-daily-orders": rulesdiff.Changed, "customer-daily-revenue": rulesdiff.Changed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", tc.name)
			d := compare(t, filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml"))
			if got := d.NeedsAction(); got != tc.action {
				t.Errorf("NeedsAction = %t, want %t", got, tc.action)
			}
			for _, r := range d.Rules {
				want := tc.status[r.Name]
				if want == "" {
					want = rulesdiff.Unchanged
				}
				if r.Status != want {
					t.Errorf("rule %s: %s, want %s", r.Name, r.Status, want)
				}
			}
			if got := d.Backfill(); !reflect.DeepEqual(got, tc.backfill) {
				t.Errorf("backfill %v, want %v", got, tc.backfill)
			}
			got := map[string]cleanup{}
			for _, c := range d.Cleanups() {
				got[c.Rule] = cleanup{c.Entity, strings.Join(c.Attributes, ","), strings.Join(c.State, ","), c.Registry, c.Refs}
			}
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.cleanups) {
				t.Errorf("cleanups\n got %v\nwant %v", got, tc.cleanups)
			}
			var matching []string
			for _, e := range d.Entities {
				if e.Matching {
					matching = append(matching, e.Name)
				}
			}
			if !reflect.DeepEqual(matching, tc.matching) {
				t.Errorf("entities recognising items differently: %v, want %v", matching, tc.matching)
			}
			var orders []rulesdiff.Order
			for _, tb := range d.Table {
				orders = append(orders, tb.Order)
			}
			if !reflect.DeepEqual(orders, tc.table) {
				t.Errorf("table changes %v, want %v", orders, tc.table)
			}
			var buf bytes.Buffer
			if err := d.WriteText(&buf, "Social", ""); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "plan.txt"), buf.Bytes())
		})
	}
}

// Swapping the files swaps added and removed: what one direction backfills, the other
// cleans up.
func TestCompareBothWays(t *testing.T) {
	dir := filepath.Join("testdata", "rollout")
	back := compare(t, filepath.Join(dir, "new.yaml"), filepath.Join(dir, "old.yaml"))
	status := map[string]rulesdiff.Status{}
	for _, r := range back.Rules {
		status[r.Name] = r.Status
	}
	if status["comment-author"] != rulesdiff.Added || status["user-comment-count"] != rulesdiff.Removed || status["folder-size"] != rulesdiff.Changed {
		t.Errorf("rolling back: %v", status)
	}
	cs := back.Cleanups("user-comment-count")
	if len(cs) != 1 || strings.Join(cs[0].Attributes, ",") != "commentCount" {
		t.Errorf("rolling back cleans up %+v, want commentCount of User (the bookkeeping stays: user-post-count counts into User)", cs)
	}
}

// A file compared with itself needs nothing, for every example in the repository.
func TestCompareSelf(t *testing.T) {
	files, _ := filepath.Glob("../../rules/*.yaml")
	more, _ := filepath.Glob("../../tests/testdata/*.yaml")
	for _, path := range append(files, more...) {
		d := compare(t, path, path)
		if d.NeedsAction() || len(d.Backfill()) > 0 || len(d.Cleanups()) > 0 {
			t.Errorf("%s against itself needs action: %+v", path, d)
		}
	}
}

func compare(t *testing.T, oldPath, newPath string) *rulesdiff.Diff {
	t.Helper()
	o, err := rules.Load(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	n, err := rules.Load(newPath)
	if err != nil {
		t.Fatal(err)
	}
	d, err := rulesdiff.Compare(o, n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// A where test changed (a bound, a list, an operator) changes which items count: the
// rule needs a backfill, and the plan says how; the same tests written in another order
// do not.
func TestWhereTestsChange(t *testing.T) {
	whereChanges(t, "{temp: {gt: 80, lt: 200}, status: {in: [ok, new]}}", map[string]bool{
		"{status: {in: [new, ok]}, temp: {lt: 200, gt: 80}}":  false,
		"{temp: {gt: 90, lt: 200}, status: {in: [ok, new]}}":  true,
		"{temp: {gte: 80, lt: 200}, status: {in: [ok, new]}}": true,
		"{temp: {gt: 80, lt: 200}, status: {in: [ok]}}":       true,
		"{temp: {gt: 80, lt: 200}}":                           true,
		// any: its alternatives in another order are the same where; another alternative,
		// or one moved out of the any, is not.
		"{temp: {gt: 80, lt: 200}, status: {in: [ok, new]}, any: [{temp: {gt: 100}}, {status: ok}]}": true,
	})
}

// Alternatives of a where's any compare in any order; adding, dropping or changing one
// changes the rule.
func TestWhereAnyChange(t *testing.T) {
	whereChanges(t, "{status: {ne: retired}, any: [{temp: {gt: 80}}, {status: faulty}]}", map[string]bool{
		"{any: [{status: faulty}, {temp: {gt: 80}}], status: {ne: retired}}": false,
		"{status: {ne: retired}, any: [{temp: {gt: 90}}, {status: faulty}]}": true,
		"{status: {ne: retired}, any: [{temp: {gt: 80}}]}":                   true,
		"{status: {ne: retired}, temp: {gt: 80}}":                            true,
	})
}

// whereChanges compares a count whose where is base with the same count under each where of
// cases, and checks that the diff asks for a backfill exactly when cases says it changed.
func whereChanges(t *testing.T, base string, cases map[string]bool) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, where string) string {
		path := filepath.Join(dir, name)
		text := "version: 1\nentities:\n" +
			"  Site: {pk: \"SITE#{siteId}\", sk: SITE, attributes: [hot]}\n" +
			"  Reading: {pk: \"SITE#{siteId}\", sk: \"READING#{readingId}\", attributes: [temp, status]}\n" +
			"rules:\n  - {name: site-hot, count: {of: Reading, into: Site, attribute: hot, where: " + where + "}}\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	basePath := write("base.yaml", base)
	for where, changed := range cases {
		d := compare(t, basePath, write("new.yaml", where))
		if got := len(d.Backfill()) == 1; got != changed {
			t.Errorf("where %s: backfill %v, want a backfill %v", where, d.Backfill(), changed)
		}
	}
}

// Raising a count's split needs nothing; lowering it, or removing it, leaves parts unread,
// which a repair mends. A rule's digest (the decisions of backfills) does not change when
// split is absent or 1.
func TestSplitChange(t *testing.T) {
	dir := t.TempDir()
	write := func(name, split string) string {
		path := filepath.Join(dir, name)
		text := "version: 1\nentities:\n" +
			"  Stats: {pk: \"STATS#{scope}\", sk: STATS, attributes: [posts]}\n" +
			"  Post: {pk: \"POST#{postId}\", sk: POST, attributes: [scope]}\n" +
			"rules:\n  - {name: global-posts, count: {of: Post, into: Stats, attribute: posts" + split + "}}\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		from, to string
		backfill bool
		note     string
	}{
		{"", ", split: 4", false, "split 1 -> 4 spreads new deltas over more parts"},
		{", split: 4", ", split: 8", false, "split 4 -> 8 spreads new deltas"},
		{", split: 8", ", split: 4", true, "split 8 -> 4: what parts 4 to 7 hold (of every count and sum into Stats) is no longer read"},
		{", split: 4", "", true, "split 4 -> 1: what parts 0 to 3 hold (of every count and sum into Stats) is no longer read"},
		{"", ", split: 1", false, ""},
	} {
		d := compare(t, write("old.yaml", tc.from), write("new.yaml", tc.to))
		r := d.Rules[0]
		if r.Backfill != tc.backfill || !strings.Contains(r.Why, tc.note) {
			t.Errorf("%q -> %q: backfill %v, why %q; want backfill %v, a why with %q", tc.from, tc.to, r.Backfill, r.Why, tc.backfill, tc.note)
		}
	}
	a, _ := rules.ParseSet("a.yaml", []byte("version: 1\nentities:\n  Stats: {pk: \"STATS#{scope}\", sk: STATS, attributes: [posts]}\n  Post: {pk: \"POST#{postId}\", sk: POST, attributes: [scope]}\nrules:\n  - {name: global-posts, count: {of: Post, into: Stats, attribute: posts, exactlyOnce: transaction}}\n"))
	b, _ := rules.ParseSet("b.yaml", []byte("version: 1\nentities:\n  Stats: {pk: \"STATS#{scope}\", sk: STATS, attributes: [posts]}\n  Post: {pk: \"POST#{postId}\", sk: POST, attributes: [scope]}\nrules:\n  - {name: global-posts, count: {of: Post, into: Stats, attribute: posts, exactlyOnce: transaction, split: 1}}\n"))
	if da, db := rulesdiff.Digest(a.Compiled()[0]), rulesdiff.Digest(b.Compiled()[0]); da != db {
		t.Errorf("digest without split %s, with split: 1 %s: want the same", da, db)
	}
}
