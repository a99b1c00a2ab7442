package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/record"
)

// What applications do to counter targets, each in the batch that restores it, which then
// crashes after every k of its writes in turn and is redelivered whole each time:
//
//   - a profile editor PutItems the whole item, dropping the counters and Denorm's own
//     attributes (posts: watermark mode; users: marker mode);
//   - an UpdateItem SETs a counter to 0 or REMOVEs it;
//   - a delete of the target followed at once by its re-Put;
//   - children written before their parent (a post whose user does not exist yet, comments
//     of a post written a moment later);
//   - a post's userId REMOVEd (it counts into no user).
//
// Once the stream drains every counter and sum equals the truth computed from a scan.
func TestTargetsReplacedCrashAtEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch int
	}{{"one batch", 1000}, {"batches of 7", 7}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, apply.Options{})
			e.api.failAfter = -1
			e.workload(11, 4, 5, 200)
			e.drain(50, e.lambdaLike)
			e.check()

			e.applicationRound(rand.New(rand.NewPCG(5, 5)), 4, 5)
			e.drain(tc.batch, e.crashAtEveryWrite)
			e.check()

			// And again, on targets that were restored once already.
			e.applicationRound(rand.New(rand.NewPCG(6, 6)), 4, 5)
			e.drain(tc.batch, e.crashAtEveryWrite)
			e.check()
		})
	}
}

// crashed returns a delivery that stops each batch after k writes, k cycling through 3, 6,
// 2, 5, 1, 4, 0, then delivers it again as Lambda does: whole after a function error, or
// with resume from the record the handler reports (ReportBatchItemFailures).
func (e *env) crashed(resume bool) func([]json.RawMessage) {
	k := 0
	return func(b []json.RawMessage) {
		k = (k + 3) % 7
		e.api.failAfter, e.api.writes = k, 0
		i := e.invoke(b)
		e.api.failAfter = -1
		if !resume {
			i = 0
		}
		e.lambdaLike(b[i:])
	}
}

// crashAtEveryWrite delivers batch with a crash after k writes for k = 0, 1, ... until a
// delivery completes, each delivery a redelivery of the whole batch, then finishes it as
// Lambda does.
func (e *env) crashAtEveryWrite(batch []json.RawMessage) {
	e.t.Helper()
	for k := 0; k < 400; k++ {
		e.api.failAfter, e.api.writes = k, 0
		i := e.invoke(batch)
		if i == len(batch) {
			break
		}
	}
	e.api.failAfter = -1
	e.lambdaLike(batch)
}

// applicationRound writes what applications write to counter targets, interleaved with
// ordinary child writes.
func (e *env) applicationRound(rng *rand.Rand, users, posts int) {
	e.t.Helper()
	post := func(p int) string { return fmt.Sprintf("POST#p%d", p) }
	user := func(u int) string { return fmt.Sprintf("USER#u%d", u) }
	comment := func(p, c int) {
		e.put(map[string]string{"pk": post(p), "sk": fmt.Sprintf("COMMENT#r%d", c), "gsi1pk": user(rng.IntN(users)),
			"gsi1sk": fmt.Sprintf("COMMENT#r%d", c), "likes": fmt.Sprint(1 + rng.IntN(4)), "status": "visible"})
	}
	for i := 0; i < 60; i++ {
		p, u := rng.IntN(posts), rng.IntN(users)
		switch k := i % 10; k {
		case 0: // the profile editor saves every field it knows
			e.put(map[string]string{"pk": post(p), "sk": "METADATA", "userId": fmt.Sprintf("u%d", u)})
		case 1:
			e.put(map[string]string{"pk": user(u), "sk": "PROFILE", "name": fmt.Sprintf("edited %d", i)})
		case 2:
			e.update(post(p), "METADATA", "SET commentCount = :z, likeTotal = :z", map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"}})
		case 3:
			e.update(user(u), "PROFILE", "REMOVE postCount", nil)
		case 4: // delete and re-create at once
			e.del(post(p), "METADATA")
			e.put(map[string]string{"pk": post(p), "sk": "METADATA", "userId": fmt.Sprintf("u%d", u), "commentCount": "0"})
		case 5:
			e.del(user(u), "PROFILE")
			e.put(map[string]string{"pk": user(u), "sk": "PROFILE", "name": fmt.Sprintf("back %d", i), "postCount": "7"})
		case 6: // children first: a post of a user who does not exist yet, comments of a new post
			nu, np := users+i, posts+i
			comment(np, i)
			comment(np, i+1000)
			e.put(map[string]string{"pk": post(np), "sk": "METADATA", "userId": fmt.Sprintf("u%d", nu)})
			e.put(map[string]string{"pk": user(nu), "sk": "PROFILE", "name": "late"})
		case 7: // the parent removed, then set again
			e.update(post(p), "METADATA", "REMOVE userId", nil)
			if rng.IntN(2) == 0 {
				e.update(post(p), "METADATA", "SET userId = :u", map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: fmt.Sprintf("u%d", u)}})
			}
		default:
			comment(p, i)
		}
	}
}

// noStream is an apply.StreamReader for tests of the handler without one (newEnv gives it
// none).
type noStream struct{}

func (noStream) After(context.Context, string, string, map[string]string, func(*record.Change) bool) (int, error) {
	return 0, fmt.Errorf("no stream to read on in")
}

func (e *env) update(pk, sk, expr string, values map[string]types.AttributeValue) {
	e.t.Helper()
	_, err := e.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table), UpdateExpression: aws.String(expr), ExpressionAttributeValues: values,
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// What restoring a replaced target costs: a post (watermark mode) is restored with one
// conditional UpdateItem, a profile (marker mode) with one transaction of its marker and
// its update, whatever the application dropped.
func TestRestoreCost(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	for i := 0; i < 3; i++ {
		e.put(map[string]string{"pk": "POST#p1", "sk": fmt.Sprintf("COMMENT#c%d", i), "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#x", "likes": "2", "status": "visible"})
	}
	e.drain(100, e.lambdaLike)
	e.check()

	for _, tc := range []struct {
		name   string
		write  func()
		writes int
	}{
		{"post PutItem (watermark)", func() { e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "title": "edited"}) }, 1},
		{"profile PutItem (marker)", func() {
			e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada", "email": "ada@example.com"})
		}, 1},
		{"post SET counters (watermark)", func() {
			e.update("POST#p1", "METADATA", "SET commentCount = :z, likeTotal = :z", map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"}})
		}, 1},
	} {
		tc.write()
		batch := e.records()
		out, err := e.h.Process(context.Background(), record.EncodeEvent(batch))
		if err != nil || out.Failed != "" {
			t.Fatalf("%s: %v %v", tc.name, err, out.Reason)
		}
		if out.Stats.Requests != tc.writes {
			t.Errorf("%s: %d write requests, want %d", tc.name, out.Stats.Requests, tc.writes)
		}
		t.Logf("%s: restored with %d write request(s), %.0f WCU; read on in the stream %d time(s) (%d records read)",
			tc.name, out.Stats.Requests, out.Stats.WCU, out.Stats.StreamFollows, out.Stats.StreamFollowRecords)
		e.drain(100, e.lambdaLike) // the restore's own record: no write
		e.check()
	}
}

// A batch delivered again after the application changed its target in between: the
// redelivery must not count twice, whatever the application did.
//
//   - parked once: the batch's post did not exist, then the application wrote it: the
//     post's INSERT folds the parked deltas in;
//   - parked: the batch's post did not exist (its deltas were parked), the application
//     wrote the post, then the batch came again (it lands on the post directly) before
//     the post's INSERT folds the park;
//   - wiped, wrong, stale: the batch was applied, the application replaced the post with
//     PutItem (dropping the counters and _dn_wm, writing a wrong count, or writing back
//     the whole item as read before the batch), then the batch came again;
//   - wiped with it: as wiped, the batch coming again with the replacement's own record
//     (a batch that failed at a later record is delivered again from there, new records
//     with it);
//   - wiped, stale, then a comment: a comment is written between the first delivery and
//     the replacement; the batch comes again, then the comment in a batch of its own, then
//     the replacement: alone in its batch, it reads on in the stream for the records of
//     Denorm's writes since, which show which of them repeated; read with what followed,
//     the batch shows them; deferred (the restore may not read the stream): last in a batch
//     after another record, it fails alone and comes again first, with what followed it.
func TestRedeliveredAfterTheApplicationWroteTheTarget(t *testing.T) {
	comment := func(e *env, id string) {
		e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#" + id, "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#" + id, "likes": "3", "status": "visible"})
	}
	for _, tc := range []string{"parked once", "parked", "wiped", "wrong", "stale", "wiped with it",
		"wiped, then a comment", "stale, then a comment",
		"wiped, then a comment, read with what followed", "stale, then a comment, read with what followed",
		"wiped, then a comment, deferred", "stale, then a comment, deferred",
		"deleted and put back stale, read apart", "deleted and put back wiped, read apart"} {
		t.Run(tc, func(t *testing.T) {
			opt := apply.Options{}
			if strings.HasSuffix(tc, "deferred") {
				opt.Stream = noStream{} // the restore cannot read on: it waits one delivery
			}
			e := newEnv(t, opt)
			e.api.failAfter = -1
			e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada"})
			if tc != "parked" && tc != "parked once" {
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
				comment(e, "c0")
			}
			e.drain(100, e.lambdaLike)
			var read map[string]types.AttributeValue
			if strings.HasPrefix(tc, "stale") || strings.Contains(tc, "stale") {
				out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &e.table, ConsistentRead: aws.Bool(true),
					Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "POST#p1"}, "sk": &types.AttributeValueMemberS{Value: "METADATA"}}})
				if err != nil {
					t.Fatal(err)
				}
				read = out.Item
			}
			// replace writes the post as a profile editor would: wiped (every field it
			// knows, none of Denorm's) or stale (the whole item as read before c1 and c2).
			replace := func(wiped bool) {
				if wiped {
					e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
				} else if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &e.table, Item: read}); err != nil {
					t.Fatal(err)
				}
			}
			comment(e, "c1")
			comment(e, "c2")
			batch := e.records()
			e.lambdaLike(batch)
			switch tc {
			case "parked once": // no redelivery: the fold alone moves the parked deltas
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
				e.drain(100, e.lambdaLike)
				e.check()
				return
			case "parked", "wiped":
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			case "wiped with it":
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
				batch = append(batch, e.records()...)
			case "wiped, then a comment, read with what followed", "stale, then a comment, read with what followed":
				comment(e, "c3")
				beforeIt := e.records()
				replace(strings.HasPrefix(tc, "wiped"))
				e.lambdaLike(batch) // delivered again
				e.lambdaLike(beforeIt)
				e.drain(100, e.lambdaLike) // the replacement with Denorm's writes after it
				e.check()
				return
			case "wiped, then a comment, deferred", "stale, then a comment, deferred":
				comment(e, "c3")
				beforeIt := e.records()
				replace(strings.HasPrefix(tc, "wiped"))
				it := e.records()
				e.lambdaLike(batch) // delivered again
				e.lambdaLike(beforeIt)
				// The replacement last in a batch, after a record delivered again: it cannot
				// tell yet, fails alone and comes again with what followed it.
				again := append(beforeIt[len(beforeIt)-1:len(beforeIt):len(beforeIt)], it...)
				if i := e.invoke(again); i != 1 {
					t.Fatalf("the replacement was not deferred: failure at %d of %d", i, len(again))
				}
				e.lambdaLike(append(again[1:], e.records()...))
				e.drain(100, e.lambdaLike)
				e.check()
				return
			case "deleted and put back stale, read apart", "deleted and put back wiped, read apart":
				// The delete and the re-put reach the processor in batches of their own,
				// after the batch came again onto the new item.
				e.del("POST#p1", "METADATA")
				del := e.records()
				replace(strings.Contains(tc, "wiped"))
				put := e.records()
				e.lambdaLike(batch) // delivered again, onto the new item
				for _, r := range del {
					e.lambdaLike([]json.RawMessage{r})
				}
				for _, r := range put {
					e.lambdaLike([]json.RawMessage{r})
				}
				e.drain(100, e.lambdaLike)
				e.check()
				return
			case "wiped, then a comment", "stale, then a comment":
				comment(e, "c3")
				beforeIt := e.records() // Denorm's writes of the first delivery, then c3
				replace(tc == "wiped, then a comment")
				it := e.records()
				e.lambdaLike(batch) // delivered again
				e.lambdaLike(beforeIt)
				e.lambdaLike(it)
				e.drain(100, e.lambdaLike)
				e.check()
				return
			case "wrong":
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "9", "likeTotal": "40"})
			case "stale":
				replace(false)
			}
			e.lambdaLike(batch) // delivered again
			e.drain(100, e.lambdaLike)
			e.check()
		})
	}
}

// A restore's read on in the stream is bounded by time (ReadOnBudget), not records. The
// case is "wiped, then a comment" of TestRedeliveredAfterTheApplicationWroteTheTarget,
// which reads on when it has time:
//
//   - out of its own budget (a processor too far behind): the restore takes nothing out,
//     counts itself ambiguous and says why in its warning, rather than holding the batch;
//   - cut short by the invocation's deadline (a slow stream, and most of the invocation's
//     time spent before the read), the record second in its batch: it fails on the
//     deadline, not ambiguous, and comes again first, with time to read, exactly once;
//   - the same, the record first in its batch: the cut read is final (ambiguous), since a
//     delivery that starts with it may spend as long before the read again, and failing it
//     at every delivery would send it to the on-failure destination;
//   - a function whose whole timeout is short: a fresh invocation's read is not cut short
//     by it, so the record is not failed again and again: ambiguous, as out of its budget.
func TestReadOnOutOfTime(t *testing.T) {
	for _, tc := range []string{"own budget", "deadline", "deadline, first in its batch", "short timeout"} {
		t.Run(tc, func(t *testing.T) {
			var logs bytes.Buffer
			opt := apply.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			switch tc {
			case "own budget":
				opt.ReadOnBudget = time.Nanosecond
			default:
				opt.Stream = slowStream{}
			}
			e := newEnv(t, opt)
			e.api.failAfter = -1
			e.postWithAComment()
			e.postComment("c1")
			e.postComment("c2")
			batch := e.records()
			e.lambdaLike(batch)
			e.postComment("c3")
			beforeIt := e.records()
			e.put(map[string]string{"pk": "MISC#1", "sk": "x"})                         // no rule's
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"}) // wiped
			it := e.records()
			e.lambdaLike(batch) // delivered again
			e.lambdaLike(beforeIt)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			switch tc {
			case "deadline", "deadline, first in its batch":
				// The default margin and a second, 700 ms of it taken by the update before the read.
				ctx, cancel = context.WithTimeout(ctx, 3*time.Second+time.Second)
				e.api.slow = 700 * time.Millisecond
			case "short timeout":
				ctx, cancel = context.WithTimeout(ctx, 3*time.Second+400*time.Millisecond)
			}
			defer cancel()
			if tc != "deadline" {
				e.lambdaLike(it[:1])
				it = it[1:] // the replacement first in its batch
			}
			out, err := e.h.Process(ctx, record.EncodeEvent(it))
			if err != nil {
				t.Fatal(err)
			}
			if tc != "deadline" {
				if out.Failed != "" || out.Stats.StreamFollows != 1 || out.Stats.AmbiguousRestores != 1 {
					t.Errorf("failed at %q (%v), read on %d times, %d ambiguous restores; want applied, 1 and 1",
						out.Failed, out.Reason, out.Stats.StreamFollows, out.Stats.AmbiguousRestores)
				}
				if tc == "own budget" && (!strings.Contains(logs.String(), "stopped after 0 records") || !strings.Contains(logs.String(), "POST#p1")) {
					t.Errorf("no warning naming the target and the spent budget:\n%s", logs.String())
				}
				return
			}
			if out.Failed == "" || !errors.Is(out.Reason, apply.ErrDeadline) || out.Stats.AmbiguousRestores != 0 {
				t.Fatalf("failed at %q (%v), %d ambiguous restores; want a failure on the deadline, none ambiguous",
					out.Failed, out.Reason, out.Stats.AmbiguousRestores)
			}
			e.api.slow = 0
			e.h = handler.New(e.set, apply.New(e.api, e.table, e.set, apply.Options{Stream: e.follow}), handler.Options{})
			e.inv = lambda.NewHandler(e.h.Handle)
			e.lambdaLike(it[1:]) // again, first in its batch, with time
			e.drain(100, e.lambdaLike)
			e.check()
		})
	}
}

// slowStream is a stream read on that does not end before its context: a processor far
// behind, on a slow stream.
type slowStream struct{}

func (slowStream) After(ctx context.Context, _, _ string, _ map[string]string, _ func(*record.Change) bool) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// The application replaced the target again before the processor reached its first
// replacement (a processor far behind, seen in the 100,000-operation soak on a folder):
//
//  1. c1 is applied (the post counts c0 and c1);
//  2. the application deletes the post and puts it back with its counters at 0;
//  3. c1 comes again (a redelivered batch) and lands on the new item: a repeat;
//  4. the application writes the post again: the whole item without the counters and
//     Denorm's attributes ("wiped"), the same after a delete ("deleted and put back"), or
//     the whole item as it read it after c0 ("as read before");
//  5. Denorm writes that item: c2, written before step 2, is applied to it (its first
//     record since the wipe, after the first replacement's old watermark); or, as read
//     before, c1 comes again once more (the item's watermark is below it);
//  6. the processor reaches the delete and re-put.
//
// What the item holds (`_dn_wf`, the watermark, the counts) belongs to the second write:
// it says nothing about what Denorm applied after the first. Taken for the first's, the
// post counted c1 twice (wiped) or lost it (as read before). Only the stream says that
// c1 repeated, once.
func TestRestoreOntoALaterReplacement(t *testing.T) {
	for _, second := range []string{"wiped", "deleted and put back", "as read before"} {
		t.Run(second, func(t *testing.T) {
			e := newPostEnv(t)
			read := e.get("POST#p1", "METADATA")

			c1 := e.applyComment("c1")
			if second != "as read before" {
				e.postComment("c2")
			}
			c2 := e.records() // Denorm's write of c1 (then c2)
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "0", "likeTotal": "0"})
			first := e.records()
			e.lambdaLike(c1) // delivered again, onto the new item
			switch second {
			case "wiped":
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			case "deleted and put back":
				e.del("POST#p1", "METADATA")
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			default:
				if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &e.table, Item: read}); err != nil {
					t.Fatal(err)
				}
				e.lambdaLike(c1) // and again, onto the item as read before
			}
			e.lambdaLike(c2)
			e.lambdaLike(first)
			e.drain(100, e.lambdaLike)
			e.check()
		})
	}
}

// An item written back as it was read in an earlier incarnation, whose write count is one
// above the item's now and whose watermark is the same (seed 7 of
// TestApplicationUnderRedelivery: FOLDER#f0000 two files short): it is the application's,
// not Denorm's, and what it wiped is restored. Before firstsFollow it was taken for one of
// Denorm's writes and the post ended with no comment count.
func TestWrittenBackFromAnEarlierIncarnation(t *testing.T) {
	e, c1 := postWithTwoComments(t) // the post's write count is 2
	back := e.get("POST#p1", "METADATA")
	e.del("POST#p1", "METADATA")
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	e.lambdaLike(c1)         // delivered again onto the new item: write count 1, the same watermark
	recreated := e.records() // the delete, the re-put and Denorm's write of c1 again
	delete(back, "commentCount")
	delete(back, "likeTotal")
	if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &e.table, Item: back}); err != nil {
		t.Fatal(err)
	}
	e.lambdaLike(recreated)
	e.drain(100, e.lambdaLike)
	e.check()
}

// A comment parked while its post was deleted, delivered again once the application had put
// the post back (applied to it directly), and the post rewritten by the application before
// the processor reached the re-put: the fold of the park, at the re-put's record, must not
// add the comment a second time. The item it reads is a later one; its [_dn_wf, _dn_wm]
// says nothing of the writes onto the item the re-put made (seed 7 of
// TestApplicationUnderRedelivery: FOLDER#f0000 five files over).
func TestFoldAfterTheParkedRecordsReachedTheTarget(t *testing.T) {
	for _, later := range []string{"wiped", "deleted and put back"} {
		t.Run(later, func(t *testing.T) {
			e := newPostEnv(t)
			e.del("POST#p1", "METADATA")
			removed := e.records()
			e.postComment("c1")
			c1 := e.records()
			e.lambdaLike(removed)
			e.lambdaLike(c1) // the post is missing: parked
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			reput := e.records()
			e.lambdaLike(c1) // delivered again: onto the post put back
			switch later {
			case "wiped":
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			default:
				e.del("POST#p1", "METADATA")
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			}
			e.postComment("c2")
			rest := e.records() // Denorm's write of c1, the rewrite, c2
			e.lambdaLike(reput)
			e.lambdaLike(rest)
			e.drain(100, e.lambdaLike)
			e.check()
		})
	}
}

// newPostEnv is a new env (no injected failures) with post p1 and its comment c0 applied.
func newPostEnv(t *testing.T) *env {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.postWithAComment()
	return e
}

// postWithTwoComments is newPostEnv with comment c1 applied too; it returns c1's records,
// to deliver again.
func postWithTwoComments(t *testing.T) (*env, []json.RawMessage) {
	e := newPostEnv(t)
	c1 := e.applyComment("c1")
	e.drain(100, e.lambdaLike)
	return e, c1
}

// postWithAComment puts user u1, post p1 and comment c0 and applies them.
func (e *env) postWithAComment() {
	e.t.Helper()
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	e.postComment("c0")
	e.drain(100, e.lambdaLike)
}

// postComment puts comment id on post p1 by u1: visible, 3 likes.
func (e *env) postComment(id string) {
	e.t.Helper()
	e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#" + id, "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#" + id, "likes": "3", "status": "visible"})
}

// A replacement whose batch holds Denorm's write onto the replaced item after it (a batch
// delivered again), reached after the application replaced the item again the same way
// (counters and _dn_* omitted both times): the later item looks just as the first
// replacement left its item, and must not pass for it (the 30,000-operation soak with
// seed 3: USER#u0147 commentCount 26, want 24).
func TestReplacedTwiceTheSameWay(t *testing.T) {
	e := newPostEnv(t)
	c1 := e.applyComment("c1")
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	e.lambdaLike(c1) // delivered again onto the replaced post
	first := e.records()
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	e.lambdaLike(first)
	e.drain(100, e.lambdaLike)
	e.check()
}

// applyComment puts comment id on post p1 and delivers its records once; it returns them,
// to deliver again.
func (e *env) applyComment(id string) []json.RawMessage {
	e.t.Helper()
	e.postComment(id)
	recs := e.records()
	e.lambdaLike(recs)
	return recs
}

// A delete of the post and its re-put with counter values (an application writing the item
// back as it read it, or with counts of its own), in one batch with a record between them
// that fails (its write is throttled): the batch comes again from that record, the re-put
// with it. The pair was applied as one replacement; the re-put alone must not undo its
// counter values a second time (the 30,000-operation soak with seed 3: USER#u0108
// postCount -7, want 5).
func TestDeletedAndPutBackWithCountsThenRedeliveredFromBetween(t *testing.T) {
	for _, counts := range []string{"as read", "wrong", "none"} {
		t.Run(counts, func(t *testing.T) {
			e := newPostEnv(t)
			e.put(map[string]string{"pk": "POST#p2", "sk": "METADATA", "userId": "u1"})
			e.drain(100, e.lambdaLike)
			read := e.get("POST#p1", "METADATA")
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p2", "sk": "COMMENT#x1", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#x1", "likes": "2", "status": "visible"})
			switch counts {
			case "as read":
				if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &e.table, Item: read}); err != nil {
					t.Fatal(err)
				}
			case "wrong":
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "5", "likeTotal": "12"})
			default:
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			}
			batch := e.records()
			e.failingOn("POST#p2", batch, 1)
			e.lambdaLike(batch[1:]) // from the failed record: the re-put again
			e.drain(100, e.lambdaLike)
			e.check()
		})
	}
}

// Two replacements of the post in one batch, with Denorm's write between them: the post
// deleted and put back wiped, a batch delivered again onto it (a repeat: the deleted image
// held it), then wiped again. The second restore brings back an image that holds the
// repeat; the first's chain, closed by the second write, says what repeated, and both are
// taken out (TestApplicationUnderRedelivery seed 6: FOLDER#f0001 fileCount 22, want 14).
func TestRepeatBetweenTwoReplacements(t *testing.T) {
	e, c1 := postWithTwoComments(t)
	e.del("POST#p1", "METADATA")
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	e.lambdaLike(c1) // delivered again onto the new post
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	e.lambdaLike(e.records()) // the delete, the re-put, Denorm's write of c1 again, the wipe
	e.drain(100, e.lambdaLike)
	e.check()
}

// A comment parked while its post was deleted (a batch delivered again), the delete's
// restore applied onto the post put back (alone in its batch), and the re-put's fold in a
// later batch: the deleted image held the parked comment, so the fold leaves it out, as it
// does when the restore's own entry was parked (TestApplicationUnderRedelivery seed 6:
// POST#p0006 commentCount 10, want 8).
func TestFoldAfterTheDeleteWasRestoredOntoTheNewItem(t *testing.T) {
	e, c1 := postWithTwoComments(t)
	e.del("POST#p1", "METADATA")
	removed := e.records()
	e.lambdaLike(c1) // delivered again: the post is missing, parked
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "0"})
	e.postComment("c2")
	rest := e.records()
	e.lambdaLike(removed) // restored onto the post put back
	e.lambdaLike(rest)    // the re-put's fold, then c2
	e.drain(100, e.lambdaLike)
	e.check()
}
