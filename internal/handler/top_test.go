package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
)

// topRules embed the 3 newest visible comments of a post, with their author's name (a
// copy from the user, so a rename reaches the embedded comment) and text, and the 2 highest
// offers of a product (offers live in their seller's partition and reach the product
// through gsi1). The post also counts its comments: the lists' writes must not disturb the
// counter's guards.
const topRules = `version: 1
entities:
  User:    {pk: "USER#{userId}", sk: PROFILE, attributes: [name]}
  Post:    {pk: "POST#{postId}", sk: METADATA, attributes: [recentComments, commentCount]}
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", gsi2pk: "USER#{userId}", gsi2sk: "COMMENT#{commentId}", attributes: [createdAt, status, body, userName]}
  Product: {pk: "PRODUCT#{productId}", sk: PRODUCT, attributes: [topOffers]}
  Offer:   {pk: "SELLER#{sellerId}", sk: "OFFER#{offerId}", gsi1pk: "PRODUCT#{productId}", gsi1sk: "OFFER#{offerId}", attributes: [price, note]}
rules:
  - name: comment-author
    copy: {from: User, to: Comment, set: {userName: name}}
  - name: post-recent-comments
    top: {of: Comment, into: Post, by: createdAt, n: 3, attribute: recentComments, set: {author: userName, text: body}, where: {status: visible}}
  - name: post-comment-count
    count: {of: Comment, into: Post, attribute: commentCount}
  - name: product-top-offers
    top: {of: Offer, into: Product, by: price, n: 2, attribute: topOffers, set: {note: note}}
`

func newTopEnv(t *testing.T) *env {
	e := newEnvRules(t, apply.Options{}, topRules)
	e.api.failAfter = -1
	return e
}

func (e *env) topComment(post, id, user, at, status, body string) {
	e.put(map[string]string{"pk": "POST#" + post, "sk": "COMMENT#" + id, "gsi2pk": "USER#" + user, "gsi2sk": "COMMENT#" + id,
		"createdAt": at, "status": status, "body": body})
}

// topOf is an entry as the test expects it: its source's sort key and what it shows.
type topOf struct{ sk, shown string }

// checkTops compares every post's and product's list with the one computed here from a
// scan of the sources, and runs `denorm verify`.
func (e *env) checkTops() {
	e.t.Helper()
	items := e.scan()
	names := map[string]string{}
	for _, it := range items {
		if s(it["sk"]) == "PROFILE" {
			names[s(it["pk"])] = s(it["name"])
		}
	}
	type src struct {
		by       string
		num      int
		key, sk  string
		shown    string
		numbered bool
	}
	srcs := map[string][]src{} // target pk -> its sources
	for _, it := range items {
		pk, sk := s(it["pk"]), s(it["sk"])
		switch {
		case strings.HasPrefix(sk, "COMMENT#") && s(it["status"]) == "visible" && it["createdAt"] != nil:
			shown := names[s(it["gsi2pk"])] + ": " + s(it["body"])
			srcs[pk] = append(srcs[pk], src{by: s(it["createdAt"]), key: pk + "\x00" + sk, sk: sk, shown: shown})
		case strings.HasPrefix(sk, "OFFER#") && it["price"] != nil:
			srcs[s(it["gsi1pk"])] = append(srcs[s(it["gsi1pk"])], src{num: n(it["price"]), numbered: true, key: pk + "\x00" + sk, sk: sk, shown: s(it["note"])})
		}
	}
	bad := 0
	for _, it := range items {
		pk, sk := s(it["pk"]), s(it["sk"])
		attr, max := "", 0
		switch sk {
		case "METADATA":
			attr, max = "recentComments", 3
		case "PRODUCT":
			attr, max = "topOffers", 2
		default:
			continue
		}
		ss := srcs[pk]
		sort.Slice(ss, func(a, b int) bool {
			x, y := ss[a], ss[b]
			if x.numbered && x.num != y.num {
				return x.num > y.num
			}
			if !x.numbered && x.by != y.by {
				return x.by > y.by
			}
			return x.key > y.key
		})
		var want []topOf
		for i := 0; i < len(ss) && i < max; i++ {
			want = append(want, topOf{ss[i].sk, ss[i].shown})
		}
		got := e.topEntries(it[attr], attr == "topOffers")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			if bad < 10 {
				e.t.Errorf("%s %s: %v, want %v", pk, attr, got, want)
			}
			bad++
		}
	}
	if bad > 0 {
		e.t.Fatalf("%d lists differ from their sources", bad)
	}
	e.verifyRules(topRules)
}

// topEntries reads a stored list as the test shows it.
func (e *env) topEntries(v types.AttributeValue, offers bool) []topOf {
	e.t.Helper()
	if v == nil {
		return nil
	}
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		e.t.Fatalf("list attribute is %T", v)
	}
	var out []topOf
	for _, ev := range l.Value {
		m := ev.(*types.AttributeValueMemberM).Value
		shown := s(m["author"]) + ": " + s(m["text"])
		if offers {
			shown = s(m["note"])
		}
		out = append(out, topOf{s(m["sk"]), shown})
	}
	return out
}

// verifyRules runs `denorm verify` with rules text on the table.
func (e *env) verifyRules(text string) {
	e.t.Helper()
	f, err := rules.Parse("test.yaml", []byte(text))
	if err != nil {
		e.t.Fatal(err)
	}
	ev, err := ops.NewEvaluator(f, "")
	if err != nil {
		e.t.Fatal(err)
	}
	rep, err := ops.Run(context.Background(), ops.Config{API: e.db, Table: e.table, Eval: ev, Segments: 2, PageSize: 100, Mode: "verify"})
	if err != nil {
		e.t.Fatal(err)
	}
	if !rep.Clean() {
		var b strings.Builder
		rep.WriteText(&b)
		e.t.Fatalf("verify is not clean:\n%s", b.String())
	}
}

// Comments inserted (newest first in the list), a listed comment deleted from a full
// list (one read and one query refill it), an unlisted one deleted (one read, no query, no
// write), an author renamed (the embedded name follows), a listed comment hidden, the
// post inserted after its comments (its INSERT fills it), an application's PutItem of the
// post without the list, and one that writes back a stale list it read earlier.
func TestTopFollowsSources(t *testing.T) {
	e := newTopEnv(t)
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.put(map[string]string{"pk": "USER#u2", "sk": "PROFILE", "name": "Bob"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA"})
	e.drain(100, e.lambdaLike)
	for i := 1; i <= 5; i++ {
		e.topComment("p1", fmt.Sprintf("c%d", i), fmt.Sprintf("u%d", 1+i%2), fmt.Sprintf("2026-01-0%dT10:00:00Z", i), "visible", fmt.Sprintf("text %d", i))
	}
	e.drain(100, e.lambdaLike)
	e.checkTops()
	if got := e.topEntries(e.get("POST#p1", "METADATA")["recentComments"], false); fmt.Sprint(got) != "[{COMMENT#c5 Bob: text 5} {COMMENT#c4 Ann: text 4} {COMMENT#c3 Bob: text 3}]" {
		t.Fatalf("recentComments %v", got)
	}

	// A listed comment deleted from the full list: c2 must come back in, which only a
	// query of the post's comments can know.
	e.del("POST#p1", "COMMENT#c4")
	gets, queries := e.reads()
	t.Logf("reads per delete of a listed source from a full list: %d GetItem + %d Query pages", gets, queries)
	if gets != 1 || queries != 1 {
		t.Errorf("delete of a listed comment: %d GetItem, %d Query pages; want 1 and 1", gets, queries)
	}
	e.drain(100, e.lambdaLike)
	e.checkTops()

	// An unlisted comment deleted: the read shows it is not listed, nothing is written.
	e.del("POST#p1", "COMMENT#c1")
	if gets, queries := e.reads(); gets != 1 || queries != 0 {
		t.Errorf("delete of an unlisted comment: %d GetItem, %d Query pages; want 1 and 0", gets, queries)
	}
	e.drain(100, e.lambdaLike)
	e.checkTops()

	// The author renamed: the copy reaches the comments, their records the list.
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Bea"})
	e.drain(100, e.lambdaLike)
	e.drain(100, e.lambdaLike)
	e.checkTops()
	if !strings.Contains(fmt.Sprint(e.topEntries(e.get("POST#p1", "METADATA")["recentComments"], false)), "Bea") {
		t.Errorf("the renamed author is not in the list: %v", e.get("POST#p1", "METADATA")["recentComments"])
	}

	// A listed comment hidden (out of the where), then shown again.
	e.topComment("p1", "c5", "u2", "2026-01-05T10:00:00Z", "hidden", "text 5")
	e.drain(100, e.lambdaLike)
	e.checkTops()
	e.topComment("p1", "c5", "u2", "2026-01-05T10:00:00Z", "visible", "text 5")
	e.drain(100, e.lambdaLike)
	e.checkTops()

	// Comments of a post written before the post: its INSERT fills the list.
	e.topComment("p2", "d1", "u1", "2026-02-01T10:00:00Z", "visible", "first")
	e.topComment("p2", "d2", "u1", "2026-02-02T10:00:00Z", "visible", "second")
	e.drain(100, e.lambdaLike)
	e.put(map[string]string{"pk": "POST#p2", "sk": "METADATA"})
	e.drain(100, e.lambdaLike)
	e.checkTops()

	// The application replaces the post without the list: recomputed.
	e.put(map[string]string{"pk": "POST#p2", "sk": "METADATA"})
	e.drain(100, e.lambdaLike)
	e.checkTops()

	// The application read the post, a comment came, and it writes back what it read: the
	// list went back while its version did not advance, so it is recomputed.
	stale := e.get("POST#p1", "METADATA")
	e.topComment("p1", "c9", "u1", "2026-01-09T10:00:00Z", "visible", "newest")
	e.drain(100, e.lambdaLike)
	if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &e.table, Item: stale}); err != nil {
		t.Fatal(err)
	}
	e.drain(100, e.lambdaLike)
	e.checkTops()

	// Offers across partitions, by number: the highest two, ties by key.
	e.put(map[string]string{"pk": "PRODUCT#x", "sk": "PRODUCT"})
	e.drain(100, e.lambdaLike)
	for i, p := range []int{30, 10, 30, 20} {
		e.put(map[string]string{"pk": "SELLER#s1", "sk": fmt.Sprintf("OFFER#o%d", i), "gsi1pk": "PRODUCT#x", "gsi1sk": fmt.Sprintf("OFFER#o%d", i),
			"price": strconv.Itoa(p), "note": fmt.Sprintf("offer %d", i)})
	}
	e.drain(100, e.lambdaLike)
	e.checkTops()
	e.del("SELLER#s1", "OFFER#o2")
	e.drain(100, e.lambdaLike)
	e.checkTops()
	// Every source gone: the list is empty.
	for _, o := range []string{"o0", "o1", "o3"} {
		e.del("SELLER#s1", "OFFER#"+o)
	}
	e.drain(100, e.lambdaLike)
	e.checkTops()
}

// topWorkload writes comments and offers: inserts, new times and prices, status flips,
// moves between products, deletes and renames, with their targets written among them.
func (e *env) topWorkload(seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 12))
	for i := 0; i < ops; i++ {
		post, c, u := fmt.Sprintf("p%d", rng.IntN(3)), fmt.Sprintf("c%d", rng.IntN(14)), fmt.Sprintf("u%d", rng.IntN(3))
		prod, o := fmt.Sprintf("x%d", rng.IntN(3)), fmt.Sprintf("o%d", rng.IntN(10))
		switch k := rng.IntN(14); {
		case k < 5:
			st := "visible"
			if rng.IntN(4) == 0 {
				st = "hidden"
			}
			e.topComment(post, c, u, fmt.Sprintf("2026-01-%02dT00:00:00Z", 1+rng.IntN(28)), st, fmt.Sprintf("body %d", rng.IntN(5)))
		case k < 7:
			e.del("POST#"+post, "COMMENT#"+c)
		case k < 9:
			e.put(map[string]string{"pk": "SELLER#s" + o, "sk": "OFFER#" + o, "gsi1pk": "PRODUCT#" + prod, "gsi1sk": "OFFER#" + o,
				"price": strconv.Itoa(1 + rng.IntN(40)), "note": fmt.Sprintf("n%d", rng.IntN(4))})
		case k < 10:
			e.del("SELLER#s"+o, "OFFER#"+o)
		case k < 11:
			e.put(map[string]string{"pk": "USER#" + u, "sk": "PROFILE", "name": fmt.Sprintf("name%d", rng.IntN(6))})
		case k < 12:
			e.put(map[string]string{"pk": "POST#" + post, "sk": "METADATA"})
		case k < 13:
			e.put(map[string]string{"pk": "PRODUCT#" + prod, "sk": "PRODUCT"})
		default:
			e.del("POST#"+post, "METADATA")
		}
	}
}

// Every batch is delivered twice: the list is a function of the sources, so applying a
// batch again changes nothing.
func TestTopDeliveredTwice(t *testing.T) {
	e := newTopEnv(t)
	e.topWorkload(1, 300)
	e.drain(20, func(b []json.RawMessage) { e.lambdaLike(b); e.lambdaLike(b) })
	e.drain(20, e.lambdaLike) // the copies' own records
	e.checkTops()
}

// Every batch crashes after k writes for every k, each time delivered again whole.
func TestTopCrashAtEveryWrite(t *testing.T) {
	e := newTopEnv(t)
	e.topWorkload(2, 200)
	e.drain(15, e.crashAtEveryWrite)
	e.drain(20, e.lambdaLike)
	e.checkTops()
}

// A batch stops after k writes and Lambda resumes it at the record it reports.
func TestTopCrashThenResumed(t *testing.T) {
	e := newTopEnv(t)
	e.topWorkload(3, 250)
	e.drain(25, e.crashed(true))
	e.drain(20, e.lambdaLike)
	e.checkTops()
}
