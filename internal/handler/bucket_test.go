package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// Daily comment counts and like totals per post (watermark mode: the day items share the
// comments' partition, and the default table has local indexes) and monthly comment counts
// per user (marker mode: another partition), the day items expiring 90 days after their day.
const bucketRules = `version: 1
entities:
  Comment:   {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt, likes, userId]}
  PostDay:   {pk: "POST#{postId}", sk: "DAY#{createdAt:day}", attributes: [commentCount, likeTotal]}
  UserMonth: {pk: "USER#{userId}", sk: "MONTH#{createdAt:month}", attributes: [commentCount]}
rules:
  - name: post-daily-comments
    count: {of: Comment, into: PostDay, attribute: commentCount, missingTarget: create, ttl: 90d}
  - name: post-daily-likes
    sum: {of: Comment, into: PostDay, value: likes, attribute: likeTotal, missingTarget: create, ttl: 90d}
  - name: user-monthly-comments
    count: {of: Comment, into: UserMonth, attribute: commentCount, missingTarget: create}
`

func newBucketEnv(t *testing.T) *env {
	db, streams := ddbtest.Clients(t)
	set, err := rules.ParseSet("buckets.yaml", []byte(bucketRules))
	if err != nil {
		t.Fatal(err)
	}
	name, desc := ddbtest.NewTable(t, db, set.Table)
	e := &env{t: t, db: db, table: name, arn: aws.ToString(desc.LatestStreamArn), set: set}
	e.reader = ddbtest.NewStreamReader(t, streams, e.arn)
	e.api = &faultyAPI{API: db, failAfter: -1}
	e.h = handler.New(set, apply.New(e.api, name, set, apply.Options{}), handler.Options{})
	e.inv = lambda.NewHandler(e.h.Handle)
	return e
}

// comment writes a comment; createdAt that parses as an integer is stored as a number.
func (e *env) comment(post, id, user, createdAt string, likes int) {
	e.t.Helper()
	e.put(map[string]string{"pk": "POST#" + post, "sk": "COMMENT#" + id, "userId": user, "createdAt": createdAt, "likes": strconv.Itoa(likes)})
}

// checkBuckets compares every bucket item and its state item with the truth computed from
// the comments a scan finds, computed here with keys.ParseTime rather than the planner: a
// day's count and like total, a user's month count, no bucket item for a bucket whose TTL
// has passed, and no park items. With ttl, also the TTL: the end of the day plus 90 days on
// day items and their state items (a bucket's state expires with it), none on month items.
func (e *env) checkBuckets(now time.Time, ttl bool) {
	e.t.Helper()
	want := map[string]map[string]int{} // "pk sk" -> attribute -> value
	add := func(pk, sk, attr string, n int) {
		k := pk + " " + sk
		if want[k] == nil {
			want[k] = map[string]int{}
		}
		want[k][attr] += n
	}
	got := map[string]map[string]types.AttributeValue{}
	states := map[string]map[string]types.AttributeValue{} // the target's "pk sk" -> its state item
	for _, it := range e.scan() {
		pk, sk := s(it["pk"]), s(it["sk"])
		switch {
		case strings.HasPrefix(pk, rules.LegacyParkPrefix):
			e.t.Errorf("park item %s %s: bucket items are created, never waited for", pk, sk)
		case strings.HasPrefix(pk, rules.StatePrefix):
			states[strings.TrimPrefix(pk, rules.StatePrefix)+" "+sk] = it
		case strings.HasPrefix(sk, "COMMENT#"):
			v := s(it["createdAt"])
			if n, ok := it["createdAt"].(*types.AttributeValueMemberN); ok {
				v = n.Value
			}
			at, prec, err := keys.ParseTime(v)
			if err != nil {
				continue // links to no bucket
			}
			if prec <= keys.Day && keys.Day.End(dayStart(at)).Add(90*24*time.Hour).After(now) {
				add(pk, "DAY#"+keys.Day.Bucket(at), "commentCount", 1)
				add(pk, "DAY#"+keys.Day.Bucket(at), "likeTotal", n(it["likes"]))
			}
			add("USER#"+s(it["userId"]), "MONTH#"+keys.Month.Bucket(at), "commentCount", 1)
		case strings.HasPrefix(sk, "DAY#"), strings.HasPrefix(sk, "MONTH#"):
			got[pk+" "+sk] = it
		}
	}
	for k, attrs := range want {
		it := got[k]
		if it == nil {
			if attrs["commentCount"] != 0 {
				e.t.Errorf("%s: missing, want %v", k, attrs)
			}
			continue
		}
		for a, w := range attrs {
			if g := n(it[a]); g != w {
				e.t.Errorf("%s %s = %d, want %d", k, a, g, w)
			}
		}
	}
	for k, st := range states {
		for _, a := range []string{"commentCount", "likeTotal"} {
			if g, w := n(st[a]), want[k][a]; g != w {
				e.t.Errorf("state of %s: %s = %d, want %d", k, a, g, w)
			}
		}
		if it := got[k]; it != nil && ttl && n(st["ttl"]) != n(it["ttl"]) {
			e.t.Errorf("state of %s: ttl %d, its bucket item's %d: want the same", k, n(st["ttl"]), n(it["ttl"]))
		}
	}
	for k, it := range got {
		if want[k] == nil && (n(it["commentCount"]) != 0 || n(it["likeTotal"]) != 0) {
			e.t.Errorf("%s holds %d comments and %d likes, want none", k, n(it["commentCount"]), n(it["likeTotal"]))
		}
		if states[k] == nil && (n(it["commentCount"]) != 0 || n(it["likeTotal"]) != 0) {
			e.t.Errorf("%s has no state item at %s%s", k, rules.StatePrefix, k)
		}
		for name := range it {
			if strings.HasPrefix(name, rules.ReservedPrefix) && name != rules.CopyVersionAttr {
				e.t.Errorf("%s carries %s", k, name)
			}
		}
		_, sk, _ := strings.Cut(k, " ")
		if !ttl {
			continue
		}
		if day, ok := strings.CutPrefix(sk, "DAY#"); ok {
			start, err := keys.Day.Start(day)
			if err != nil {
				e.t.Fatalf("%s: %v", k, err)
			}
			if wantTTL := keys.Day.End(start).Add(90 * 24 * time.Hour).Unix(); int64(n(it["ttl"])) != wantTTL {
				e.t.Errorf("%s ttl = %d, want %d (90 days after the day ends)", k, n(it["ttl"]), wantTTL)
			}
		} else if it["ttl"] != nil {
			e.t.Errorf("%s has ttl %v; its rule has none", k, it["ttl"])
		}
	}
}

func dayStart(t time.Time) time.Time { s, _ := keys.Day.Start(keys.Day.Bucket(t)); return s }

// TestTimeBuckets runs daily and monthly buckets through the real handler on DynamoDB
// Local: ISO-8601 times with and without fractions and offsets, epoch seconds, a value that
// is no time, a bucket that expired already; every batch is delivered twice, then a
// comment's time moves to another day and month, with a crash after each number of writes
// and a redelivery.
func TestTimeBuckets(t *testing.T) {
	e := newBucketEnv(t)
	now := time.Now().UTC()
	d1 := now.AddDate(0, 0, -40).Truncate(24 * time.Hour)
	d2 := d1.AddDate(0, 1, 1) // another day and another month
	iso := func(t time.Time, h, m int) string {
		return t.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute).Format("2006-01-02T15:04:05Z")
	}
	e.comment("p1", "c1", "u1", iso(d1, 21, 34), 2)
	e.comment("p1", "c2", "u1", d1.Add(22*time.Hour).Format("2006-01-02T15:04:05.000000")+"+00:00", 3)
	e.comment("p1", "c3", "u2", strconv.FormatInt(d1.Add(5*time.Hour).Unix(), 10), 1) // epoch seconds, a number
	e.comment("p1", "c4", "u2", iso(d1, 23, 30)[:16]+"-05:00", 4)                     // local evening: the next day in UTC
	e.comment("p1", "c5", "u1", "yesterday", 7)                                       // no bucket
	e.comment("p1", "c6", "u1", iso(now.AddDate(0, 0, -200), 9, 0), 5)                // its day expired long ago
	e.comment("p2", "c7", "u1", iso(d1, 1, 0), 1)
	var metrics bytes.Buffer
	h := handler.New(e.set, apply.New(e.api, e.table, e.set, apply.Options{}), handler.Options{Metrics: &metrics})
	first := e.records()
	if resp, err := h.Handle(context.Background(), record.EncodeEvent(first)); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v, %v", err, resp.BatchItemFailures)
	}
	// c5 links to no bucket under its three rules, c6 to no day under its two day rules.
	if emf := lastJSONLine(t, &metrics); emf["UnlinkedEffects"] != 5.0 || emf["Failures"] != 0.0 {
		t.Errorf("EMF UnlinkedEffects %v, Failures %v; want 5, 0", emf["UnlinkedEffects"], emf["Failures"])
	}
	e.lambdaLike(first) // redelivered whole
	e.drain(3, func(b []json.RawMessage) { e.lambdaLike(b); e.lambdaLike(b) })
	e.checkBuckets(now, false)
	if it := e.get("POST#p1", "DAY#"+keys.Day.Bucket(d1)); n(it["commentCount"]) != 3 || n(it["likeTotal"]) != 6 {
		t.Errorf("day 1 of p1: %d comments, %d likes; want 3 and 6 (c1, c2, c3)", n(it["commentCount"]), n(it["likeTotal"]))
	}
	if it := e.get("POST#p1", "DAY#"+keys.Day.Bucket(d1.AddDate(0, 0, 1))); n(it["commentCount"]) != 1 {
		t.Errorf("the day after day 1 of p1: %d comments, want 1 (c4, written at 23:30 -05:00)", n(it["commentCount"]))
	}
	if it := e.get("POST#p1", "DAY#"+keys.Day.Bucket(now.AddDate(0, 0, -200))); it != nil {
		t.Errorf("a bucket expired before its comment was written was created: %v", it)
	}

	// c1 moves to day 2 and c2 gets a time that is none: the first leaves day 1 for day 2,
	// the second leaves its buckets. Each batch crashes after k writes and is redelivered.
	e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#c1", "userId": "u1", "createdAt": iso(d2, 8, 0), "likes": "2"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#c2", "userId": "u1", "createdAt": "soon", "likes": "3"})
	e.del("POST#p1", "COMMENT#c3")
	e.comment("p1", "c8", "u2", iso(d2, 9, 0), 10)
	k := 0
	e.drain(4, func(b []json.RawMessage) {
		k = (k + 1) % 5
		e.api.failAfter, e.api.writes = k, 0
		e.invoke(b)
		e.api.failAfter = -1
		e.lambdaLike(b)
		e.lambdaLike(b)
	})
	e.checkBuckets(now, false)
	if it := e.get("POST#p1", "DAY#"+keys.Day.Bucket(d1)); n(it["commentCount"]) != 0 || n(it["likeTotal"]) != 0 {
		t.Errorf("day 1 of p1 after the moves: %d comments, %d likes; want 0 and 0", n(it["commentCount"]), n(it["likeTotal"]))
	}
	if it := e.get("POST#p1", "DAY#"+keys.Day.Bucket(d2)); n(it["commentCount"]) != 2 || n(it["likeTotal"]) != 12 {
		t.Errorf("day 2 of p1: %d comments, %d likes; want 2 and 12 (c1, c8)", n(it["commentCount"]), n(it["likeTotal"]))
	}
	if it := e.get("USER#u1", "MONTH#"+keys.Month.Bucket(d2)); n(it["commentCount"]) != 1 {
		t.Errorf("u1's month of day 2: %d comments, want 1 (c1 moved in)", n(it["commentCount"]))
	}
}

// DynamoDB's TTL deleting a bucket item and its state item, which carries the same expiry
// (DynamoDB Local never does: the test deletes them and marks the records), is the bucket's
// end: nothing writes either back, and a later comment of that day creates both again with
// their TTL, counting from zero.
func TestBucketExpiredByTTL(t *testing.T) {
	e := newBucketEnv(t)
	day := time.Now().UTC().AddDate(0, 0, -3)
	e.comment("p1", "c1", "u1", day.Format(time.RFC3339), 1)
	e.drain(10, e.lambdaLike)
	sk := "DAY#" + keys.Day.Bucket(day)
	item := e.get("POST#p1", sk)
	if n(item["commentCount"]) != 1 {
		t.Fatalf("day item: %v", item)
	}
	state := e.get(rules.StatePrefix+"POST#p1", sk)
	if n(state["commentCount"]) != 1 || state["ttl"] == nil || n(state["ttl"]) != n(item["ttl"]) {
		t.Fatalf("day item's state: %v, want commentCount 1 and the day item's ttl %d", state, n(item["ttl"]))
	}
	e.del("POST#p1", sk)
	e.del(rules.StatePrefix+"POST#p1", sk)
	batch := e.records()
	if len(batch) != 2 {
		t.Fatalf("%d records, want the two removals", len(batch))
	}
	for i := range batch {
		c, err := record.Decode(batch[i])
		if err != nil {
			t.Fatal(err)
		}
		c.TTL = true // as if DynamoDB's TTL process had deleted it
		if batch[i], err = record.EncodeChange(c, e.arn, "us-east-1"); err != nil {
			t.Fatal(err)
		}
	}
	e.lambdaLike(batch)
	e.drain(10, e.lambdaLike)
	if it, st := e.get("POST#p1", sk), e.get(rules.StatePrefix+"POST#p1", sk); it != nil || st != nil {
		t.Errorf("after the bucket's TTL deletion: item %v, state %v; want both gone", it, st)
	}
	for _, it := range e.scan() {
		if strings.HasPrefix(s(it["pk"]), rules.LegacyParkPrefix) {
			t.Errorf("park item %s %s after a bucket's TTL deletion", s(it["pk"]), s(it["sk"]))
		}
	}
	e.comment("p1", "c2", "u1", day.Add(time.Minute).Format(time.RFC3339), 1)
	e.drain(10, e.lambdaLike)
	if it := e.get("POST#p1", sk); n(it["commentCount"]) != 1 || n(it["ttl"]) != n(item["ttl"]) {
		t.Errorf("day item re-created: %v, want commentCount 1 and ttl %d", it, n(item["ttl"]))
	}
	if st := e.get(rules.StatePrefix+"POST#p1", sk); n(st["commentCount"]) != 1 || n(st["ttl"]) != n(item["ttl"]) {
		t.Errorf("state re-created: %v, want commentCount 1 and ttl %d", st, n(item["ttl"]))
	}
}

// The write that creates a bucket item sets its TTL: 90 days after its day ends on the day
// items (watermark mode), none on the month items (no ttl; marker mode). Redelivered and
// crashed batches write the same TTL, on the state items too, and Denorm's own creation
// of a bucket item is not taken for an application's write (its INSERT's refresh finds it
// showing the state, and writes nothing).
func TestBucketTTLWritten(t *testing.T) {
	e := newBucketEnv(t)
	now := time.Now().UTC()
	for i := 0; i < 12; i++ {
		at := now.AddDate(0, 0, -i%3).Add(-time.Duration(i) * time.Hour)
		e.comment("p"+strconv.Itoa(i%2), "c"+strconv.Itoa(i), "u"+strconv.Itoa(i%3), at.Format(time.RFC3339Nano), i)
	}
	k := 0
	e.drain(5, func(b []json.RawMessage) {
		k = (k + 2) % 5
		e.api.failAfter, e.api.writes = k, 0
		e.invoke(b)
		e.api.failAfter = -1
		e.lambdaLike(b)
		e.lambdaLike(b)
	})
	e.checkBuckets(now, true)
}
