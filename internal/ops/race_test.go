package ops_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/ops/opstest"
	"github.com/denorm/denorm/internal/rules"
)

// interfere runs a concurrent write (as the application or the stream processor would
// make it) just before the repair's first write to a given item.
type interfere struct {
	ops.API
	mu     sync.Mutex
	before map[[2]string]func()
}

func (x *interfere) hook(key map[string]types.AttributeValue) {
	k := [2]string{key["pk"].(*types.AttributeValueMemberS).Value, key["sk"].(*types.AttributeValueMemberS).Value}
	x.mu.Lock()
	f := x.before[k]
	delete(x.before, k)
	x.mu.Unlock()
	if f != nil {
		f()
	}
}

// fired checks that every concurrent write was made: the repair wrote each item.
func (x *interfere) fired(t *testing.T) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	for k := range x.before {
		t.Errorf("the repair never wrote %v", k)
	}
}

func (x *interfere) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	x.hook(in.Key)
	return x.API.UpdateItem(ctx, in, o...)
}

// TestRepairYieldsToConcurrentWrites: every repair is conditional on the target being as
// read. A counter whose state item moved is recounted from its sources (its comments are
// in its partition) or found right (resolved); a copy whose source pushed a newer value,
// or whose target was re-linked to another source, gets the fresh source's value, never
// the scanned one.
func TestRepairYieldsToConcurrentWrites(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	comment := func(post, c, user string, extra ...string) opstest.Item {
		it := opstest.Item{"pk": s("POST#" + post), "sk": s("COMMENT#t#" + c), "gsi1pk": s("USER#" + user), "gsi1sk": s("COMMENT#t")}
		for i := 0; i+1 < len(extra); i += 2 {
			it[extra[i]] = s(extra[i+1])
		}
		return it
	}
	p2 := opstest.Item{"pk": s("POST#p2"), "sk": s("METADATA"), "commentCount": n("9")}
	items := []opstest.Item{
		{"pk": s("USER#u1"), "sk": s("PROFILE"), "name": s("Ada"), "avatar": s("a.png")},
		{"pk": s("USER#u2"), "sk": s("PROFILE"), "name": s("Bob"), "avatar": s("b.png")},
		{"pk": s("POST#p1"), "sk": s("METADATA"), "commentCount": n("5")}, // true 2, no state item; a comment and its delta land meanwhile
		p2, // true 1; its state is set right meanwhile
		opstest.StateOf(p2, 4, []string{"commentCount"}, rules.WatermarkAttr, n("100")),
		comment("p1", "c1", "u1", "userName", "Old"),                          // re-linked to u2 meanwhile
		comment("p1", "c2", "u1", "userName", "Stale", "userAvatar", "a.png"), // u1 renamed and pushed meanwhile
		comment("p2", "c3", "u2", "userName", "Bob", "userAvatar", "b.png"),
	}
	items[6]["_dnv_comment-author"] = n("5")
	fx := newFixture(t, items)
	ctx := context.Background()
	write := func(key [2]string, expr string, vals map[string]types.AttributeValue) func() {
		return func() {
			_, err := fx.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(fx.table),
				Key: opstest.Item{"pk": s(key[0]), "sk": s(key[1])}, UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals})
			if err != nil {
				t.Error(err)
			}
		}
	}
	api := &interfere{API: fx.db, before: map[[2]string]func(){
		// Another repair sets p2's state right and copies it.
		opstest.StateKey("POST#p2", "METADATA"): func() {
			out, err := fx.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(fx.table),
				Key:              opstest.Item{"pk": s(rules.StatePrefix + "POST#p2"), "sk": s("METADATA")},
				UpdateExpression: aws.String("SET commentCount = :v ADD #v :one"), ExpressionAttributeNames: map[string]string{"#v": rules.StateVersionAttr},
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": n("1"), ":one": n("1")}, ReturnValues: types.ReturnValueAllNew})
			if err == nil {
				err = opstest.CopyState(ctx, fx.db, fx.table, "POST#p2", "METADATA", out.Attributes)
			}
			if err != nil {
				t.Error(err)
			}
		},
		// The application moves c1 to another author (no copied values yet).
		{"POST#p1", "COMMENT#t#c1"}: write([2]string{"POST#p1", "COMMENT#t#c1"}, "SET gsi1pk = :u", map[string]types.AttributeValue{":u": s("USER#u2")}),
	}}
	// A comment is added to p1 and the stream processor applies its delta to p1's state item
	// with its watermark, and copies the state onto p1.
	api.before[opstest.StateKey("POST#p1", "METADATA")] = func() {
		_, err := fx.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(fx.table), Item: comment("p1", "c9", "u2", "userName", "Bob", "userAvatar", "b.png")})
		if err != nil {
			t.Error(err)
		}
		if _, err = opstest.Delta(ctx, fx.db, fx.table, "POST#p1", "METADATA", "commentCount", 1, rules.WatermarkAttr, 200); err != nil {
			t.Error(err)
		}
	}
	// u1 is renamed and the stream processor pushes the new name to c2.
	api.before[[2]string{"POST#p1", "COMMENT#t#c2"}] = func() {
		for _, in := range []*dynamodb.UpdateItemInput{
			{Key: opstest.Item{"pk": s("USER#u1"), "sk": s("PROFILE")}, UpdateExpression: aws.String("SET #n = :v"),
				ExpressionAttributeNames: map[string]string{"#n": "name"}, ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("Ada L.")}},
			{Key: opstest.Item{"pk": s("POST#p1"), "sk": s("COMMENT#t#c2")}, UpdateExpression: aws.String("SET userName = :v, #ver = :ver"),
				ExpressionAttributeNames: map[string]string{"#ver": "_dnv_comment-author"}, ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("Ada L."), ":ver": n("6")}},
		} {
			in.TableName = aws.String(fx.table)
			if _, err := fx.db.UpdateItem(ctx, in); err != nil {
				t.Error(err)
			}
		}
	}

	f, err := rules.Load("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]ops.RuleStats{}
	for _, rule := range []string{"post-comment-count", "comment-author"} {
		ev, err := ops.NewEvaluator(f, rule)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ops.Run(ctx, ops.Config{API: api, Table: fx.table, Eval: ev, Repair: true, Mode: "repair " + rule})
		if err != nil {
			t.Fatal(err)
		}
		stats[rule] = rep.Rules[0].RuleStats
	}
	api.fired(t)
	if s := stats["post-comment-count"]; s.Drift != 2 || s.Repaired != 1 || s.Resolved != 1 || s.Conflicts != 0 {
		t.Errorf("counters: %+v, want 2 drifted: 1 repaired from a recount (p1), 1 resolved (p2)", s)
	}
	if s := stats["comment-author"]; s.Drift != 2 || s.Repaired != 1 || s.Resolved != 1 {
		t.Errorf("copies: %+v, want 2 drifted: c1 repaired from its new author, c2 resolved", s)
	}
	got, err := opstest.Scan(ctx, fx.db, fx.table)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]map[string]string{
		{"POST#p1", "METADATA"}:                 {"commentCount": "3", rules.CopyVersionAttr: "2"}, // recounted after the delta landed: c1, c2 and c9, not the scan's 2
		opstest.StateKey("POST#p1", "METADATA"): {"commentCount": "3", rules.StateVersionAttr: "2", rules.WatermarkAttr: "200"},
		{"POST#p2", "METADATA"}:                 {"commentCount": "1", rules.CopyVersionAttr: "5"},
		opstest.StateKey("POST#p2", "METADATA"): {"commentCount": "1", rules.StateVersionAttr: "5"}, // set once, by the other repair
		{"POST#p1", "COMMENT#t#c1"}:             {"userName": "Bob", "userAvatar": "b.png"},
		{"POST#p1", "COMMENT#t#c2"}:             {"userName": "Ada L.", "userAvatar": "a.png", "_dnv_comment-author": "6"},
	}
	found := map[[2]string]bool{}
	for _, it := range got {
		k := [2]string{it["pk"].(*types.AttributeValueMemberS).Value, it["sk"].(*types.AttributeValueMemberS).Value}
		found[k] = true
		for attr, w := range want[k] {
			var v string
			switch x := it[attr].(type) {
			case *types.AttributeValueMemberS:
				v = x.Value
			case *types.AttributeValueMemberN:
				v = x.Value
			}
			if v != w {
				t.Errorf("%v %s = %q, want %q", k, attr, v, w)
			}
		}
	}
	for k := range want {
		if !found[k] {
			t.Errorf("%v is missing", k)
		}
	}
}

// TestCounterRepairYieldsToTheStream: a count whose sources only a scan finds
// (user-post-count) is repaired in its state item on condition that the state's version
// is the one the target's copy showed when it was scanned. A delta the stream processor
// applies between the scan and the repair's write makes the repair a conflict: the
// scan's total may be the stale one, and the state keeps the delta. The next repair, with
// nothing moving, sets it right.
func TestCounterRepairYieldsToTheStream(t *testing.T) {
	n := func(v int) types.AttributeValue { return nAV(v) }
	u1, u2 := userItem("u1"), userItem("u2")
	u1["postCount"], u2["postCount"] = n(5), n(4)
	items := []opstest.Item{u1, u2,
		opstest.StateOf(u1, 3, []string{"postCount"}, rules.RelayWatermarkAttr, n(500)), // true 1 (pA); a post and its delta land meanwhile
		opstest.StateOf(u2, 2, []string{"postCount"}, rules.RelayWatermarkAttr, n(510)), // true 2 (pB, pC): repaired
		postItem("pA", "u1", true), postItem("pB", "u2", true), postItem("pC", "u2", true), postItem("pX", "u1", false),
	}
	fx := newFixture(t, items)
	ctx := context.Background()
	api := &interfere{API: fx.db, before: map[[2]string]func(){
		opstest.StateKey("USER#u1", "PROFILE"): func() {
			if _, err := fx.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(fx.table), Item: postItem("pD", "u1", true)}); err != nil {
				t.Error(err)
			}
			if _, err := opstest.Delta(ctx, fx.db, fx.table, "USER#u1", "PROFILE", "postCount", 1, rules.RelayWatermarkAttr, 600); err != nil {
				t.Error(err)
			}
		},
	}}
	f, err := rules.Load("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ops.NewEvaluator(f, "user-post-count")
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	if ops.Recountable(set.Table, set.Rule("user-post-count")) {
		t.Fatal("user-post-count is recountable: this test wants a count only a scan finds the sources of")
	}
	rep, err := ops.Run(ctx, ops.Config{API: api, Table: fx.table, Eval: ev, Repair: true, Mode: "repair user-post-count"})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Rules[0].RuleStats; s.Drift != 2 || s.Repaired != 1 || s.Conflicts != 1 || s.Resolved+s.Failed != 0 {
		t.Errorf("%+v, want 2 drifted: u2 repaired, u1 a conflict", s)
	}
	state := func(pk string) (target, st opstest.Item) {
		t.Helper()
		for _, k := range [][2]string{{pk, "PROFILE"}, opstest.StateKey(pk, "PROFILE")} {
			out, err := fx.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(fx.table),
				Key: opstest.Item{"pk": sAV(k[0]), "sk": sAV(k[1])}, ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			target, st = st, out.Item
		}
		return target, st
	}
	check := func(pk string, count, version int, why string) {
		t.Helper()
		target, st := state(pk)
		if number(st["postCount"]) != count || number(st[rules.StateVersionAttr]) != version {
			t.Errorf("%s's state item holds postCount %d at version %d, want %d at %d (%s)", pk, number(st["postCount"]), number(st[rules.StateVersionAttr]), count, version, why)
		}
		if number(target["postCount"]) != count || number(target[rules.CopyVersionAttr]) != version {
			t.Errorf("%s shows postCount %d copied from version %d, want %d from %d", pk, number(target["postCount"]), number(target[rules.CopyVersionAttr]), count, version)
		}
	}
	api.fired(t)
	check("USER#u1", 6, 4, "the delta landed, the scan's stale total of 1 was not written")
	check("USER#u2", 2, 3, "repaired")

	rep, err = ops.Run(ctx, ops.Config{API: fx.db, Table: fx.table, Eval: ev, Repair: true, Mode: "repair again"})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Rules[0].RuleStats; s.Drift != 1 || s.Repaired != 1 {
		t.Errorf("second repair: %+v, want u1 repaired", s)
	}
	check("USER#u1", 2, 5, "pA and pD")
	rep, err = ops.Run(ctx, ops.Config{API: fx.db, Table: fx.table, Eval: ev, Mode: "verify"})
	if err != nil {
		t.Fatal(err)
	}
	requireClean(t, rep)
}
