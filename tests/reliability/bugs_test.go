package reliability

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/provision"
)

func startLocal(t *testing.T, cfg esm.Config) *local.Pipeline {
	t.Helper()
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	t.Cleanup(func() { _ = provision.Delete(context.Background(), db, table) })
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	cfg.ReportBatchItemFailures = true
	p, err := local.Start(context.Background(), local.Config{RulesPath: rulesPath, Endpoint: ddbtest.Endpoint(t), Table: table,
		Mapping: cfg, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func drainLocal(t *testing.T, p *local.Pipeline) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Drain(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

func putItem(t *testing.T, p *local.Pipeline, kv ...string) {
	t.Helper()
	item := map[string]types.AttributeValue{}
	for i := 0; i+1 < len(kv); i += 2 {
		item[kv[i]] = &types.AttributeValueMemberS{Value: kv[i+1]}
	}
	if _, err := p.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(p.Table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func getItem(t *testing.T, p *local.Pipeline, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := p.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(p.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func attrS(it map[string]types.AttributeValue, name string) string {
	if s, ok := it[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return "<absent>"
}

// An application that rewrites a copy target with PutItem (a comment edited by replacing
// the whole item, with a stale author name) after a rename was pushed into it: the Put
// drops the version attribute, and the record must still pull the current name back (the
// planner once took any change of the version attribute for Denorm's own write).
func TestPutOverPushedCopyIsPulledAgain(t *testing.T) {
	p := startLocal(t, esm.Config{})
	putItem(t, p, "pk", "USER#u1", "sk", "PROFILE", "name", "Ann", "avatar", "a.png")
	putItem(t, p, "pk", "POST#p1", "sk", "COMMENT#2025-01-01T00:00:00Z#c1", "gsi1pk", "USER#u1", "gsi1sk", "COMMENT#2025-01-01T00:00:00Z", "text", "hi")
	drainLocal(t, p)
	putItem(t, p, "pk", "USER#u1", "sk", "PROFILE", "name", "Bea", "avatar", "b.png") // pushed: the comment gets _dnv_comment-author
	drainLocal(t, p)
	putItem(t, p, "pk", "POST#p1", "sk", "COMMENT#2025-01-01T00:00:00Z#c1", "gsi1pk", "USER#u1", "gsi1sk", "COMMENT#2025-01-01T00:00:00Z", "text", "edited", "userName", "stale")
	drainLocal(t, p)
	c := getItem(t, p, "POST#p1", "COMMENT#2025-01-01T00:00:00Z#c1")
	if attrS(c, "userName") != "Bea" || attrS(c, "userAvatar") != "b.png" {
		t.Fatalf("comment after the application's Put: userName %s, userAvatar %s; want Bea, b.png", attrS(c, "userName"), attrS(c, "userAvatar"))
	}
}

// onFirstUpdate wraps the executor's client: the first UpdateItem on key (after arm) runs
// before() first, as another writer would between Denorm's query and its write.
type onFirstUpdate struct {
	apply.API
	mu     sync.Mutex
	armed  bool
	pk, sk string
	before func()
}

func (o *onFirstUpdate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	o.mu.Lock()
	fire := o.armed && attrS(in.Key, "pk") == o.pk && attrS(in.Key, "sk") == o.sk
	if fire {
		o.armed = false
	}
	o.mu.Unlock()
	if fire {
		o.before()
	}
	return o.API.UpdateItem(ctx, in, opt...)
}

// A rename's fan-out finds a comment on the author's index; before its write lands, the
// application moves the comment to another author. The push must not land (it once did,
// guarded by the version only: the move's pull then failed its version guard and the
// comment kept the old author's name for good).
func TestPushAfterRelinkDoesNotLand(t *testing.T) {
	const pk, sk = "POST#p1", "COMMENT#2025-01-01T00:00:00Z#c1"
	hook := &onFirstUpdate{pk: pk, sk: sk}
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	t.Cleanup(func() { _ = provision.Delete(context.Background(), db, table) })
	p, err := local.Start(context.Background(), local.Config{
		Endpoint: ddbtest.Endpoint(t), Table: table, RulesPath: rulesPath, Logger: quiet(),
		Mapping: esm.Config{ReportBatchItemFailures: true, PollInterval: 20 * time.Millisecond},
		WrapAPI: func(api apply.API) apply.API { hook.API = api; return hook },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	drain := func() { drainLocal(t, p) }
	put := func(kv ...string) {
		item := map[string]types.AttributeValue{}
		for i := 0; i+1 < len(kv); i += 2 {
			item[kv[i]] = &types.AttributeValueMemberS{Value: kv[i+1]}
		}
		if _, err := p.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put("pk", "USER#u0", "sk", "PROFILE", "name", "Ann", "avatar", "a.png")
	put("pk", "USER#u1", "sk", "PROFILE", "name", "Bob", "avatar", "b.png")
	put("pk", pk, "sk", sk, "gsi1pk", "USER#u0", "gsi1sk", "COMMENT#2025-01-01T00:00:00Z", "text", "hi")
	drain()
	hook.before = func() {
		_, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(table),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
			UpdateExpression:          aws.String("SET gsi1pk = :u"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: "USER#u1"}}})
		if err != nil {
			t.Error(err)
		}
	}
	hook.mu.Lock()
	hook.armed = true
	hook.mu.Unlock()
	put("pk", "USER#u0", "sk", "PROFILE", "name", "Ann 2", "avatar", "a2.png")
	drain()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Item
	if attrS(c, "gsi1pk") != "USER#u1" {
		t.Fatalf("the hook did not move the comment: gsi1pk %s", attrS(c, "gsi1pk"))
	}
	if attrS(c, "userName") != "Bob" || attrS(c, "userAvatar") != "b.png" {
		t.Fatalf("comment moved to USER#u1 (Bob, b.png) holds userName %s, userAvatar %s", attrS(c, "userName"), attrS(c, "userAvatar"))
	}
}

func getItemDB(t *testing.T, db *dynamodb.Client, table, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func attrN(it map[string]types.AttributeValue, name string) string {
	if n, ok := it[name].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return "<absent>"
}

func itoa(n int) string { return strconv.Itoa(n) }

// A membership whose role is an empty map is mirrored like any other: the member item
// gets the same empty map. DynamoDB Local writes an empty map as {} in stream records
// (DynamoDB writes {"M":{}}), and the SDK's Streams client decodes {} to nil or to the
// value of another attribute of the item: the emulator then discards the record without an
// invocation, or hands the function a wrong value. Denorm's own job and version registry
// items hold an empty map when a fan-out only removes attributes (onSourceDelete: remove),
// so their records are lost the same way.
func TestEmptyMapReachesTheFunction(t *testing.T) {
	p := startLocal(t, esm.Config{OnFailureDir: t.TempDir()})
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := p.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.Table), Item: map[string]types.AttributeValue{
		"pk": s("USER#u1"), "sk": s("GROUP#g1"), "gsi2pk": s("GROUP#g1"), "gsi2sk": s("USER#u1"),
		"joinedAt": s("2025-01-01T00:00:00Z"), "role": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}})
	if err != nil {
		t.Fatal(err)
	}
	drainLocal(t, p)
	if st := p.Mapping.Stats(); st.OnFailure != 0 {
		t.Errorf("%d records went to the on-failure destination", st.OnFailure)
	}
	m := getItem(t, p, "GROUP#g1", "USER#u1")
	if role, ok := m["role"].(*types.AttributeValueMemberM); !ok || len(role.Value) != 0 {
		t.Errorf("member role = %#v, want an empty map", m["role"])
	}
}
