package handler_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/value"
)

// extremeRules keep the latest visible comment time and the most likes of a post (the
// comments are in the post's partition), and the cheapest and highest offer of a product
// (offers live in their seller's partition and reach the product through gsi1). The post
// also counts its comments: the extremes' writes must not disturb the counter's guards.
const extremeRules = `version: 1
entities:
  Post:    {pk: "POST#{postId}", sk: METADATA, attributes: [lastCommentAt, topLikes, commentCount]}
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt, status, likes]}
  Product: {pk: "PRODUCT#{productId}", sk: PRODUCT, attributes: [cheapest, highest, latestPrice]}
  Offer:   {pk: "SELLER#{sellerId}", sk: "OFFER#{offerId}", gsi1pk: "PRODUCT#{productId}", gsi1sk: "OFFER#{offerId}", attributes: [price, listedAt]}
rules:
  - name: post-last-comment
    max: {of: Comment, into: Post, value: createdAt, attribute: lastCommentAt, where: {status: visible}}
  - name: post-top-likes
    max: {of: Comment, into: Post, value: likes, attribute: topLikes}
  - name: post-comment-count
    count: {of: Comment, into: Post, attribute: commentCount}
  - name: product-cheapest
    min: {of: Offer, into: Product, value: price, attribute: cheapest}
  - name: product-highest
    max: {of: Offer, into: Product, value: price, attribute: highest}
  - name: product-latest-price
    latest: {of: Offer, into: Product, by: listedAt, set: {latestPrice: price}}
`

func newExtremeEnv(t *testing.T) *env {
	e := newEnvRules(t, apply.Options{}, extremeRules)
	e.api.failAfter = -1
	return e
}

func (e *env) visible(post, id, at string, likes int) {
	e.put(map[string]string{"pk": "POST#" + post, "sk": "COMMENT#" + id, "createdAt": at, "status": "visible", "likes": strconv.Itoa(likes)})
}

// offer puts an offer listed on a day that follows from its price: offers of one price
// tie, which latest breaks by the offer's key.
func (e *env) offer(seller, id, product string, price int) {
	e.put(map[string]string{"pk": "SELLER#" + seller, "sk": "OFFER#" + id, "gsi1pk": "PRODUCT#" + product, "gsi1sk": "OFFER#" + id,
		"price": strconv.Itoa(price), "listedAt": fmt.Sprintf("2026-01-%02dT00:00:00Z", price%28+1)})
}

// checkExtremes compares every target's extremes with the extremes of its sources in a
// scan: what `denorm verify` expects.
func (e *env) checkExtremes() {
	e.t.Helper()
	items := e.scan()
	want := map[string]types.AttributeValue{} // target pk + "/" + attribute -> value
	type latestSrc struct {
		at, key string
		price   types.AttributeValue
	}
	latestOf := map[string]latestSrc{}
	better := func(k string, max bool, v types.AttributeValue) {
		c := 0
		if cur, ok := want[k]; ok {
			c = value.Compare(v, cur)
		} else {
			c = 1
			if !max {
				c = -1
			}
		}
		if (max && c > 0) || (!max && c < 0) {
			want[k] = v
		}
	}
	for _, it := range items {
		pk, sk := s(it["pk"]), s(it["sk"])
		switch {
		case strings.HasPrefix(sk, "COMMENT#"):
			if s(it["status"]) == "visible" && it["createdAt"] != nil {
				better(pk+"/lastCommentAt", true, it["createdAt"])
			}
			if it["likes"] != nil {
				better(pk+"/topLikes", true, it["likes"])
			}
		case strings.HasPrefix(sk, "OFFER#"):
			if it["price"] != nil {
				better(s(it["gsi1pk"])+"/cheapest", false, it["price"])
				better(s(it["gsi1pk"])+"/highest", true, it["price"])
			}
			if at := s(it["listedAt"]); at != "" {
				k, cur := s(it["gsi1pk"]), latestOf[s(it["gsi1pk"])]
				if key := pk + "\x00" + sk; at > cur.at || (at == cur.at && key > cur.key) {
					latestOf[k] = latestSrc{at, key, it["price"]}
				}
			}
		}
	}
	for k, l := range latestOf {
		if l.price != nil {
			want[k+"/latestPrice"] = l.price
		}
	}
	bad := 0
	for _, it := range items {
		pk, sk := s(it["pk"]), s(it["sk"])
		var attrs []string
		switch sk {
		case "METADATA":
			attrs = []string{"lastCommentAt", "topLikes"}
		case "PRODUCT":
			attrs = []string{"cheapest", "highest", "latestPrice"}
		}
		for _, a := range attrs {
			got, exp := it[a], want[pk+"/"+a]
			if (got == nil) != (exp == nil) || (got != nil && value.Compare(got, exp) != 0) {
				if bad < 10 {
					e.t.Errorf("%s %s %s = %s, want %s", pk, sk, a, show(got), show(exp))
				}
				bad++
			}
		}
	}
	if bad > 0 {
		e.t.Fatalf("%d extremes differ from their sources", bad)
	}
	e.verifyClean()
}

// verifyClean runs `denorm verify` on the table: every extreme equals what it computes
// from the sources.
func (e *env) verifyClean() {
	e.t.Helper()
	e.verifyRules(extremeRules)
}

func show(v types.AttributeValue) string {
	switch x := v.(type) {
	case nil:
		return "absent"
	case *types.AttributeValueMemberN:
		return x.Value
	case *types.AttributeValueMemberS:
		return strconv.Quote(x.Value)
	}
	return fmt.Sprintf("%T", v)
}

// reads applies the pending records as one batch and returns the GetItem and Query
// requests (pages) it made.
func (e *env) reads() (gets, queries int64) {
	e.t.Helper()
	g0, q0 := e.api.gets.Load(), e.api.queries.Load()
	e.lambdaLike(e.records())
	return e.api.gets.Load() - g0, e.api.queries.Load() - q0
}

// Sources inserted, the extreme deleted (recomputed), lowered (recomputed), moved to
// another target (both recomputed or raised), a non-extreme deleted (one read, no query),
// the last source deleted (attribute removed), and a target inserted after its sources
// (filled by its INSERT's recompute).
func TestExtremesFollowSources(t *testing.T) {
	e := newExtremeEnv(t)
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA"})
	e.put(map[string]string{"pk": "PRODUCT#x", "sk": "PRODUCT"})
	e.put(map[string]string{"pk": "PRODUCT#y", "sk": "PRODUCT"})
	e.drain(100, e.lambdaLike)
	e.visible("p1", "c1", "2026-01-01T10:00:00Z", 3)
	e.visible("p1", "c2", "2026-01-03T10:00:00Z", 9)
	e.visible("p1", "c3", "2026-01-02T10:00:00Z", 1)
	e.offer("s1", "o1", "x", 30)
	e.offer("s2", "o2", "x", 10)
	e.offer("s2", "o3", "x", 20)
	e.drain(100, e.lambdaLike)
	e.checkExtremes()
	if got := s(e.get("POST#p1", "METADATA")["lastCommentAt"]); got != "2026-01-03T10:00:00Z" {
		t.Fatalf("lastCommentAt %q", got)
	}
	if got := e.get("PRODUCT#x", "PRODUCT")["latestPrice"]; n(got) != 20 { // o3, listed on the 21st
		t.Fatalf("latestPrice %s, want 20", show(got))
	}

	// The latest comment (also the most liked) deleted: one read and one query per rule.
	e.del("POST#p1", "COMMENT#c2")
	gets, queries := e.reads()
	t.Logf("reads per delete of a current extreme: %d GetItem + %d Query pages for 2 max rules (%.1f + %.1f per rule)", gets, queries, float64(gets)/2, float64(queries)/2)
	if gets != 2 || queries != 2 {
		t.Errorf("delete of the extreme of 2 rules: %d GetItem, %d Query pages; want 2 and 2", gets, queries)
	}
	e.drain(100, e.lambdaLike)
	e.checkExtremes()

	// A comment that holds neither extreme deleted: one read per rule, no query.
	e.visible("p1", "c4", "2026-01-04T10:00:00Z", 7)
	e.drain(100, e.lambdaLike)
	e.del("POST#p1", "COMMENT#c3")
	if gets, queries := e.reads(); gets != 2 || queries != 0 {
		t.Errorf("delete of a non-extreme: %d GetItem, %d Query pages; want 2 and 0", gets, queries)
	}
	e.drain(100, e.lambdaLike)
	e.checkExtremes()

	// The highest offer lowered below another, the cheapest moved to another product.
	e.offer("s1", "o1", "x", 15)
	e.offer("s2", "o2", "y", 10)
	e.drain(100, e.lambdaLike)
	e.checkExtremes()
	if it := e.get("PRODUCT#x", "PRODUCT"); n(it["highest"]) != 20 || n(it["cheapest"]) != 15 {
		t.Errorf("product x: highest %s cheapest %s, want 20 and 15", show(it["highest"]), show(it["cheapest"]))
	}

	// The last sources gone: the attributes are removed.
	e.del("SELLER#s2", "OFFER#o2")
	e.del("POST#p1", "COMMENT#c1")
	e.del("POST#p1", "COMMENT#c4")
	e.drain(100, e.lambdaLike)
	e.checkExtremes()
	if it := e.get("PRODUCT#y", "PRODUCT"); it["cheapest"] != nil || it["highest"] != nil {
		t.Errorf("product y without offers holds %v", it)
	}
	if it := e.get("POST#p1", "METADATA"); it["lastCommentAt"] != nil || it["topLikes"] != nil {
		t.Errorf("post p1 without comments holds %v", it)
	}

	// Offers of a product written before the product: its INSERT fills it.
	e.offer("s3", "o4", "z", 7)
	e.offer("s3", "o5", "z", 4)
	e.drain(100, e.lambdaLike)
	e.put(map[string]string{"pk": "PRODUCT#z", "sk": "PRODUCT"})
	e.drain(100, e.lambdaLike)
	e.checkExtremes()
	// The application replaces it without the attributes: recomputed again.
	e.put(map[string]string{"pk": "PRODUCT#z", "sk": "PRODUCT"})
	e.drain(100, e.lambdaLike)
	e.checkExtremes()
}

// extremeWorkload writes comments and offers: inserts, value changes, status flips,
// moves between products and deletes, with their targets written among them.
func (e *env) extremeWorkload(seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 11))
	for i := 0; i < ops; i++ {
		post, c := fmt.Sprintf("p%d", rng.IntN(3)), fmt.Sprintf("c%d", rng.IntN(12))
		prod, o := fmt.Sprintf("x%d", rng.IntN(3)), fmt.Sprintf("o%d", rng.IntN(12))
		switch k := rng.IntN(12); {
		case k < 4:
			st := "visible"
			if rng.IntN(3) == 0 {
				st = "hidden"
			}
			e.put(map[string]string{"pk": "POST#" + post, "sk": "COMMENT#" + c, "status": st,
				"createdAt": fmt.Sprintf("2026-01-%02dT00:00:00Z", 1+rng.IntN(28)), "likes": strconv.Itoa(rng.IntN(50))})
		case k < 6:
			e.del("POST#"+post, "COMMENT#"+c)
		case k < 9:
			e.offer("s"+o, o, prod, 1+rng.IntN(100)) // a new price, often another product
		case k < 11:
			e.del("SELLER#s"+o, "OFFER#"+o)
		case rng.IntN(2) == 0:
			e.put(map[string]string{"pk": "POST#" + post, "sk": "METADATA"})
		default:
			e.put(map[string]string{"pk": "PRODUCT#" + prod, "sk": "PRODUCT"})
		}
	}
}

// Every batch is delivered twice: raises are idempotent and recomputes read the table.
func TestExtremesDeliveredTwice(t *testing.T) {
	e := newExtremeEnv(t)
	e.extremeWorkload(1, 300)
	e.drain(20, func(b []json.RawMessage) { e.lambdaLike(b); e.lambdaLike(b) })
	e.checkExtremes()
}

// Every batch crashes after k writes for every k, each time delivered again whole.
func TestExtremesCrashAtEveryWrite(t *testing.T) {
	e := newExtremeEnv(t)
	e.extremeWorkload(2, 200)
	e.drain(15, e.crashAtEveryWrite)
	e.checkExtremes()
}

// A batch stops after k writes and Lambda resumes it at the record it reports.
func TestExtremesCrashThenResumed(t *testing.T) {
	e := newExtremeEnv(t)
	e.extremeWorkload(3, 250)
	e.drain(25, e.crashed(true))
	e.checkExtremes()
}

// A recompute reads every page of its query: comments of 300 KB each put the partition
// over the 1 MB a Query page reads.
func TestExtremeRecomputeReadsEveryPage(t *testing.T) {
	e := newExtremeEnv(t)
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA"})
	big := strings.Repeat("x", 300_000)
	for i := 1; i <= 6; i++ {
		e.put(map[string]string{"pk": "POST#p1", "sk": fmt.Sprintf("COMMENT#c%d", i), "status": "visible",
			"createdAt": fmt.Sprintf("2026-01-0%dT00:00:00Z", i), "likes": strconv.Itoa(i), "text": big})
	}
	e.drain(100, e.lambdaLike)
	e.del("POST#p1", "COMMENT#c6")
	gets, queries := e.reads()
	t.Logf("delete of the extreme over 1.8 MB of comments: %d GetItem, %d Query pages", gets, queries)
	if queries < 4 {
		t.Errorf("%d Query pages for 2 rules over 1.8 MB, want at least 2 each", queries)
	}
	e.drain(100, e.lambdaLike)
	e.checkExtremes()
	if it := e.get("POST#p1", "METADATA"); n(it["topLikes"]) != 5 {
		t.Errorf("topLikes %s, want 5", show(it["topLikes"]))
	}
}

// bucketExtremeRules keep, per post and UTC day, the last comment's time and the fewest
// likes of a comment (max and min into a time bucket, created by the first source, with a
// ttl). No count: the day items are created by the max and min alone.
const bucketExtremeRules = `version: 1
entities:
  Post:    {pk: "POST#{postId}", sk: METADATA}
  PostDay: {pk: "POST#{postId}", sk: "DAY#{createdAt:day}", attributes: [lastCommentAt, fewestLikes]}
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt, likes]}
rules:
  - name: day-last-comment
    max: {of: Comment, into: PostDay, value: createdAt, attribute: lastCommentAt, ttl: 30d}
  - name: day-fewest-likes
    min: {of: Comment, into: PostDay, value: likes, attribute: fewestLikes, ttl: 30d}
`

// checkBucketExtremes compares every day item with the max and min of its comments in a
// scan, and its ttl with the end of its day plus 30 days; then runs `denorm verify`.
func (e *env) checkBucketExtremes() {
	e.t.Helper()
	items := e.scan()
	type agg struct {
		last   string
		fewest int
	}
	want := map[string]*agg{} // pk/sk of the day item
	for _, it := range items {
		if !strings.HasPrefix(s(it["sk"]), "COMMENT#") || it["createdAt"] == nil {
			continue
		}
		at := s(it["createdAt"])
		k := s(it["pk"]) + "/DAY#" + at[:10]
		a := want[k]
		if a == nil {
			a = &agg{fewest: 1 << 30}
			want[k] = a
		}
		a.last = max(a.last, at)
		if it["likes"] != nil {
			a.fewest = min(a.fewest, n(it["likes"]))
		}
	}
	bad := 0
	seen := map[string]bool{}
	for _, it := range items {
		if !strings.HasPrefix(s(it["sk"]), "DAY#") {
			continue
		}
		k := s(it["pk"]) + "/" + s(it["sk"])
		seen[k] = true
		a := want[k]
		if a == nil {
			a = &agg{fewest: 1 << 30}
		}
		fewest := ""
		if a.fewest < 1<<30 {
			fewest = strconv.Itoa(a.fewest)
		}
		gotFewest := ""
		if it["fewestLikes"] != nil {
			gotFewest = strconv.Itoa(n(it["fewestLikes"]))
		}
		day, _ := time.Parse("2006-01-02", s(it["sk"])[len("DAY#"):])
		if s(it["lastCommentAt"]) != a.last || gotFewest != fewest || n(it["ttl"]) != int(day.Add(24*time.Hour+30*24*time.Hour).Unix()) {
			if bad < 10 {
				e.t.Errorf("%s: lastCommentAt %q fewestLikes %q ttl %d; want %q %q and the day's end + 30d",
					k, s(it["lastCommentAt"]), gotFewest, n(it["ttl"]), a.last, fewest)
			}
			bad++
		}
	}
	for k := range want {
		if !seen[k] {
			e.t.Errorf("day item %s missing", k)
			bad++
		}
	}
	if bad > 0 {
		e.t.Fatalf("%d day items differ from their comments", bad)
	}
	e.verifyRules(bucketExtremeRules)
}

// bucketWorkload writes comments of 3 posts over the last 4 days: inserts, new times (often
// another day: the comment moves between buckets), new likes, deletes.
func (e *env) bucketWorkload(seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 13))
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for i := 0; i < ops; i++ {
		post, c := fmt.Sprintf("p%d", rng.IntN(3)), fmt.Sprintf("c%d", rng.IntN(12))
		if rng.IntN(4) == 0 {
			e.del("POST#"+post, "COMMENT#"+c)
			continue
		}
		at := today.Add(-time.Duration(rng.IntN(4*24*60)) * time.Minute).Format(time.RFC3339)
		e.put(map[string]string{"pk": "POST#" + post, "sk": "COMMENT#" + c, "createdAt": at, "likes": strconv.Itoa(rng.IntN(20))})
	}
}

// max and min into a day bucket: the first comment of a day creates its item with the ttl,
// the day's max leaving (deleted, or moved to another day) is recomputed from one query.
func TestExtremesPerBucket(t *testing.T) {
	e := newEnvRules(t, apply.Options{}, bucketExtremeRules)
	e.api.failAfter = -1
	e.bucketWorkload(1, 150)
	e.drain(20, e.lambdaLike)
	e.checkBucketExtremes()
	e.bucketWorkload(2, 150)
	e.drain(20, func(b []json.RawMessage) { e.lambdaLike(b); e.lambdaLike(b) })
	e.checkBucketExtremes()
	e.bucketWorkload(3, 150)
	e.drain(15, e.crashAtEveryWrite)
	e.checkBucketExtremes()
}
