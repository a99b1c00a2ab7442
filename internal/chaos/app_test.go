package chaos

import (
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/workload"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func remove(k Key, attrs ...string) workload.Op {
	return workload.Op{Key: keyItem(k), Remove: attrs}
}

func read(k Key) workload.Op { return workload.Op{Put: withAttr(keyItem(k), readAttr, "1")} }

func opKey(op workload.Op) Key {
	it := op.ItemKey()
	return Key{str(it["pk"]), str(it["sk"])}
}

// Every application case is in the workload, the same for the same seed; without the
// class, none is. Reads come before the Puts that reuse them, a deleted target is put
// again by the next write, late targets are put after sources written in an earlier phase.
func TestApplicationWorkload(t *testing.T) {
	f := Faults{Application: true, TTL: true}
	a, b := Generate(6, 3000, f, Options{}), Generate(6, 3000, f, Options{})
	if fingerprint(a.Ops) != fingerprint(b.Ops) || a.Application != b.Application {
		t.Fatal("the same seed gave different workloads")
	}
	w := a.Application
	if w.RePuts == 0 || w.StaleRePuts == 0 || w.CounterWrites == 0 || w.DeleteRePuts == 0 || w.Undeletes == 0 || w.LateTargets < 4*a.Rounds ||
		w.Unlinked == 0 || w.Relinked == 0 {
		t.Errorf("a case is missing: %s", w)
	}
	if off := Generate(6, 3000, Faults{TTL: true}, Options{}); off.Application.Total() != 0 {
		t.Errorf("the class is off, yet: %s", off.Application)
	} else {
		for _, op := range off.Ops {
			// A file's size or pinned removed is ordinary churn (out of folder-large-file-count's where).
			sizeOnly := len(op.Remove) == 1 && (op.Remove[0] == "size" || op.Remove[0] == "pinned") && KindOf(keyOf(op.Key), nil) == File
			if op.Put[readAttr] != nil || op.Put[staleAttr] != nil || (len(op.Remove) > 0 && !sizeOnly) {
				t.Fatalf("the class is off, yet: %s %v", render(op.Put), op.Remove)
			}
		}
	}

	read := map[Key]bool{}
	written := map[Key]int{} // key -> index of the first op that wrote it
	stale, removes := 0, map[string]int{}
	for i, op := range a.Ops {
		k := opKey(op)
		switch {
		case op.Put[readAttr] != nil:
			read[k] = true
			continue
		case op.Put[staleAttr] != nil:
			stale++
			if !read[k] {
				t.Errorf("Put of %v reuses a read that never happened", k)
			}
		case op.Del != nil && KindOf(k, nil) != Other && slices.Contains(targetKinds, KindOf(k, nil)):
			if i+1 < len(a.Ops) && a.Ops[i+1].Put != nil && opKey(a.Ops[i+1]) == k {
				removes["delete, put"]++
			}
		}
		for _, r := range op.Remove {
			removes[r]++
		}
		if _, ok := written[k]; !ok {
			written[k] = i
		}
	}
	if want := w.StaleRePuts + w.Undeletes + countRereads(a.Ops); stale != want {
		t.Errorf("%d Puts reuse a read, want %d", stale, want)
	}
	if removes["userId"] == 0 || removes["delete, put"] == 0 || removes["commentCount"]+removes["postCount"]+removes["memberCount"]+removes["fileCount"]+removes["totalBytes"] == 0 {
		t.Errorf("removes and re-puts: %v", removes)
	}

	// Round-level late targets: a source in an earlier phase than the target's Put.
	phase := func(i int) string { return a.Ops[i].Phase }
	late := 0
	for i, op := range a.Ops {
		if op.Put == nil || !strings.Contains(str(op.Put["pk"]), "#l") || !strings.HasSuffix(phase(i), "-churn") {
			continue
		}
		k := opKey(op)
		if !slices.Contains(targetKinds, KindOf(k, op.Put)) || written[k] != i {
			continue
		}
		for j := 0; j < i; j++ {
			if linksTo(a.Ops[j], k) && strings.HasSuffix(phase(j), "-children") {
				late++
				break
			}
		}
	}
	if late < 4*a.Rounds {
		t.Errorf("%d targets put a phase after a source, want at least %d", late, 4*a.Rounds)
	}
}

// countRereads counts the Puts of deleteRePut that reuse a read (not in StaleRePuts).
func countRereads(ops []workload.Op) int {
	c := 0
	for i := 1; i < len(ops); i++ {
		if ops[i].Put[staleAttr] != nil && ops[i-1].Del != nil && opKey(ops[i-1]) == opKey(ops[i]) {
			c++
		}
	}
	return c
}

// linksTo reports whether op writes a source that links to the target t.
func linksTo(op workload.Op, t Key) bool {
	it := op.Put
	if it == nil {
		return false
	}
	k := keyOf(it)
	switch KindOf(t, nil) {
	case User:
		return str(it["userId"]) == strings.TrimPrefix(t.PK, "USER#") || str(it["gsi1pk"]) == t.PK || (k.PK == t.PK && k.SK != t.SK)
	case Post:
		return k.PK == t.PK && k.SK != t.SK
	case Group:
		return k.SK == t.PK
	case Folder:
		return k.PK == t.PK && k.SK != t.SK
	}
	return false
}

func TestModelApplication(t *testing.T) {
	m := NewModel()
	p := Key{"POST#p1", "METADATA"}
	m.Apply(put("pk", p.PK, "sk", p.SK, "userId", "u1", "title", "T", "commentCount", 3))
	m.Apply(remove(p, "userId", "commentCount"))
	if it, _ := m.Item(p); it["userId"] != nil || it["commentCount"] != nil || str(it["title"]) != "T" {
		t.Fatalf("after REMOVE: %s", render(it))
	}
	m.Apply(read(p))
	if it, _ := m.Item(p); it[readAttr] != nil || str(it["title"]) != "T" || m.Len() != 1 {
		t.Fatalf("a read changed the model: %s", render(it))
	}
	m.Apply(read(Key{"GROUP#none", "METADATA"}))
	if m.Len() != 1 {
		t.Fatal("a read of a missing item created it")
	}
	op := put("pk", p.PK, "sk", p.SK, "title", "U")
	op.Put[staleAttr] = s("commentCount,_dn*")
	m.Apply(op)
	if it, _ := m.Item(p); it[staleAttr] != nil || str(it["title"]) != "U" {
		t.Fatalf("after a Put of values read earlier: %s", render(it))
	}
	m.note(p, "x")
	m.note(p, "y")
	m.note(p, "x")
	if got := m.Cases(p); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("cases %v", got)
	}
}

// What a Put of values read earlier writes: the attributes the marker names as they were
// read, the prefix of _dn* included; the marker never.
func TestWithRead(t *testing.T) {
	item := record.Item{"pk": s("POST#p"), "sk": s("METADATA"), "title": s("new"), staleAttr: s("commentCount,_dn*")}
	read := record.Item{"pk": s("POST#p"), "sk": s("METADATA"), "title": s("old"), "commentCount": n("4"),
		"_dn_wm": n("0042"), "_dnv_x": n("7"), "status": s("draft")}
	got, denorm := withRead(item, read)
	want := record.Item{"pk": s("POST#p"), "sk": s("METADATA"), "title": s("new"), "commentCount": n("4"),
		"_dn_wm": n("0042"), "_dnv_x": n("7")}
	if render(got) != render(want) || !denorm {
		t.Errorf("got %s (denorm %v), want %s", render(got), denorm, render(want))
	}
	if item[staleAttr] == nil {
		t.Error("withRead changed the generator's item")
	}
	// Nothing read (the item did not exist): nothing added.
	got, denorm = withRead(item, nil)
	if render(got) != render(record.Item{"pk": s("POST#p"), "sk": s("METADATA"), "title": s("new")}) || denorm {
		t.Errorf("without a read: %s", render(got))
	}
	// Counters only.
	item[staleAttr] = s("commentCount")
	if got, denorm = withRead(item, read); got["_dn_wm"] != nil || denorm || str(got["title"]) != "new" || got["commentCount"] == nil {
		t.Errorf("counters only: %s", render(got))
	}
}

// scenario is the model of a hand-written application history with every application
// case, and the table Denorm must leave, written out by hand from the semantics (not from
// the oracle's code).
func scenario() (*Model, map[Key]record.Item) {
	m := NewModel()
	u1, u2 := Key{"USER#u1", "PROFILE"}, Key{"USER#u2", "PROFILE"}
	p1, p2, p3 := Key{"POST#p1", "METADATA"}, Key{"POST#p2", "METADATA"}, Key{"POST#p3", "METADATA"}
	c1, c2 := Key{"POST#p1", "COMMENT#2025-01-01T00:00:00Z#c1"}, Key{"POST#p1", "COMMENT#2025-01-02T00:00:00Z#c2"}
	c4 := Key{"POST#p1", "COMMENT#2025-01-04T00:00:00Z#c4"}
	g1, f1 := Key{"GROUP#g1", "METADATA"}, Key{"FOLDER#f1", "METADATA"}
	lu, lp := Key{"USER#lu", "PROFILE"}, Key{"POST#lp", "METADATA"}
	m1 := Key{"USER#u1", "GROUP#g1"}
	for _, op := range []workload.Op{
		put("pk", u1.PK, "sk", u1.SK, "name", "Ann", "avatar", "a.png"),
		put("pk", u2.PK, "sk", u2.SK, "name", "Bea", "avatar", "b.png"),
		put("pk", p1.PK, "sk", p1.SK, "userId", "u1", "title", "One", "status", "published"),
		put("pk", c1.PK, "sk", c1.SK, "gsi1pk", u1.PK, "gsi1sk", "COMMENT#2025-01-01T00:00:00Z", "text", "hi"),
		put("pk", c2.PK, "sk", c2.SK, "gsi1pk", "USER#lu", "gsi1sk", "COMMENT#2025-01-02T00:00:00Z", "text", "yo"),
		// A comment without author keys (sparse): its post counts it, no user does.
		put("pk", c4.PK, "sk", c4.SK, "text", "anon", "userName", "?"),
		// Whole-item re-Put of p1 with a wrong counter and a watermark the application kept.
		put("pk", p1.PK, "sk", p1.SK, "userId", "u1", "title", "One", "status", "published", "commentCount", 0, "_dn_cv", 1),
		// A post whose userId goes; one inserted without, given u2's later.
		put("pk", p2.PK, "sk", p2.SK, "userId", "u1", "title", "Two", "status", "published"),
		remove(p2, "userId"),
		put("pk", p3.PK, "sk", p3.SK, "title", "Three", "status", "published"),
		update(p3, "userId", "u2"),
		// A group deleted and put again without its counter; u1's counter REMOVEd.
		put("pk", g1.PK, "sk", g1.SK, "name", "G"),
		put("pk", m1.PK, "sk", m1.SK, "gsi2pk", g1.PK, "gsi2sk", m1.PK, "role", "admin", "joinedAt", "2025-01-01"),
		del(g1),
		put("pk", g1.PK, "sk", g1.SK, "name", "G"),
		remove(u1, "postCount"),
		// Sources of a folder, a user and a post that do not exist yet; then they do.
		put("pk", f1.PK, "sk", "FILE#2025-01-01#x1", "name", "x1", "size", 10),
		put("pk", f1.PK, "sk", "FILE#2025-01-01#x2", "name", "x2", "size", num("2.5")),
		// folder-large-file-count (size gte 524288): the bound counts; a file that falls a
		// hundredth below it, or loses its size, leaves.
		put("pk", f1.PK, "sk", "FILE#2025-01-01#x3", "name", "x3", "size", 524288),
		put("pk", f1.PK, "sk", "FILE#2025-01-01#x4", "name", "x4", "size", 900000),
		update(Key{f1.PK, "FILE#2025-01-01#x4"}, "size", num("524287.99")),
		put("pk", f1.PK, "sk", "FILE#2025-01-01#x5", "name", "x5", "size", 700000),
		remove(Key{f1.PK, "FILE#2025-01-01#x5"}, "size"),
		// Or pinned (its any's second alternative): a small pinned file counts; a large
		// pinned one that loses pinned stays, then leaves with its size.
		put("pk", f1.PK, "sk", "FILE#2025-01-01#x6", "name", "x6", "size", 100, "pinned", true),
		put("pk", f1.PK, "sk", "FILE#2025-01-01#x7", "name", "x7", "size", 900000, "pinned", true),
		update(Key{f1.PK, "FILE#2025-01-01#x7"}, "pinned", false),
		remove(Key{f1.PK, "FILE#2025-01-01#x7"}, "size"),
		put("pk", "POST#lp", "sk", "COMMENT#2025-01-03T00:00:00Z#c3", "gsi1pk", u2.PK, "gsi1sk", "COMMENT#2025-01-03T00:00:00Z", "text", "x"),
		put("pk", "POST#q", "sk", "METADATA", "userId", "lu", "title", "Q", "status", "draft"),
		put("pk", f1.PK, "sk", f1.SK, "name", "F", "fileCount", 7),
		put("pk", lu.PK, "sk", lu.SK, "name", "Late", "avatar", "l.png"),
		put("pk", lp.PK, "sk", lp.SK, "userId", "lu", "title", "LP", "status", "published"),
	} {
		m.Apply(op)
	}
	m.note(p1, "re-put")
	m.note(Key{"USER#u1", "POST#p2"}, caseMirrorGone)

	c3 := Key{"POST#lp", "COMMENT#2025-01-03T00:00:00Z#c3"}
	table := map[Key]record.Item{
		u1:                                  {"name": s("Ann"), "avatar": s("a.png"), "postCount": n("1"), "commentCount": n("1")},
		u2:                                  {"name": s("Bea"), "avatar": s("b.png"), "postCount": n("1"), "commentCount": n("1")},
		lu:                                  {"name": s("Late"), "avatar": s("l.png"), "postCount": n("1"), "commentCount": n("1")},
		p1:                                  {"userId": s("u1"), "title": s("One"), "status": s("published"), "commentCount": n("3"), "_dn_cv": n("7")},
		p2:                                  {"title": s("Two"), "status": s("published"), "commentCount": n("0")},
		p3:                                  {"userId": s("u2"), "title": s("Three"), "status": s("published")},
		lp:                                  {"userId": s("lu"), "title": s("LP"), "status": s("published"), "commentCount": n("1"), "_dn_cv": n("99")},
		{"POST#q", "METADATA"}:              {"userId": s("lu"), "title": s("Q"), "status": s("draft")},
		{"USER#u1", "POST#p1"}:              {"title": s("One"), "status": s("published"), "_dnv_user-posts": n("3")},
		{"USER#u2", "POST#p3"}:              {"title": s("Three"), "status": s("published")},
		{"USER#lu", "POST#lp"}:              {"title": s("LP"), "status": s("published")},
		{"USER#lu", "POST#q"}:               {"title": s("Q"), "status": s("draft")},
		c1:                                  {"gsi1pk": s(u1.PK), "gsi1sk": s("COMMENT#2025-01-01T00:00:00Z"), "text": s("hi"), "userName": s("Ann"), "userAvatar": s("a.png")},
		c2:                                  {"gsi1pk": s("USER#lu"), "gsi1sk": s("COMMENT#2025-01-02T00:00:00Z"), "text": s("yo"), "userName": s("Late"), "userAvatar": s("l.png")},
		c4:                                  {"text": s("anon"), "userName": s("?")},
		c3:                                  {"gsi1pk": s(u2.PK), "gsi1sk": s("COMMENT#2025-01-03T00:00:00Z"), "text": s("x"), "userName": s("Bea"), "userAvatar": s("b.png")},
		g1:                                  {"name": s("G"), "memberCount": n("1"), "roleCount": n("1"), "_dn_cv": n("5")},
		m1:                                  {"gsi2pk": s(g1.PK), "gsi2sk": s(m1.PK), "role": s("admin"), "joinedAt": s("2025-01-01"), "groupName": s("G")},
		{"GROUP#g1", "USER#u1"}:             {"gsi1pk": s("USER#u1"), "gsi1sk": s("MEMBER#g1"), "role": s("admin"), "joinedAt": s("2025-01-01"), "userName": s("Ann")},
		f1:                                  {"name": s("F"), "fileCount": n("7"), "totalBytes": n("1048688.49"), "largeFileCount": n("2")},
		{"FOLDER#f1", "FILE#2025-01-01#x1"}: {"name": s("x1"), "size": n("10")},
		{"FOLDER#f1", "FILE#2025-01-01#x2"}: {"name": s("x2"), "size": n("2.5")},
		{"FOLDER#f1", "FILE#2025-01-01#x3"}: {"name": s("x3"), "size": n("524288")},
		{"FOLDER#f1", "FILE#2025-01-01#x4"}: {"name": s("x4"), "size": n("524287.99")},
		{"FOLDER#f1", "FILE#2025-01-01#x5"}: {"name": s("x5")},
		{"FOLDER#f1", "FILE#2025-01-01#x6"}: {"name": s("x6"), "size": n("100"), "pinned": &types.AttributeValueMemberBOOL{Value: true}},
		{"FOLDER#f1", "FILE#2025-01-01#x7"}: {"name": s("x7"), "pinned": &types.AttributeValueMemberBOOL{Value: false}},
		// post-daily-comments: a day item per post and UTC day of comments, created by
		// Denorm, with ttl = the day's end (midnight after) + 3650 days.
		{"POST#p1", "DAY#2025-01-01"}: {"commentCount": n("1"), "ttl": n("2051136000")}, // 2025-01-02T00:00Z + 3650d
		{"POST#p1", "DAY#2025-01-02"}: {"commentCount": n("1"), "ttl": n("2051222400")},
		{"POST#p1", "DAY#2025-01-04"}: {"commentCount": n("1"), "ttl": n("2051395200"), "_dn_cv": n("4")}, // c4: no author, still counted
		{"POST#lp", "DAY#2025-01-03"}: {"commentCount": n("1"), "ttl": n("2051308800")},
		// A day whose comments are all gone keeps its item at 0.
		{"POST#p2", "DAY#2025-01-09"}: {"commentCount": n("0"), "ttl": n("2051827200")},
	}
	for k, it := range table {
		it["pk"], it["sk"] = s(k.PK), s(k.SK)
	}
	return m, table
}

// The oracle expects, of a history with every application case, exactly the table the
// semantics give, written out by hand; it ignores Denorm's attributes; it finds what the
// engine of before the class leaves behind, and names the case.
func TestOracleApplication(t *testing.T) {
	m, table := scenario()
	if ms := Oracle(m, table); len(ms) != 0 {
		t.Fatalf("the right table: %v", ms)
	}
	p1 := Key{"POST#p1", "METADATA"}
	for _, tc := range []struct {
		name   string
		change func(map[Key]record.Item)
		want   string // the mismatch, without its cases
		cases  string // its cases, "" for none
	}{
		{"counter as the application wrote it", func(tb map[Key]record.Item) { tb[p1]["commentCount"] = n("0") },
			"attribute POST#p1 METADATA: commentCount = 0, want 3", "re-put"},
		{"counter lost by the re-Put", func(tb map[Key]record.Item) { delete(tb[p1], "commentCount") },
			"attribute POST#p1 METADATA: commentCount = absent, want 3", "re-put"},
		{"mirror of an unlinked post left", func(tb map[Key]record.Item) {
			tb[Key{"USER#u1", "POST#p2"}] = record.Item{"title": s("Two")}
		}, `zombie USER#u1 POST#p2:  = {title: "Two"}, want no item`, caseMirrorGone},
		{"late target without its sources' sum", func(tb map[Key]record.Item) { delete(tb[Key{"FOLDER#f1", "METADATA"}], "totalBytes") },
			"attribute FOLDER#f1 METADATA: totalBytes = absent, want 1048688.49", ""},
		{"a file a hundredth below the bound, or pinned: false, counted", func(tb map[Key]record.Item) {
			tb[Key{"FOLDER#f1", "METADATA"}]["largeFileCount"] = n("3")
		}, "attribute FOLDER#f1 METADATA: largeFileCount = 3, want 2", ""},
		{"the small pinned file not counted", func(tb map[Key]record.Item) { tb[Key{"FOLDER#f1", "METADATA"}]["largeFileCount"] = n("1") },
			"attribute FOLDER#f1 METADATA: largeFileCount = 1, want 2", ""},
		{"the file at the bound not counted", func(tb map[Key]record.Item) { delete(tb[Key{"FOLDER#f1", "METADATA"}], "largeFileCount") },
			"attribute FOLDER#f1 METADATA: largeFileCount = absent, want 2", ""},
		{"unlinked post still counted", func(tb map[Key]record.Item) { tb[Key{"USER#u1", "PROFILE"}]["postCount"] = n("2") },
			"attribute USER#u1 PROFILE: postCount = 2, want 1", ""},
		{"the application's counter on a re-created group", func(tb map[Key]record.Item) {
			tb[Key{"GROUP#g1", "METADATA"}]["memberCount"] = n("0")
		}, "attribute GROUP#g1 METADATA: memberCount = 0, want 1", ""},
		{"a late user's posts not counted", func(tb map[Key]record.Item) { tb[Key{"USER#lu", "PROFILE"}]["postCount"] = n("0") },
			"attribute USER#lu PROFILE: postCount = 0, want 1", ""},
		{"a post inserted without userId, set later, not mirrored", func(tb map[Key]record.Item) { delete(tb, Key{"USER#u2", "POST#p3"}) },
			`missing USER#u2 POST#p3:  = , want {status: "published", title: "Three"}`, ""},
		{"a late user's name not copied", func(tb map[Key]record.Item) {
			tb[Key{"POST#p1", "COMMENT#2025-01-02T00:00:00Z#c2"}]["userName"] = s("?")
		}, `attribute POST#p1 COMMENT#2025-01-02T00:00:00Z#c2: userName = "?", want "Late"`, ""},
		{"a day item counting a comment twice", func(tb map[Key]record.Item) { tb[Key{"POST#p1", "DAY#2025-01-02"}]["commentCount"] = n("2") },
			"attribute POST#p1 DAY#2025-01-02: commentCount = 2, want 1", ""},
		{"a day item not created", func(tb map[Key]record.Item) { delete(tb, Key{"POST#lp", "DAY#2025-01-03"}) },
			"missing POST#lp DAY#2025-01-03:  = , want {commentCount: 1, ttl: 2051308800}", ""},
		{"a day item without its ttl", func(tb map[Key]record.Item) { delete(tb[Key{"POST#p1", "DAY#2025-01-01"}], "ttl") },
			"attribute POST#p1 DAY#2025-01-01: ttl = absent, want 2051136000", ""},
		{"a comment counted into the wrong day", func(tb map[Key]record.Item) {
			tb[Key{"POST#p1", "DAY#2025-01-05"}] = record.Item{"pk": s("POST#p1"), "sk": s("DAY#2025-01-05"), "commentCount": n("1"), "ttl": n("2051481600")}
		}, "attribute POST#p1 DAY#2025-01-05: commentCount = 1, want 0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, table := scenario()
			tc.change(table)
			ms := Oracle(m, table)
			if len(ms) != 1 {
				t.Fatalf("%d mismatches: %v", len(ms), ms)
			}
			want := tc.want
			if tc.cases != "" {
				want += " [application: " + tc.cases + "]"
			}
			if got := ms[0].String(); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// On generated workloads with the class on, the oracle's counters, sums and mirrors are
// the ones a brute-force reading of rules/social.yaml gives: for every target, every live
// item is asked whether it is a source linked to it.
func TestOracleAgreesWithBruteForce(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		f := Everything()
		f.Application = true
		p := Generate(seed, 2500, f, Options{PutOverCopies: true, Relink: true, SparseComments: seed != 3})
		o := &oracle{m: p.Model}
		o.expect()
		type item struct {
			k  Key
			it record.Item
		}
		var all []item
		p.Model.Items(func(k Key, it record.Item) { all = append(all, item{k, it}) })
		checked := 0
		for _, t0 := range all {
			kind := KindOf(t0.k, t0.it)
			want := map[string]*big.Rat{}
			for _, a := range counterAttrs[kind] {
				want[a] = new(big.Rat)
			}
			roles := map[string]bool{} // a group's: the different roles of its memberships
			id := strings.SplitN(t0.k.PK, "#", 2)[1]
			for _, src := range all {
				sk, sit := src.k, src.it
				switch kind {
				case User:
					if KindOf(sk, sit) == Post && str(sit["userId"]) == id && str(sit["status"]) == "published" {
						want["postCount"].Add(want["postCount"], big.NewRat(1, 1))
					}
					if KindOf(sk, sit) == Comment && str(sit["gsi1pk"]) == t0.k.PK {
						want["commentCount"].Add(want["commentCount"], big.NewRat(1, 1))
					}
				case Post:
					if KindOf(sk, sit) == Comment && strings.TrimPrefix(sk.PK, "POST#") == id {
						want["commentCount"].Add(want["commentCount"], big.NewRat(1, 1))
					}
				case Group:
					if KindOf(sk, sit) == Membership && sk.SK == "GROUP#"+id {
						want["memberCount"].Add(want["memberCount"], big.NewRat(1, 1))
						if r, ok := sit["role"].(*types.AttributeValueMemberS); ok {
							roles[r.Value] = true
						}
					}
				case Folder:
					if KindOf(sk, sit) == File && sk.PK == t0.k.PK {
						want["fileCount"].Add(want["fileCount"], big.NewRat(1, 1))
						large := false
						if size, ok := sit["size"].(*types.AttributeValueMemberN); ok { // absent: adds nothing, not large
							r, _ := new(big.Rat).SetString(size.Value)
							want["totalBytes"].Add(want["totalBytes"], r)
							large = r.Cmp(big.NewRat(1<<19, 1)) >= 0
						}
						if pin, ok := sit["pinned"].(*types.AttributeValueMemberBOOL); large || ok && pin.Value {
							want["largeFileCount"].Add(want["largeFileCount"], big.NewRat(1, 1))
						}
					}
				}
			}
			if kind == Group {
				want["roleCount"] = big.NewRat(int64(len(roles)), 1)
			}
			for a, v := range want {
				got, _ := new(big.Rat).SetString(o.want[t0.k][a].(*types.AttributeValueMemberN).Value)
				if got.Cmp(v) != 0 {
					t.Errorf("seed %d: %v %s: oracle %s, brute force %s (cases %v)", seed, t0.k, a, got.FloatString(2), v.FloatString(2), p.Model.Cases(t0.k))
				}
				checked++
			}
			// Mirrors: a post with a userId has one, a post without none.
			if kind == Post {
				uid := str(t0.it["userId"])
				_, mirrored := o.want[Key{"USER#" + uid, "POST#" + id}]
				if mirrored != (uid != "") {
					t.Errorf("seed %d: post %v (userId %q): mirror expected %v", seed, t0.k, uid, mirrored)
				}
			}
		}
		// Every expected UserPost belongs to a live post that names its user.
		for k := range o.want {
			if strings.HasPrefix(k.PK, "USER#") && strings.HasPrefix(k.SK, "POST#") {
				it, ok := p.Model.Item(Key{"POST#" + strings.TrimPrefix(k.SK, "POST#"), "METADATA"})
				if !ok || "USER#"+str(it["userId"]) != k.PK {
					t.Errorf("seed %d: mirror %v of no post of that user", seed, k)
				}
			}
		}
		if checked == 0 || p.Application.Total() == 0 {
			t.Fatalf("seed %d: nothing checked", seed)
		}
	}
}

// Result.Problems groups the oracle's mismatches by the case that touched the item, and
// lists those no case touched first.
func TestOracleProblems(t *testing.T) {
	const rp = "re-put (counters 0, _dn omitted)"
	ms := []Mismatch{
		{Key: Key{"POST#p1", "METADATA"}, What: "attribute", Attr: "commentCount", Got: "0", Want: "2", Cases: []string{rp, caseCounterRemove}},
		{Key: Key{"POST#p2", "METADATA"}, What: "attribute", Attr: "commentCount", Got: "0", Want: "2", Cases: []string{rp}},
		{Key: Key{"USER#u1", "PROFILE"}, What: "attribute", Attr: "postCount", Got: "3", Want: "2"},
	}
	got := strings.Join(oracleProblems(ms), "\n")
	want := strings.Join([]string{
		"oracle: 3 mismatches, 1 of them on items no application-class case touched",
		"oracle: 1 on items the application touched by: counter REMOVEd",
		"oracle: 2 on items the application touched by: " + rp,
		"oracle: attribute USER#u1 PROFILE: postCount = 3, want 2",
		"oracle: attribute POST#p1 METADATA: commentCount = 0, want 2 [application: " + rp + "; counter REMOVEd]",
		"oracle: attribute POST#p2 METADATA: commentCount = 0, want 2 [application: " + rp + "]",
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := oracleProblems(ms[2:]); len(got) != 1 || !strings.HasPrefix(got[0], "oracle: attribute USER#u1") {
		t.Errorf("without cases: %v", got)
	}
}

// The social rules with sparse comment keys: Comment gains the sparse list, nothing else
// changes, a comment without author keys is a Comment, one with a wrong key is not.
func TestSparseComments(t *testing.T) {
	social, err := os.ReadFile("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := SparseComments(social)
	if err != nil {
		t.Fatal(err)
	}
	if len(out)-len(social) != len("    sparse: [gsi1pk, gsi1sk]\n") ||
		!strings.Contains(string(out), "    gsi1sk: \"COMMENT#{createdAt}\"\n    sparse: [gsi1pk, gsi1sk]\n") {
		t.Fatalf("derived rules:\n%s", out)
	}
	set, err := rules.ParseSet("x.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gsi1pk string // "" for none
		want   string // the entity, "" for none
	}{{"", "Comment"}, {"USER#u1", "Comment"}, {"TEAM#t1", ""}} {
		it := record.Item{"pk": s("POST#p"), "sk": s("COMMENT#2025-01-01T00:00:00Z#c")}
		if tc.gsi1pk != "" {
			it["gsi1pk"], it["gsi1sk"] = s(tc.gsi1pk), s("COMMENT#2025-01-01T00:00:00Z")
		}
		got := ""
		if e, _ := set.Match(it, nil); e != nil {
			got = e.Name
		}
		if got != tc.want {
			t.Errorf("gsi1pk %q: entity %q, want %q", tc.gsi1pk, got, tc.want)
		}
	}
	if _, err := SparseComments([]byte("version: 1\n")); err == nil {
		t.Error("rules without a Comment entity gave no error")
	}
}

// With sparse comment keys the application removes and restores them, always both: a
// comment has gsi1pk exactly when it has gsi1sk, and never an empty one.
func TestSparseWorkload(t *testing.T) {
	p := Generate(4, 3000, Faults{Application: true}, Options{PutOverCopies: true, Relink: true, SparseComments: true})
	if p.Application.SparseRemoved == 0 || p.Application.SparseRestored == 0 {
		t.Fatalf("no sparse case: %s", p.Application)
	}
	m := NewModel()
	anonymous := 0
	for _, op := range p.Ops {
		m.Apply(op)
		k := opKey(op)
		it, live := m.Item(k)
		if !live || KindOf(k, it) != Comment {
			continue
		}
		pk, hasSK := it["gsi1pk"], it["gsi1sk"] != nil
		if (pk != nil) != hasSK || (pk != nil && str(pk) == "") {
			t.Fatalf("comment %v: %s", k, render(it))
		}
		if pk == nil {
			anonymous++
		}
	}
	if anonymous == 0 {
		t.Error("no comment without author keys")
	}
	if off := Generate(4, 3000, Faults{Application: true}, Options{PutOverCopies: true, Relink: true}); off.Application.SparseRemoved != 0 {
		t.Errorf("sparse cases without SparseComments: %s", off.Application)
	}
}
