package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// What applications do to count and sum targets. A target shows a copy of its state item
// (rules.StatePrefix), which only Denorm writes; whatever the application writes to the
// target, the record of its write makes Denorm read the state and put the copy back, and
// a deleted target's state keeps counting until it is put back. Every test ends with each
// counter and sum equal to what its sources say (env.check, which also checks the state
// items and that targets carry no reserved attribute but rules.CopyVersionAttr).

// item is an item as the application reads and writes it.
type item = map[string]types.AttributeValue

// Each round, applications write counter targets in every way below, interleaved with
// ordinary comment writes; each batch then crashes after every k of its writes in turn
// and is delivered again whole each time:
//
//   - a profile editor PutItems the whole item, dropping the counters and the copy
//     version (posts: the same partition as their comments; users: counted through relay
//     items, or per-event markers in transaction mode);
//   - an UpdateItem SETs a counter to 0 or REMOVEs it;
//   - a delete of the target followed at once by its re-Put, with counters of its own;
//   - children written before their parent (a post whose user does not exist yet, comments
//     of a post written a moment later);
//   - a post's userId REMOVEd (it counts into no user), then set again;
//   - the item written back as read at the start of the round (stale by then);
//   - a target deleted, and put back later in the round as it was read (an undelete).
func TestApplicationWritesTargetsCrashAtEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules string
		batch int
	}{
		{"one batch", testRules, 1000},
		{"batches of 7", testRules, 7},
		{"markers, batches of 7", transactionRules, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvRules(t, apply.Options{}, tc.rules)
			e.api.failAfter = -1
			e.workload(11, 4, 5, 200)
			e.drain(50, e.lambdaLike)
			e.check()

			e.applicationRound(rand.New(rand.NewPCG(5, 5)), 4, 5)
			e.drain(tc.batch, e.crashAtEveryWrite)
			e.check()

			// And again, on targets the application wrote once already.
			e.applicationRound(rand.New(rand.NewPCG(6, 6)), 4, 5)
			e.drain(tc.batch, e.crashAtEveryWrite)
			e.check()
		})
	}
}

// The same application rounds, each batch delivered in each of faultyDeliveries' ways.
func TestApplicationWritesTargetsUnderRedelivery(t *testing.T) {
	for _, tc := range faultyDeliveries() {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, apply.Options{})
			e.api.failAfter = -1
			e.workload(12, 4, 5, 150)
			e.drain(50, e.lambdaLike)
			for round := uint64(0); round < 2; round++ {
				e.applicationRound(rand.New(rand.NewPCG(7, round)), 4, 5)
				e.drain(9, tc.deliver(e))
				e.check()
			}
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
// ordinary child writes. What it writes back "as read" it read at the start of the round.
func (e *env) applicationRound(rng *rand.Rand, users, posts int) {
	e.t.Helper()
	post := func(p int) string { return fmt.Sprintf("POST#p%d", p) }
	user := func(u int) string { return fmt.Sprintf("USER#u%d", u) }
	comment := func(p, c int) {
		e.put(map[string]string{"pk": post(p), "sk": fmt.Sprintf("COMMENT#r%d", c), "gsi1pk": user(rng.IntN(users)),
			"gsi1sk": fmt.Sprintf("COMMENT#r%d", c), "likes": fmt.Sprint(1 + rng.IntN(4)), "status": "visible"})
	}
	read := map[[2]string]item{}
	for p := 0; p < posts; p++ {
		read[[2]string{post(p), "METADATA"}] = e.get(post(p), "METADATA")
	}
	for u := 0; u < users; u++ {
		read[[2]string{user(u), "PROFILE"}] = e.get(user(u), "PROFILE")
	}
	var deleted [][2]string // deleted, to be put back as read
	for i := 0; i < 90; i++ {
		p, u := rng.IntN(posts), rng.IntN(users)
		switch i % 15 {
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
		case 8: // the post written back as read: stale by now
			e.putItem(read[[2]string{post(p), "METADATA"}])
		case 9:
			e.putItem(read[[2]string{user(u), "PROFILE"}])
		case 10, 12: // deleted, or a deleted target put back as read (an undelete)
			if len(deleted) > 0 {
				e.putItem(read[deleted[0]])
				deleted = deleted[1:]
				break
			}
			k := [2]string{post(p), "METADATA"}
			if i%2 == 0 {
				k = [2]string{user(u), "PROFILE"}
			}
			e.del(k[0], k[1])
			deleted = append(deleted, k)
		default:
			comment(p, i)
		}
	}
}

func (e *env) update(pk, sk, expr string, values map[string]types.AttributeValue) {
	e.t.Helper()
	e.updateNamed(pk, sk, expr, nil, values)
}

// updateNamed is update with expression attribute names (for names such as _dn_cv, which
// an update expression cannot spell).
func (e *env) updateNamed(pk, sk, expr string, names map[string]string, values map[string]types.AttributeValue) {
	e.t.Helper()
	_, err := e.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table), UpdateExpression: aws.String(expr), ExpressionAttributeValues: values, ExpressionAttributeNames: names,
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// putItem writes it as the application read it (nothing when it read none).
func (e *env) putItem(it item) {
	e.t.Helper()
	if it == nil {
		return
	}
	if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: it}); err != nil {
		e.t.Fatal(err)
	}
}

// appWrites are what an application does to post p1 once it counts c0 and c1 (both
// applied): read is the post as it read it before c1 (counting c0 only).
var appWrites = []struct {
	name  string
	write func(e *env, read item)
}{
	{"puts the whole item without the counters and the copy version", func(e *env, read item) {
		e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "title": "edited"})
	}},
	{"puts the whole item with counters and a copy version of its own", func(e *env, read item) {
		e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "9", "likeTotal": "40", rules.CopyVersionAttr: "1"})
	}},
	// (Counters and a higher copy version alone would pass for Denorm's own copy, which
	// the planner tells apart without a read: plan/target.go, ownCopy.)
	{"puts the whole item with counters and a copy version above its state's", func(e *env, read item) {
		e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "title": "imported",
			"commentCount": "9", "likeTotal": "40", rules.CopyVersionAttr: "1000"})
	}},
	{"SETs the counters to 0", func(e *env, read item) {
		e.update("POST#p1", "METADATA", "SET commentCount = :z, likeTotal = :z", map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"}})
	}},
	{"SETs a counter to a wrong value", func(e *env, read item) {
		e.update("POST#p1", "METADATA", "SET likeTotal = :x", map[string]types.AttributeValue{":x": &types.AttributeValueMemberN{Value: "77"}})
	}},
	{"REMOVEs a counter", func(e *env, read item) { e.update("POST#p1", "METADATA", "REMOVE commentCount", nil) }},
	{"REMOVEs the counters and the copy version", func(e *env, read item) {
		e.updateNamed("POST#p1", "METADATA", "REMOVE commentCount, likeTotal, #cv", map[string]string{"#cv": rules.CopyVersionAttr}, nil)
	}},
	{"writes back the item as it read it before c1", func(e *env, read item) { e.putItem(read) }},
	{"writes back the item as read after c2 was written, before c2 is applied", func(e *env, read item) {
		e.postComment("c2")
		e.putItem(read)
	}},
	{"deletes it and puts it back at once without counters", func(e *env, read item) {
		e.del("POST#p1", "METADATA")
		e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	}},
	{"deletes it and puts it back at once as read", func(e *env, read item) {
		e.del("POST#p1", "METADATA")
		e.putItem(read)
	}},
	{"deletes it and puts it back at once with counters of its own", func(e *env, read item) {
		e.del("POST#p1", "METADATA")
		e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "5", "likeTotal": "12"})
	}},
	{"deletes it, and puts it back as read once c2 was applied to the missing post", func(e *env, read item) {
		e.del("POST#p1", "METADATA")
		e.postComment("c2")
		e.lambdaLike(e.records())
		e.putItem(read)
	}},
	{"deletes it, and puts it back without counters once c1 was deleted too", func(e *env, read item) {
		e.del("POST#p1", "METADATA")
		e.del("POST#p1", "COMMENT#c1")
		e.lambdaLike(e.records())
		e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	}},
}

// deliveries are how the records of the application's write (batch) reach the processor,
// with an earlier batch, applied already before the write (c1's, or the children's),
// delivered again around it.
var deliveries = []struct {
	name    string
	deliver func(e *env, earlier, batch []json.RawMessage)
}{
	{"once", func(e *env, _, batch []json.RawMessage) { e.lambdaLike(batch) }},
	{"crash at every write", func(e *env, _, batch []json.RawMessage) { e.crashAtEveryWrite(batch) }},
	{"one record at a time", func(e *env, _, batch []json.RawMessage) {
		for _, r := range batch {
			e.lambdaLike([]json.RawMessage{r})
		}
	}},
	{"earlier batch again before", func(e *env, earlier, batch []json.RawMessage) {
		e.lambdaLike(earlier)
		e.lambdaLike(batch)
	}},
	{"earlier batch again after", func(e *env, earlier, batch []json.RawMessage) {
		e.lambdaLike(batch)
		e.lambdaLike(earlier)
	}},
	{"earlier batch again with it", func(e *env, earlier, batch []json.RawMessage) {
		e.lambdaLike(append(append([]json.RawMessage{}, earlier...), batch...))
	}},
	{"earlier batch again with it, crash at every write", func(e *env, earlier, batch []json.RawMessage) {
		e.crashAtEveryWrite(append(append([]json.RawMessage{}, earlier...), batch...))
	}},
}

// Every application write of appWrites, its records delivered in every way of
// deliveries: the post ends counting what its comments say.
func TestApplicationWritesTheTarget(t *testing.T) {
	for _, w := range appWrites {
		t.Run(w.name, func(t *testing.T) {
			for _, d := range deliveries {
				t.Run(d.name, func(t *testing.T) {
					e := newPostEnv(t)
					read := e.get("POST#p1", "METADATA")
					c1 := e.applyComment("c1")
					w.write(e, read)
					d.deliver(e, c1, e.records())
					e.drain(100, e.lambdaLike)
					e.check()
				})
			}
		})
	}
}

// Targets written after their sources: comments of a post written before it, and a post
// of a user who does not exist yet. The children's records are applied to the state items
// (no target to copy onto) and delivered again before or after the parents' inserts.
func TestTargetsWrittenAfterTheirSources(t *testing.T) {
	for _, d := range deliveries {
		t.Run(d.name, func(t *testing.T) {
			e := newEnv(t, apply.Options{})
			e.api.failAfter = -1
			e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada"})
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			e.drain(100, e.lambdaLike)
			e.put(map[string]string{"pk": "POST#p2", "sk": "COMMENT#c1", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c1", "likes": "3", "status": "visible"})
			e.put(map[string]string{"pk": "POST#p2", "sk": "COMMENT#c2", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c2", "likes": "4", "status": "visible"})
			e.put(map[string]string{"pk": "POST#p3", "sk": "METADATA", "userId": "u9"})
			children := e.records()
			e.lambdaLike(children)
			if it := e.get("POST#p2", "METADATA"); it != nil {
				t.Fatalf("the comments created their post: %v", it)
			}
			if st := e.get(rules.StatePrefix+"POST#p2", "METADATA"); n(st["commentCount"]) != 2 || n(st["likeTotal"]) != 7 {
				t.Fatalf("the missing post's state: %v, want commentCount 2 and likeTotal 7", st)
			}
			e.put(map[string]string{"pk": "POST#p2", "sk": "METADATA", "userId": "u1"})
			e.put(map[string]string{"pk": "USER#u9", "sk": "PROFILE", "name": "late"})
			d.deliver(e, children, e.records())
			e.drain(100, e.lambdaLike)
			e.check()
			if it := e.get("POST#p2", "METADATA"); n(it["commentCount"]) != 2 || n(it["likeTotal"]) != 7 {
				t.Errorf("POST#p2 counts %d comments and %d likes, want 2 and 7", n(it["commentCount"]), n(it["likeTotal"]))
			}
			if it := e.get("USER#u9", "PROFILE"); n(it["postCount"]) != 1 {
				t.Errorf("USER#u9 counts %d posts, want 1", n(it["postCount"]))
			}
		})
	}
}

// Sequences of application writes and deliveries found by the soaks (in brackets: what
// they found wrong with the mechanism before state items), each a regression test, each
// delivery as Lambda does or crashed after every write in turn.
func TestApplicationWritesUnderRedelivery(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(e *env, deliver func([]json.RawMessage))
	}{
		{"wipes the post while c1 and c2 are in flight, the batch delivered again", func(e *env, deliver func([]json.RawMessage)) {
			c := e.commentsInFlight()
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(c)
		}},
		{"writes wrong counters while c1 and c2 are in flight, the batch delivered again", func(e *env, deliver func([]json.RawMessage)) {
			c := e.commentsInFlight()
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "9", "likeTotal": "40"})
			deliver(c)
		}},
		{"wipes the post, the batch delivered again with the wipe's record", func(e *env, deliver func([]json.RawMessage)) {
			c := e.commentsInFlight()
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(append(c, e.records()...))
		}},
		{"writes back the post read before c1, c3 written, every batch delivered again", func(e *env, deliver func([]json.RawMessage)) {
			read := e.get("POST#p1", "METADATA")
			c := e.commentsInFlight()
			e.postComment("c3")
			beforeIt := e.records() // Denorm's writes of c1 and c2, then c3
			e.putItem(read)
			it := e.records()
			deliver(c)
			deliver(beforeIt)
			deliver(it)
			deliver(c)
			deliver(beforeIt)
		}},
		{"comments on a post that does not exist yet, then writes the post, the batch delivered again", func(e *env, deliver func([]json.RawMessage)) {
			e.del("POST#p1", "METADATA")
			e.del("POST#p1", "COMMENT#c0")
			deliver(e.records())
			c := e.commentsInFlight()
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(c)
		}},
		{"deletes the post and puts it back, then puts it back again, the batch before delivered again between", func(e *env, deliver func([]json.RawMessage)) {
			read := e.get("POST#p1", "METADATA")
			c1 := e.applyComment("c1")
			e.postComment("c2")
			c2 := e.records() // Denorm's writes of c1, then c2
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "0", "likeTotal": "0"})
			first := e.records()
			deliver(c1) // delivered again, onto the new item
			e.del("POST#p1", "METADATA")
			e.putItem(read)
			deliver(c1)
			deliver(c2)
			deliver(first)
		}},
		{"deletes the post and puts it back, then wipes it, the batch before delivered again between", func(e *env, deliver func([]json.RawMessage)) {
			c1 := e.applyComment("c1")
			e.postComment("c2")
			c2 := e.records()
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "0", "likeTotal": "0"})
			first := e.records()
			deliver(c1)
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(c2)
			deliver(first)
		}},
		{"writes back a post read before it was deleted and put back [an earlier incarnation's write count]", func(e *env, deliver func([]json.RawMessage)) {
			c1 := e.applyComment("c1")
			e.drain(100, e.lambdaLike)
			back := e.get("POST#p1", "METADATA")
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(c1)
			recreated := e.records()
			delete(back, "commentCount")
			delete(back, "likeTotal")
			e.putItem(back)
			deliver(recreated)
		}},
		{"puts back a deleted post, c1 applied while it was missing comes again, then wipes it [a fold after the parked records]", func(e *env, deliver func([]json.RawMessage)) {
			e.del("POST#p1", "METADATA")
			removed := e.records()
			e.postComment("c1")
			c1 := e.records()
			deliver(removed)
			deliver(c1)
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			reput := e.records()
			deliver(c1)
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			e.postComment("c2")
			rest := e.records()
			deliver(reput)
			deliver(rest)
		}},
		{"puts back a deleted post, c1 applied while it was missing comes again, then deletes and puts it back", func(e *env, deliver func([]json.RawMessage)) {
			e.del("POST#p1", "METADATA")
			removed := e.records()
			e.postComment("c1")
			c1 := e.records()
			deliver(removed)
			deliver(c1)
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			reput := e.records()
			deliver(c1)
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			e.postComment("c2")
			rest := e.records()
			deliver(reput)
			deliver(rest)
		}},
		{"wipes the post twice the same way, c1 delivered again between [replaced twice the same way]", func(e *env, deliver func([]json.RawMessage)) {
			c1 := e.applyComment("c1")
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(c1)
			first := e.records()
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(first)
		}},
		{"deletes the post and puts it back wiped, c1 again, wipes it again [a repeat between two replacements]", func(e *env, deliver func([]json.RawMessage)) {
			c1 := e.applyComment("c1")
			e.drain(100, e.lambdaLike)
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(c1)
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			deliver(e.records())
		}},
		{"deletes the post, c1 again while it is missing, puts it back with commentCount 0, the delete's record alone after", func(e *env, deliver func([]json.RawMessage)) {
			c1 := e.applyComment("c1")
			e.drain(100, e.lambdaLike)
			e.del("POST#p1", "METADATA")
			removed := e.records()
			deliver(c1)
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "0"})
			e.postComment("c2")
			rest := e.records()
			deliver(removed)
			deliver(rest)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range []struct {
				name    string
				deliver func(e *env) func([]json.RawMessage)
			}{
				{"as Lambda does", func(e *env) func([]json.RawMessage) { return e.lambdaLike }},
				{"crash at every write", func(e *env) func([]json.RawMessage) { return e.crashAtEveryWrite }},
			} {
				t.Run(d.name, func(t *testing.T) {
					e := newPostEnv(t)
					tc.run(e, d.deliver(e))
					e.drain(100, d.deliver(e))
					e.check()
				})
			}
		})
	}
}

// commentsInFlight puts comments c1 and c2 on post p1 and applies their records once; it
// returns them, to deliver again.
func (e *env) commentsInFlight() []json.RawMessage {
	e.t.Helper()
	e.postComment("c1")
	e.postComment("c2")
	recs := e.records()
	e.lambdaLike(recs)
	return recs
}

// The application makes a target from another one's item ("duplicate this post"): the new
// post carries the other's counters and copy version, above anything its own state item
// holds. It must count its own comments, none at first, then the two written after.
func TestTargetCopiedFromAnotherTarget(t *testing.T) {
	e := newPostEnv(t)
	for i := 1; i < 6; i++ {
		e.postComment(fmt.Sprintf("c%d", i))
		e.drain(100, e.lambdaLike)
	}
	dup := e.get("POST#p1", "METADATA")
	dup["pk"] = &types.AttributeValueMemberS{Value: "POST#p2"}
	e.putItem(dup)
	e.drain(100, e.lambdaLike)
	e.check()
	for _, id := range []string{"d1", "d2"} {
		e.put(map[string]string{"pk": "POST#p2", "sk": "COMMENT#" + id, "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#" + id, "likes": "1", "status": "visible"})
	}
	e.drain(100, e.lambdaLike)
	e.check()
}

// A delete of the post and its re-put with counter values (an application writing the item
// back as it read it, or with counts of its own, or none), in one batch with a record
// between them that fails (its write is refused): the batch comes again from that record,
// the re-put with it.
func TestDeletedAndPutBackThenRedeliveredFromBetween(t *testing.T) {
	for _, tc := range []struct {
		name    string
		putBack func(e *env, read item)
	}{
		{"as read", func(e *env, read item) { e.putItem(read) }},
		{"with counts of its own", func(e *env, _ item) {
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "commentCount": "5", "likeTotal": "12"})
		}},
		{"without counts", func(e *env, _ item) {
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPostEnv(t)
			e.put(map[string]string{"pk": "POST#p2", "sk": "METADATA", "userId": "u1"})
			e.drain(100, e.lambdaLike)
			read := e.get("POST#p1", "METADATA")
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p2", "sk": "COMMENT#x1", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#x1", "likes": "2", "status": "visible"})
			tc.putBack(e, read)
			batch := e.records()
			e.failingOn("POST#p2", batch, 1)
			e.lambdaLike(batch[1:]) // from the failed record: the re-put again
			e.drain(100, e.lambdaLike)
			e.check()
		})
	}
}

// A batch whose state write landed and whose copy onto the target failed (the invocation
// ended between the two) is delivered again from its first record with more records after
// it, as Lambda does after a batch item failure: the target must get the copy of what the
// first delivery put in the state, whatever the records after it add (nothing, when a
// comment is added and removed).
func TestCopyFailedThenResumedWithMoreRecords(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(e *env)
	}{
		{"nothing more", func(e *env) {}},
		{"a comment added", func(e *env) { e.postComment("c2") }},
		{"a comment added and removed", func(e *env) {
			e.postComment("c2")
			e.del("POST#p1", "COMMENT#c2")
		}},
		{"a comment hidden and shown again", func(e *env) {
			hidden := map[string]string{"pk": "POST#p1", "sk": "COMMENT#c0", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c0", "likes": "3", "status": "hidden"}
			e.put(hidden)
			hidden["status"] = "visible"
			e.put(hidden)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPostEnv(t)
			e.postComment("c1")
			c1 := e.records()
			e.failingOn("POST#p1", c1, 0) // the state write lands, the copy fails
			if st := e.get(rules.StatePrefix+"POST#p1", "METADATA"); n(st["commentCount"]) != 2 {
				t.Fatalf("state after the failed copy: %v, want commentCount 2", st)
			}
			if it := e.get("POST#p1", "METADATA"); n(it["commentCount"]) != 1 {
				t.Fatalf("post after the failed copy: %v, want commentCount 1 (c0's copy)", it)
			}
			tc.after(e)
			e.lambdaLike(append(c1, e.records()...))
			e.drain(100, e.lambdaLike)
			e.check()
		})
	}
}

// Where counts and sums keep their state, in each mode: the state item at
// rules.StatePrefix + the target's partition key, with the target's sort key, holds the
// values, the version and the watermark of the records that reached it (the target's own
// partition's, the relay items', or none with markers); the target holds the values and
// the copy version, equal to the state's, and no other attribute of Denorm's.
func TestStateItemLayout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rules     string
		target    [2]string
		attr      string
		want      int
		watermark string // the state's watermark attribute; "" for none (markers)
		// lastSeq is the record whose sequence number the watermark holds, among those
		// read after the workload (the last of the relay item's or the comments').
		lastSeq func(recs []*record.Change) string
	}{
		{"same partition", testRules, [2]string{"POST#p1", "METADATA"}, "commentCount", 3, rules.WatermarkAttr, lastOf("POST#p1", "COMMENT#", record.Insert)},
		{"relayed", testRules, [2]string{"USER#u1", "PROFILE"}, "postCount", 2, rules.RelayWatermarkAttr, lastOf(rules.RelayPrefix+"USER#u1", "", record.Insert)},
		{"markers", transactionRules, [2]string{"USER#u1", "PROFILE"}, "postCount", 2, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvRules(t, apply.Options{}, tc.rules)
			e.api.failAfter = -1
			e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada"})
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			e.put(map[string]string{"pk": "POST#p2", "sk": "METADATA", "userId": "u1"})
			for i := 0; i < 3; i++ {
				e.postComment(fmt.Sprintf("c%d", i))
			}
			var seen []*record.Change
			e.drain(100, func(b []json.RawMessage) {
				for _, raw := range b {
					if c, err := record.Decode(raw); err == nil {
						seen = append(seen, &c)
					}
				}
				e.lambdaLike(b)
				e.lambdaLike(b) // delivered again: no change
			})
			e.check()

			target := e.get(tc.target[0], tc.target[1])
			st := e.get(rules.StatePrefix+tc.target[0], tc.target[1])
			if st == nil {
				t.Fatalf("no state item at %s%s %s", rules.StatePrefix, tc.target[0], tc.target[1])
			}
			if n(st[tc.attr]) != tc.want || n(target[tc.attr]) != tc.want {
				t.Errorf("%s: state %d, target %d, want %d", tc.attr, n(st[tc.attr]), n(target[tc.attr]), tc.want)
			}
			if v := n(st[rules.StateVersionAttr]); v == 0 || n(target[rules.CopyVersionAttr]) != v {
				t.Errorf("state version %d, target's copy version %v: want equal, not 0", v, target[rules.CopyVersionAttr])
			}
			for name := range target {
				if strings.HasPrefix(name, rules.ReservedPrefix) && name != rules.CopyVersionAttr {
					t.Errorf("target carries %s", name)
				}
			}
			for _, legacy := range rules.LegacyTargetAttrs {
				if target[legacy] != nil {
					t.Errorf("target carries %s", legacy)
				}
			}
			for _, wm := range []string{rules.WatermarkAttr, rules.RelayWatermarkAttr} {
				if wm == tc.watermark {
					continue
				}
				if st[wm] != nil {
					t.Errorf("state holds %s = %v, want none in this mode", wm, st[wm])
				}
			}
			if tc.watermark == "" {
				return
			}
			want := tc.lastSeq(seen)
			if got := record.SeqOf(st[tc.watermark]); want == "" || record.CompareSeq(got, want) != 0 {
				t.Errorf("state %s = %s, want %s (the last record that reached it)", tc.watermark, got, want)
			}
		})
	}
}

// lastOf returns the sequence number of the last record of operation op in partition pk
// whose sort key starts with skPrefix (the comments' inserts carry their deltas; Denorm's
// copies of the author's name onto them carry none).
func lastOf(pk, skPrefix string, op record.Op) func([]*record.Change) string {
	return func(recs []*record.Change) string {
		last := ""
		for _, c := range recs {
			if s(c.Keys["pk"]) == pk && strings.HasPrefix(s(c.Keys["sk"]), skPrefix) && c.Op == op {
				last = c.Seq
			}
		}
		return last
	}
}

// What putting back a target the application wrote costs: one consistent read of its state
// item and at most one write (the copy, of one small item: 1 WCU), whatever the application
// dropped and whatever the mode of its rules; no write when the target shows the state
// already. The copy's own record then writes nothing; it is recognised as Denorm's, with
// no read, only when the copy raised a copy version the item had (the application wrote
// back an older one): a copy onto an item without one, or of the version it has, is
// refreshed once more (one read, no write).
func TestCostOfPuttingBackATarget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rules  string
		write  func(e *env, read item)
		copies int // copies written: 1, or 0 when the target shows the state already
		// ownReads are the reads of the copy's own record: 0 when it is recognised as
		// Denorm's, 1 when it is refreshed once more.
		ownReads int
	}{
		{"post PutItem without counters", testRules, func(e *env, _ item) {
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "title": "edited"})
		}, 1, 1},
		{"post counters SET to 0", testRules, func(e *env, _ item) {
			e.update("POST#p1", "METADATA", "SET commentCount = :z, likeTotal = :z", map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"}})
		}, 1, 1},
		{"post written back stale", testRules, func(e *env, read item) { e.putItem(read) }, 1, 0},
		{"post deleted and put back without counters", testRules, func(e *env, _ item) {
			e.del("POST#p1", "METADATA")
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
		}, 1, 1},
		{"post deleted and put back as it is", testRules, func(e *env, _ item) {
			now := e.get("POST#p1", "METADATA")
			e.del("POST#p1", "METADATA")
			e.putItem(now)
		}, 0, 0},
		{"profile PutItem without its count (relayed)", testRules, func(e *env, _ item) {
			e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada", "email": "ada@example.com"})
		}, 1, 1},
		{"profile PutItem without its count (markers)", transactionRules, func(e *env, _ item) {
			e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada", "email": "ada@example.com"})
		}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvRules(t, apply.Options{}, tc.rules)
			e.api.failAfter = -1
			e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ada"})
			e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
			e.postComment("c0")
			e.drain(100, e.lambdaLike)
			read := e.get("POST#p1", "METADATA")
			for i := 1; i < 3; i++ {
				e.postComment(fmt.Sprintf("c%d", i))
			}
			e.drain(100, e.lambdaLike)
			e.check()

			tc.write(e, read)
			batch := e.records()
			out, err := e.h.Process(context.Background(), record.EncodeEvent(batch))
			if err != nil || out.Failed != "" {
				t.Fatalf("%v %v", err, out.Reason)
			}
			st := out.Stats
			// A post deleted and put back is a source too: its user's count gets a relay
			// write (-1 and +1), which is not the put-back's.
			writes := st.Requests - st.Relayed
			t.Logf("%d record(s): %d refresh(es), %d read(s) (%.1f RCU), %d write request(s) (%.1f WCU), %d cop(ies), %d relay write(s)",
				len(batch), st.Refreshes, st.Reads, st.RCU, st.Requests, st.WCU, st.Copies, st.Relayed)
			if st.Refreshes != 1 || st.Reads != 1 || st.RCU > 1 {
				t.Errorf("%d refreshes with %d reads (%.1f RCU), want 1 consistent read of the state (at most 1 RCU)", st.Refreshes, st.Reads, st.RCU)
			}
			if writes != tc.copies || st.Copies != tc.copies || st.WCU > float64(writes+st.Relayed) {
				t.Errorf("%d write requests besides relay writes, %d copies, %.1f WCU; want %d, %d and 1 WCU a write", writes, st.Copies, st.WCU, tc.copies, tc.copies)
			}
			var own []json.RawMessage // the target's records; relay items' go as usual
			for _, raw := range e.records() {
				if c, err := record.Decode(raw); err == nil && rules.IsReserved(s(c.Keys["pk"])) {
					e.lambdaLike([]json.RawMessage{raw})
				} else {
					own = append(own, raw)
				}
			}
			if len(own) != tc.copies {
				t.Fatalf("%d records after the put-back, want %d (the copy's)", len(own), tc.copies)
			}
			if len(own) > 0 {
				out, err := e.h.Process(context.Background(), record.EncodeEvent(own))
				if err != nil || out.Failed != "" {
					t.Fatalf("%v %v", err, out.Reason)
				}
				t.Logf("the copy's own record: %d refresh(es), %d read(s), %d write request(s)", out.Stats.Refreshes, out.Stats.Reads, out.Stats.Requests)
				if out.Stats.Reads != tc.ownReads || out.Stats.Refreshes != tc.ownReads || out.Stats.Requests != 0 {
					t.Errorf("the copy's own record: %d refreshes, %d reads, %d writes; want %d, %d and none",
						out.Stats.Refreshes, out.Stats.Reads, out.Stats.Requests, tc.ownReads, tc.ownReads)
				}
			}
			e.drain(100, e.lambdaLike)
			e.check()
		})
	}
}

// The metrics of a put-back: TargetsRefreshed and CopiesWritten, and WritesRefusedByCopy
// for a copy the version guard refused (the target deleted again before its refresh ran);
// the metrics of the mechanism before state items are gone.
func TestPutBackMetrics(t *testing.T) {
	e := newPostEnv(t)
	var metrics bytes.Buffer
	h := handler.New(e.set, apply.New(e.api, e.table, e.set, apply.Options{}), handler.Options{Metrics: &metrics})
	handle := func(batch []json.RawMessage) map[string]any {
		t.Helper()
		resp, err := h.Handle(context.Background(), record.EncodeEvent(batch))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle: %v, %v", err, resp.BatchItemFailures)
		}
		return lastJSONLine(t, &metrics)
	}
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1", "title": "edited"})
	emf := handle(e.records())
	if emf["TargetsRefreshed"] != 1.0 || emf["CopiesWritten"] != 1.0 || emf["WritesRefused"] != 0.0 {
		t.Errorf("EMF TargetsRefreshed %v, CopiesWritten %v, WritesRefused %v; want 1, 1, 0", emf["TargetsRefreshed"], emf["CopiesWritten"], emf["WritesRefused"])
	}
	declared := map[string]bool{}
	for _, m := range emf["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Metrics"].([]any) {
		declared[m.(map[string]any)["Name"].(string)] = true
	}
	for _, name := range []string{"TargetsRefreshed", "CopiesWritten", "WritesRefusedByCopy", "MissingTargets"} {
		if !declared[name] {
			t.Errorf("EMF does not declare %s", name)
		}
	}
	for _, name := range []string{"DeltasParked", "ParksFolded", "RestoresCompensated", "AmbiguousRestores", "RestoresDeferred", "RestoresReadOn", "RestoreRecordsRead", "WritesRefusedByFold"} {
		if declared[name] || emf[name] != nil {
			t.Errorf("EMF still has %s", name)
		}
	}
	e.drain(100, e.lambdaLike)

	// Wiped, then deleted before the refresh: the copy finds no target.
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	wiped := e.records()
	e.del("POST#p1", "METADATA")
	emf = handle(wiped)
	if emf["TargetsRefreshed"] != 1.0 || emf["CopiesWritten"] != 0.0 || emf["WritesRefusedByCopy"] != 1.0 || emf["MissingTargets"] != 1.0 {
		t.Errorf("EMF TargetsRefreshed %v, CopiesWritten %v, WritesRefusedByCopy %v, MissingTargets %v; want 1, 0, 1, 1",
			emf["TargetsRefreshed"], emf["CopiesWritten"], emf["WritesRefusedByCopy"], emf["MissingTargets"])
	}
	e.drain(100, e.lambdaLike)
	e.check()
}

// newPostEnv is a new env (no injected failures) with post p1 and its comment c0 applied.
func newPostEnv(t *testing.T) *env {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.postWithAComment()
	return e
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

// applyComment puts comment id on post p1 and delivers its records once; it returns them,
// to deliver again.
func (e *env) applyComment(id string) []json.RawMessage {
	e.t.Helper()
	e.postComment(id)
	recs := e.records()
	e.lambdaLike(recs)
	return recs
}
