package chaos

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/workload"
)

func fingerprint(ops []workload.Op) string {
	var b strings.Builder
	for _, op := range ops {
		for _, m := range []map[string]types.AttributeValue{op.Put, op.Del, op.Key, op.Set} {
			b.WriteString(render(m))
		}
		b.WriteString(op.Phase + "\n")
	}
	return b.String()
}

// The same seed gives the same workload; the size is about what was asked; every kind of
// change the suite promises is in it.
func TestGenerate(t *testing.T) {
	a, b := Generate(7, 3000, Everything(), Options{}), Generate(7, 3000, Everything(), Options{})
	if fingerprint(a.Ops) != fingerprint(b.Ops) {
		t.Fatal("the same seed gave different workloads")
	}
	if c := Generate(8, 3000, Everything(), Options{}); fingerprint(c.Ops) == fingerprint(a.Ops) {
		t.Fatal("different seeds gave the same workload")
	}
	if n := len(a.Ops); n < 3000 || n > 3300 {
		t.Errorf("%d operations, want about 3000", n)
	}
	if a.PoisonRecords != 5*a.Rounds || a.Expiries == 0 || a.Model.Expired != a.Expiries {
		t.Errorf("poison %d over %d rounds, expiries %d (model %d)", a.PoisonRecords, a.Rounds, a.Expiries, a.Model.Expired)
	}
	kinds := map[string]int{}
	for _, op := range a.Ops {
		switch {
		case op.Put != nil:
			kinds["put "+kindName(KindOf(keyOf(op.Put), op.Put))]++
		case op.Del != nil:
			kinds["delete "+kindName(KindOf(keyOf(op.Del), nil))]++
		default:
			for attr := range op.Set {
				kinds["update "+attr]++
			}
		}
	}
	for _, want := range []string{"put User", "put Post", "put Comment", "put Group", "put Membership", "put Folder", "put File", "put Stats",
		"delete Comment", "delete Membership", "delete File", "delete Post", "delete User", "delete Group", "delete Folder",
		"update name", "update status", "update userId", "update size", "update ttl", "update email", "update userName"} {
		if kinds[want] == 0 {
			t.Errorf("no %q in the workload: %v", want, kinds)
		}
	}
	// Without the opt-ins the application never replaces a live copy target with PutItem.
	// Live files cross folder-large-file-count's where (any: size gte 524288, or pinned)
	// both ways through each alternative: by a new size and by one removed, sizes on the
	// bound's edge; pinned set to true, to false and removed; and a file both large and
	// pinned loses one of the two (still counted), then the other (out).
	m := NewModel()
	large := func(it record.Item) bool {
		n, ok := it["size"].(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		r, ok := new(big.Rat).SetString(n.Value)
		return ok && r.Cmp(big.NewRat(524288, 1)) >= 0
	}
	pinned := func(it record.Item) bool {
		b, ok := it["pinned"].(*types.AttributeValueMemberBOOL)
		return ok && b.Value
	}
	counted := func(it record.Item) bool { return large(it) || pinned(it) }
	cross := map[string]int{}
	halfway := map[Key]bool{} // files that were both large and pinned and lost one of the two
	for _, op := range a.Ops {
		if op.Put != nil && pinned(op.Put) && KindOf(keyOf(op.Put), op.Put) == File {
			cross["put pinned"]++
		}
	}
	for _, op := range a.Ops {
		if op.Put != nil {
			k := keyOf(op.Put)
			if it, live := m.Item(k); live && (KindOf(k, it) == Comment || KindOf(k, it) == Membership) {
				t.Fatalf("Put over live %s %s", k.PK, k.SK)
			}
		}
		before, live := m.Item(keyOf(op.Key))
		if live && op.Key != nil && KindOf(keyOf(op.Key), before) == File {
			m.Apply(op)
			k := keyOf(op.Key)
			after, _ := m.Item(k)
			switch {
			case !counted(before) && large(after) && !pinned(after):
				cross["enters"]++
			case !counted(before) && pinned(after) && !large(after):
				cross["enters, pinned"]++
			case counted(before) && !counted(after) && large(before) && after["size"] == nil:
				cross["leaves, size removed"]++
			case counted(before) && !counted(after) && large(before):
				cross["leaves, smaller"]++
			case counted(before) && !counted(after) && after["pinned"] == nil:
				cross["leaves, pinned removed"]++
			case counted(before) && !counted(after):
				cross["leaves, pinned false"]++
			case large(before) && pinned(before) && counted(after) && large(after) != pinned(after):
				cross["stays, one of large and pinned lost"]++
				halfway[k] = true
			}
			if halfway[k] && !counted(after) {
				cross["leaves, the other lost"]++
				delete(halfway, k)
			}
			if n, ok := after["size"].(*types.AttributeValueMemberN); ok && (n.Value == "524288" || n.Value == "524287.99") {
				cross["on the edge"]++
			}
			continue
		}
		m.Apply(op)
	}
	for _, want := range []string{"enters", "leaves, size removed", "leaves, smaller", "on the edge", "put pinned", "enters, pinned",
		"leaves, pinned removed", "leaves, pinned false", "stays, one of large and pinned lost", "leaves, the other lost"} {
		if cross[want] == 0 {
			t.Errorf("no file %s folder-large-file-count's where: %v", want, cross)
		}
	}
}

func kindName(k Kind) string {
	return [...]string{"Other", "User", "Post", "Comment", "Group", "Membership", "Folder", "File", "Stats"}[k]
}

func TestModel(t *testing.T) {
	m := NewModel()
	k := Key{"USER#u1", "PROFILE"}
	m.Apply(update(k, "name", "A")) // UpdateItem creates
	m.Apply(update(k, "email", "a@x"))
	it, ok := m.Item(k)
	if !ok || str(it["name"]) != "A" || str(it["email"]) != "a@x" || len(m.Live(User)) != 1 {
		t.Fatalf("after two updates: %v", render(it))
	}
	m.Apply(put("pk", k.PK, "sk", k.SK, "name", "B")) // PutItem replaces
	if it, _ := m.Item(k); it["email"] != nil {
		t.Fatal("Put kept an attribute")
	}
	m.Apply(update(k, "ttl", ttlExpired))
	m.Apply(del(k))
	if _, ok := m.Item(k); ok || len(m.Live(User)) != 0 || m.Expired != 1 {
		t.Fatalf("after expiry: live %v, expired %d", ok, m.Expired)
	}
	f := Key{"FOLDER#f1", "FILE#2025-01-01#x"}
	m.Apply(put("pk", f.PK, "sk", f.SK, "size", "12 kB"))
	if len(m.Live(File)) != 0 {
		t.Fatal("a file with a string size is a File")
	}
}

// The oracle finds nothing in the table it expects, and finds each kind of damage.
func TestOracle(t *testing.T) {
	p := Generate(3, 1500, Everything(), Options{})
	o := &oracle{m: p.Model}
	o.expectAll()
	table := map[Key]record.Item{}
	for k, w := range o.want {
		it := record.Item{"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK}}
		for a, v := range w {
			if v != nil {
				it[a] = v
			}
		}
		table[k] = it
	}
	table[Key{"_dn#m#e1", "_dn#m#e1"}] = record.Item{}
	if ms := Oracle(p.Model, table); len(ms) != 0 {
		t.Fatalf("perfect table: %v", ms[0])
	}
	post := p.Model.Live(Post)[0]
	user := p.Model.Live(User)[0]
	comment := p.Model.Live(Comment)[0]
	table[post]["commentCount"] = &types.AttributeValueMemberN{Value: "999"}
	folder := p.Model.Live(Folder)[0]
	table[folder]["oldestUpload"] = &types.AttributeValueMemberS{Value: "1999-01-01"}
	stats := p.Model.Live(Stats)[0]
	table[stats]["postCount"] = &types.AttributeValueMemberN{Value: "999"}
	commented := comment
	commented.SK = "METADATA"
	delete(table[commented], "lastCommentAt")
	day, _, _ := commentDay(comment)
	table[day]["commentCount"] = &types.AttributeValueMemberN{Value: "999"}
	table[Key{user.PK, "POST#ghost"}] = record.Item{"title": &types.AttributeValueMemberS{Value: "x"}}
	table[Key{"_dn#job#comment-author#x", "_dn#job#"}] = record.Item{}
	delete(table, comment)
	table[user]["unexpected"] = &types.AttributeValueMemberS{Value: "x"}
	for _, k := range p.Model.Live(User) { // a latest post's id from another post
		if table[k]["latestPostId"] != nil {
			table[k]["latestPostId"] = &types.AttributeValueMemberS{Value: "p-other"}
			break
		}
	}
	for _, k := range p.Model.Live(Folder) { // a large file counted twice
		if v, ok := table[k]["largeFileCount"].(*types.AttributeValueMemberN); ok && v.Value != "0" {
			table[k]["largeFileCount"] = &types.AttributeValueMemberN{Value: v.Value + "0"}
			break
		}
	}
	for _, k := range p.Model.Live(Post) { // a list that lost its newest entry
		if l, ok := table[k]["recentComments"].(*types.AttributeValueMemberL); ok && k != commented {
			table[k]["recentComments"] = &types.AttributeValueMemberL{Value: l.Value[1:]}
			break
		}
	}
	got := map[string]bool{}
	for _, m := range Oracle(p.Model, table) {
		got[m.What+" "+m.Attr] = true
	}
	for _, want := range []string{"attribute commentCount", "zombie ", "unfinished job ", "missing ", "attribute unexpected",
		"attribute oldestUpload", "attribute postCount", "attribute lastCommentAt", "attribute recentComments",
		"attribute latestPostId", "attribute largeFileCount"} {
		if !got[want] {
			t.Errorf("the oracle missed %q (found %v)", want, got)
		}
	}
}

func TestEqualAV(t *testing.T) {
	n := func(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }
	for _, tc := range []struct {
		got, want types.AttributeValue
		eq        bool
	}{
		{n("5.1"), n("5.10"), true}, {nil, n("0"), true}, {n("0"), n("0.00"), true}, {nil, n("1"), false},
		{&types.AttributeValueMemberS{Value: "1"}, n("1"), false}, {nil, nil, true}, {n("1"), nil, false},
		{&types.AttributeValueMemberL{}, nil, true}, // a top list that emptied
		{&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"n": n("2.0")}}}},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"n": n("2")}}}}, true},
		{&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"n": n("2"), "x": n("1")}}}},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"n": n("2")}}}}, false},
	} {
		if equalAV(tc.got, tc.want) != tc.eq {
			t.Errorf("equalAV(%s, %s) != %v", renderAV(tc.got), renderAV(tc.want), tc.eq)
		}
	}
}

func sampleRecord(t testing.TB, op record.Op, old, new record.Item) json.RawMessage {
	t.Helper()
	c := record.Change{EventID: "e1", Seq: "000000000000000000042", Op: op, Old: old, New: new,
		Keys: record.Item{"pk": old["pk"], "sk": old["sk"]}, Created: time.Unix(1735689600, 0), SizeBytes: 100,
		Source: "arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/2025"}
	if new != nil {
		c.Keys = record.Item{"pk": new["pk"], "sk": new["sk"]}
	}
	raw, err := record.EncodeChange(c, "", "ddblocal")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Each poison kind fails where it should: the decoder, or the event as a whole.
func TestPoisonRecords(t *testing.T) {
	file := func(kind byte) record.Item {
		return put("pk", VoidFolder+"1", "sk", "FILE#2025-01-01#v1"+string(kind), "size", 1).Put
	}
	h := NewHooks(Faults{Poison: true}, 1)
	for _, kind := range []byte{PoisonBadType, PoisonNoSeq, PoisonTruncated} {
		raw := sampleRecord(t, record.Insert, nil, file(kind))
		bad := h.rewrite(raw)
		_, decErr := record.Decode(bad)
		_, splitErr := record.SplitEvent(record.EncodeEvent([]json.RawMessage{bad}))
		switch kind {
		case PoisonBadType, PoisonNoSeq:
			if decErr == nil || splitErr != nil {
				t.Errorf("%c: decode error %v, event error %v", kind, decErr, splitErr)
			}
		case PoisonTruncated:
			if splitErr == nil {
				t.Errorf("%c: the event still parses", kind)
			}
		}
		if kind == PoisonNoSeq && record.RawSeq(bad) != "" {
			t.Errorf("the sequence number is still there")
		}
	}
	if len(h.Poison()) != 1 {
		t.Errorf("poison seen: %v (the three share a sequence number)", h.Poison())
	}
	// A file whose size is a string is poison as it is.
	h = NewHooks(Faults{Poison: true}, 1)
	good := h.rewrite(sampleRecord(t, record.Insert, nil, put("pk", "FOLDER#f", "sk", "FILE#2025-01-01#x", "size", "12 kB").Put))
	if _, err := record.Decode(good); err != nil || len(h.Poison()) != 1 {
		t.Errorf("string size: decode %v, poison %v", err, h.Poison())
	}
}

// A REMOVE of an item whose ttl passed gets the TTL identity; others are left alone.
func TestHooksExpire(t *testing.T) {
	h := NewHooks(Faults{TTL: true}, 1)
	for _, tc := range []struct {
		ttl  int
		want bool
	}{{ttlExpired, true}, {ttlFuture, false}} {
		old := put("pk", "POST#p1", "sk", "COMMENT#x", "ttl", tc.ttl).Put
		out := h.rewrite(sampleRecord(t, record.Remove, old, nil))
		c, err := record.Decode(out)
		if err != nil || c.TTL != tc.want {
			t.Errorf("ttl %d: TTL %v (error %v), want %v", tc.ttl, c.TTL, err, tc.want)
		}
		if !strings.Contains(string(out), `"awsRegion":"ddblocal"`) {
			t.Errorf("the region changed: %s", out)
		}
	}
}

func TestBudget(t *testing.T) {
	b := newBudget(2)
	got := fmt.Sprint(b.take("a"), b.take("a"), b.take("a"), b.take("b"), b.take(""))
	if got != "true true false true false" {
		t.Fatal(got)
	}
}
