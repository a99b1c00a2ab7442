package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
)

// bucketTopRules keep, per post and UTC day, the newest comment's likes and id (latest)
// and the day's 3 most liked comments (top), each day item created by its first comment
// with a ttl. No other rule creates the day items.
const bucketTopRules = `version: 1
entities:
  Post:    {pk: "POST#{postId}", sk: METADATA}
  PostDay: {pk: "POST#{postId}", sk: "DAY#{createdAt:day}", attributes: [newestLikes, newestId, hottest]}
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt, likes]}
rules:
  - name: day-newest
    latest: {of: Comment, into: PostDay, by: createdAt, set: {newestLikes: likes, newestId: "{commentId}"}, ttl: 30d}
  - name: day-hottest
    top: {of: Comment, into: PostDay, by: likes, n: 3, attribute: hottest, set: {at: createdAt}, ttl: 30d}
`

// checkBucketTops compares every day item with its comments in a scan: the newest one's
// likes and id, the 3 most liked (ties: the greater key first), and its ttl, the end of its
// day plus 30 days; a day with comments has its item. Then `denorm verify` is clean.
func (e *env) checkBucketTops() {
	e.t.Helper()
	items := e.scan()
	type comment struct {
		sk, at string
		likes  int
	}
	days := map[string][]comment{} // pk/sk of the day item
	for _, it := range items {
		if !strings.HasPrefix(s(it["sk"]), "COMMENT#") || it["createdAt"] == nil {
			continue
		}
		at := s(it["createdAt"])
		k := s(it["pk"]) + "/DAY#" + at[:10]
		days[k] = append(days[k], comment{s(it["sk"]), at, n(it["likes"])})
	}
	bad := 0
	seen := map[string]bool{}
	for _, it := range items {
		if !strings.HasPrefix(s(it["sk"]), "DAY#") {
			continue
		}
		k := s(it["pk"]) + "/" + s(it["sk"])
		seen[k] = true
		cs := days[k]
		newestLikes, newestID := "absent", "absent"
		if len(cs) > 0 {
			sort.Slice(cs, func(i, j int) bool { return cs[i].at > cs[j].at || (cs[i].at == cs[j].at && cs[i].sk > cs[j].sk) })
			newestLikes, newestID = strconv.Itoa(cs[0].likes), strings.TrimPrefix(cs[0].sk, "COMMENT#")
		}
		sort.Slice(cs, func(i, j int) bool {
			return cs[i].likes > cs[j].likes || (cs[i].likes == cs[j].likes && cs[i].sk > cs[j].sk)
		})
		var hottest []string
		for _, c := range cs[:min(3, len(cs))] {
			hottest = append(hottest, c.sk)
		}
		var got []string
		if l, ok := it["hottest"].(*types.AttributeValueMemberL); ok {
			for _, en := range l.Value {
				m := en.(*types.AttributeValueMemberM).Value
				got = append(got, s(m["sk"]))
			}
		}
		gotLikes, gotID := "absent", "absent"
		if it["newestLikes"] != nil {
			gotLikes = strconv.Itoa(n(it["newestLikes"]))
		}
		if it["newestId"] != nil {
			gotID = s(it["newestId"])
		}
		day, _ := time.Parse("2006-01-02", s(it["sk"])[len("DAY#"):])
		if gotLikes != newestLikes || gotID != newestID || fmt.Sprint(got) != fmt.Sprint(hottest) ||
			n(it["ttl"]) != int(day.Add(24*time.Hour+30*24*time.Hour).Unix()) {
			if bad < 10 {
				e.t.Errorf("%s: newest %s/%s hottest %v ttl %d; want %s/%s %v and the day's end + 30d",
					k, gotLikes, gotID, got, n(it["ttl"]), newestLikes, newestID, hottest)
			}
			bad++
		}
	}
	for k := range days {
		if !seen[k] {
			e.t.Errorf("day item %s missing", k)
			bad++
		}
	}
	if bad > 0 {
		e.t.Fatalf("%d day items differ from their comments", bad)
	}
	e.verifyRules(bucketTopRules)
}

// latest and top into a day bucket: the first comment of a day creates its item with the
// ttl, a comment that moves to another day leaves one list and enters the other, every
// batch delivered twice or crashed at every write, and the application's PutItem of a day
// item that drops what the rules keep (and its ttl) is recomputed.
func TestLatestAndTopPerBucket(t *testing.T) {
	e := newEnvRules(t, apply.Options{}, bucketTopRules)
	e.api.failAfter = -1
	e.bucketWorkload(1, 150)
	e.drain(20, e.lambdaLike)
	e.checkBucketTops()
	e.bucketWorkload(2, 150)
	e.drain(20, func(b []json.RawMessage) { e.lambdaLike(b); e.lambdaLike(b) })
	e.checkBucketTops()
	e.bucketWorkload(3, 150)
	e.drain(15, e.crashAtEveryWrite)
	e.checkBucketTops()

	// The application saves two day items whole, as a form that knows none of the rules.
	for _, it := range e.scan() {
		if sk := s(it["sk"]); strings.HasPrefix(sk, "DAY#") && strings.HasSuffix(s(it["pk"]), "p1") {
			if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.table),
				Item: map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.bucketWorkload(4, 60)
	e.drain(20, e.lambdaLike)
	e.checkBucketTops()
}

// The rules added to a table whose comments exist: `denorm backfill` creates every day
// item with its newest comment, its list and its ttl, and the processor's records of them
// change nothing; later comments go on top.
func TestLatestAndTopPerBucketBackfill(t *testing.T) {
	const before = `version: 1
entities:
  Post:    {pk: "POST#{postId}", sk: METADATA, attributes: [lastAt]}
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt, likes]}
rules:
  - name: post-last
    max: {of: Comment, into: Post, value: createdAt, attribute: lastAt}
`
	e := newEnvRules(t, apply.Options{}, before)
	e.api.failAfter = -1
	e.bucketWorkload(5, 120)
	e.drain(20, e.lambdaLike)
	e.useRules(bucketTopRules)
	f, err := rules.Parse("test.yaml", []byte(bucketTopRules))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ops.NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ops.Run(context.Background(), ops.Config{API: e.db, Table: e.table, Eval: ev, Repair: true, Segments: 2, PageSize: 50, Mode: "backfill"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	t.Logf("%s", b.String())
	if rep.Unrepaired != 0 {
		t.Fatalf("backfill left %d unrepaired", rep.Unrepaired)
	}
	e.checkBucketTops()
	e.drain(20, e.lambdaLike) // the day items' INSERT records: recomputed to the same
	e.checkBucketTops()
	e.bucketWorkload(6, 80)
	e.drain(20, e.lambdaLike)
	e.checkBucketTops()
}
