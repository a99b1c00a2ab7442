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

func (x *interfere) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	x.hook(in.Key)
	return x.API.UpdateItem(ctx, in, o...)
}

// TestRepairYieldsToConcurrentWrites: every repair is conditional on the target being as
// read. A counter that moved is recounted from its sources (its comments are in its
// partition) or found right (resolved); a copy
// whose source pushed a newer value, or whose target was re-linked to another source, gets
// the fresh source's value, never the scanned one.
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
	items := []opstest.Item{
		{"pk": s("USER#u1"), "sk": s("PROFILE"), "name": s("Ada"), "avatar": s("a.png")},
		{"pk": s("USER#u2"), "sk": s("PROFILE"), "name": s("Bob"), "avatar": s("b.png")},
		{"pk": s("POST#p1"), "sk": s("METADATA"), "commentCount": n("5")},                     // true 2; a comment and its delta land meanwhile
		{"pk": s("POST#p2"), "sk": s("METADATA"), "commentCount": n("9"), "_dn_wm": n("100")}, // true 1; set right meanwhile
		comment("p1", "c1", "u1", "userName", "Old"),                                          // re-linked to u2 meanwhile
		comment("p1", "c2", "u1", "userName", "Stale", "userAvatar", "a.png"),                 // u1 renamed and pushed meanwhile
		comment("p2", "c3", "u2", "userName", "Bob", "userAvatar", "b.png"),
	}
	items[5]["_dnv_comment-author"] = n("5")
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
		// Another writer sets p2's counter right.
		{"POST#p2", "METADATA"}: write([2]string{"POST#p2", "METADATA"}, "SET commentCount = :v", map[string]types.AttributeValue{":v": n("1")}),
		// The application moves c1 to another author (no copied values yet).
		{"POST#p1", "COMMENT#t#c1"}: write([2]string{"POST#p1", "COMMENT#t#c1"}, "SET gsi1pk = :u", map[string]types.AttributeValue{":u": s("USER#u2")}),
	}}
	// A comment is added to p1 and the stream processor applies its delta with its watermark.
	api.before[[2]string{"POST#p1", "METADATA"}] = func() {
		_, err := fx.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(fx.table), Item: comment("p1", "c9", "u2", "userName", "Bob", "userAvatar", "b.png")})
		if err != nil {
			t.Error(err)
		}
		_, err = fx.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(fx.table),
			Key: opstest.Item{"pk": s("POST#p1"), "sk": s("METADATA")}, UpdateExpression: aws.String("ADD commentCount :one SET #wm = :wm"),
			ExpressionAttributeNames:  map[string]string{"#wm": "_dn_wm"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1"), ":wm": n("200")}})
		if err != nil {
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
		{"POST#p1", "METADATA"}:     {"commentCount": "3"}, // recounted after the delta landed: c1, c2 and c9, not the scan's 2
		{"POST#p2", "METADATA"}:     {"commentCount": "1"},
		{"POST#p1", "COMMENT#t#c1"}: {"userName": "Bob", "userAvatar": "b.png"},
		{"POST#p1", "COMMENT#t#c2"}: {"userName": "Ada L.", "userAvatar": "a.png", "_dnv_comment-author": "6"},
	}
	for _, it := range got {
		k := [2]string{it["pk"].(*types.AttributeValueMemberS).Value, it["sk"].(*types.AttributeValueMemberS).Value}
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
}
