package reliability

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/chaos"
	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/provision"
)

// TTL expiries, delivered twice: onExpiry remove counts an expired comment as gone,
// onExpiry ignore keeps it counted (in watermark and in relay mode), an application delete
// counts as gone for both; a post that expired is not brought back by the deltas of its
// comments deleted after it (missingTarget: skip).
func TestTTLExpiry(t *testing.T) {
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	t.Cleanup(func() { _ = provision.Delete(context.Background(), db, table) })
	hooks := chaos.NewHooks(chaos.Faults{TTL: true, DeliverTwice: true}, 1)
	p, err := local.Start(context.Background(), local.Config{
		Endpoint: ddbtest.Endpoint(t), Table: table, RulesPath: "testdata/ttl.yaml", Logger: quiet(),
		Mapping: esm.Config{BatchSize: 3, ReportBatchItemFailures: true, PollInterval: 20 * time.Millisecond, Hooks: hooks.ESM()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	key := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
	}
	put := func(item map[string]types.AttributeValue) {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(pk, sk string) {
		if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key(pk, sk)}); err != nil {
			t.Fatal(err)
		}
	}
	expire := func(pk, sk string) { // what DynamoDB's TTL process does, minus the wait
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key(pk, sk),
			UpdateExpression:          aws.String("SET #t = :t"),
			ExpressionAttributeNames:  map[string]string{"#t": "ttl"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberN{Value: "1000000000"}}})
		if err != nil {
			t.Fatal(err)
		}
		del(pk, sk)
	}
	drain := func() { drainLocal(t, p) }
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }
	put(map[string]types.AttributeValue{"pk": s("USER#u1"), "sk": s("PROFILE")})
	put(map[string]types.AttributeValue{"pk": s("POST#p1"), "sk": s("METADATA"), "ttl": n(4102444800)})
	drain()
	for i := 1; i <= 6; i++ {
		put(map[string]types.AttributeValue{"pk": s("POST#p1"), "sk": s("COMMENT#c" + strconv.Itoa(i)), "userId": s("u1"),
			"likes": n(i), "ttl": n(4102444800)})
	}
	drain()
	expire("POST#p1", "COMMENT#c1")
	expire("POST#p1", "COMMENT#c2")
	expire("POST#p1", "COMMENT#c3")
	del("POST#p1", "COMMENT#c4") // the application's delete
	drain()
	post := getItemDB(t, db, table, "POST#p1", "METADATA")
	user := getItemDB(t, db, table, "USER#u1", "PROFILE")
	for _, c := range []struct{ what, got, want string }{
		{"post liveComments (remove)", attrN(post, "liveComments"), "2"},
		{"post keptComments (ignore)", attrN(post, "keptComments"), "5"},
		{"post keptLikes (ignore)", attrN(post, "keptLikes"), "17"},
		{"user keptComments (ignore, relay mode)", attrN(user, "keptComments"), "5"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.what, c.got, c.want)
		}
	}
	if got := len(hooks.Poison()); got != 0 {
		t.Errorf("%d poison records", got)
	}

	// The post expires; then its last comments go. Nothing may bring the post back.
	expire("POST#p1", "METADATA")
	drain()
	del("POST#p1", "COMMENT#c5")
	expire("POST#p1", "COMMENT#c6")
	drain()
	if it := getItemDB(t, db, table, "POST#p1", "METADATA"); it != nil {
		t.Errorf("the expired post came back: %v", it)
	}
	user = getItemDB(t, db, table, "USER#u1", "PROFILE")
	if got := attrN(user, "keptComments"); got != "4" {
		t.Errorf("user keptComments = %s, want 4 (c4 and c5 deleted, the expired ones kept)", got)
	}
}
