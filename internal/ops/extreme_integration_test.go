package ops_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ops/opstest"
)

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func nv(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// Verify finds max and min targets that differ from their sources (wrong, missing, held
// without a source, a number where the sources' strings are), --repair recomputes them
// from one query of their sources, and a second verify is clean.
func TestVerifyAndRepairExtremes(t *testing.T) {
	items := []opstest.Item{
		// post p1: comments at 01-02 (visible), 01-05 (hidden), 01-03 (visible); lastCommentAt wrong.
		{"pk": sv("POST#p1"), "sk": sv("METADATA"), "lastCommentAt": sv("2026-01-05"), "firstCommentAt": sv("2026-01-02")},
		{"pk": sv("POST#p1"), "sk": sv("COMMENT#a"), "createdAt": sv("2026-01-02"), "status": sv("visible")},
		{"pk": sv("POST#p1"), "sk": sv("COMMENT#b"), "createdAt": sv("2026-01-05"), "status": sv("hidden")},
		{"pk": sv("POST#p1"), "sk": sv("COMMENT#c"), "createdAt": sv("2026-01-03"), "status": sv("visible")},
		// post p2: no comments, but holds both (drift: should be absent).
		{"pk": sv("POST#p2"), "sk": sv("METADATA"), "lastCommentAt": sv("2026-01-01"), "firstCommentAt": nv("3")},
		// product x: offers 30, 10 (inactive), 20; cheapest missing, highest right.
		{"pk": sv("PRODUCT#x"), "sk": sv("PRODUCT"), "highestPrice": nv("30"), "latestPrice": nv("30")},
		{"pk": sv("SELLER#s1"), "sk": sv("OFFER#o1"), "gsi1pk": sv("PRODUCT#x"), "gsi1sk": sv("OFFER#o1"), "price": nv("30"), "active": &types.AttributeValueMemberBOOL{Value: true}, "listedAt": sv("2026-03-01")},
		{"pk": sv("SELLER#s2"), "sk": sv("OFFER#o2"), "gsi1pk": sv("PRODUCT#x"), "gsi1sk": sv("OFFER#o2"), "price": nv("10"), "active": &types.AttributeValueMemberBOOL{Value: false}},
		{"pk": sv("SELLER#s2"), "sk": sv("OFFER#o3"), "gsi1pk": sv("PRODUCT#x"), "gsi1sk": sv("OFFER#o3"), "price": nv("20.0"), "active": &types.AttributeValueMemberBOOL{Value: true}, "listedAt": sv("2026-03-01")},
		// offers of a product that does not exist: nothing to check or create.
		{"pk": sv("SELLER#s3"), "sk": sv("OFFER#o4"), "gsi1pk": sv("PRODUCT#gone"), "gsi1sk": sv("OFFER#o4"), "price": nv("5"), "active": &types.AttributeValueMemberBOOL{Value: true}},
	}
	fx := newFixtureOf(t, "../rules/testdata/valid/extremes.yaml", items)
	cfg := fx.config(false)
	cfg.Mode = "verify"
	rep := fx.run(cfg)
	// product x's latest offer is o3: listed the same day as o1, its key is greater.
	// p1's recentComments are missing: the visible comments c and a.
	// x's sellerCount is missing, and so are the reference items of its sellers s1 and s2,
	// which have active offers (o2 is inactive).
	want := map[string]int{"post-last-comment": 2, "post-first-comment": 1, "product-cheapest": 1, "product-latest-offer": 1, "post-recent-comments": 1,
		"product-sellers": 3}
	if got := drift(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("drift %v, want %v", got, want)
	}
	fx.repairThenClean(t)
	get := func(pk, sk string) map[string]types.AttributeValue {
		out, err := fx.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(fx.table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": sv(pk), "sk": sv(sk)}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	if v, _ := get("POST#p1", "METADATA")["lastCommentAt"].(*types.AttributeValueMemberS); v == nil || v.Value != "2026-01-03" {
		t.Errorf("lastCommentAt of p1: %v, want 2026-01-03", v)
	}
	// A repair raises the rule's version as the processor's writes do: otherwise the
	// processor takes the repair's record for an application's write and recomputes.
	if v, _ := get("POST#p1", "METADATA")["_dnt_post-last-comment"].(*types.AttributeValueMemberN); v == nil || v.Value != "1" {
		t.Errorf("_dnt_post-last-comment of p1 after the repair: %v, want 1", v)
	}
	var listed []string
	if l, ok := get("POST#p1", "METADATA")["recentComments"].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			listed = append(listed, e.(*types.AttributeValueMemberM).Value["sk"].(*types.AttributeValueMemberS).Value)
		}
	}
	if !reflect.DeepEqual(listed, []string{"COMMENT#c", "COMMENT#a"}) {
		t.Errorf("recentComments of p1 after repair: %v, want COMMENT#c, COMMENT#a (the visible ones, newest first)", listed)
	}
	if it := get("POST#p2", "METADATA"); it["lastCommentAt"] != nil || it["firstCommentAt"] != nil {
		t.Errorf("p2 without comments: %v", it)
	}
	if it := get("PRODUCT#x", "PRODUCT"); !reflect.DeepEqual(it["latestPrice"], nv("20")) || !reflect.DeepEqual(it["latestOfferActive"], &types.AttributeValueMemberBOOL{Value: true}) {
		t.Errorf("latest offer of x: %v %v, want o3's 20 and true", it["latestPrice"], it["latestOfferActive"])
	}
	if v, _ := get("PRODUCT#x", "PRODUCT")["sellerCount"].(*types.AttributeValueMemberN); v == nil || v.Value != "2" {
		t.Errorf("sellerCount of x: %v, want 2", v)
	}
	if v, _ := get("PRODUCT#x", "PRODUCT")["cheapestPrice"].(*types.AttributeValueMemberN); v == nil || v.Value != "20" {
		t.Errorf("cheapestPrice of x: %v, want 20 (DynamoDB normalizes 20.0)", v)
	}
}

// A max into a time bucket: verify finds a day item holding a wrong value and one missing
// (its sources create it), --repair writes the first and creates the second with its
// expiry, and a second verify is clean.
func TestVerifyAndRepairBucketExtremes(t *testing.T) {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	at := func(daysAgo, hour int) string {
		return today.Add(-time.Duration(daysAgo)*24*time.Hour + time.Duration(hour)*time.Hour).Format(time.RFC3339)
	}
	day := func(daysAgo int) string { return "DAY#" + at(daysAgo, 0)[:10] }
	items := []opstest.Item{
		{"pk": sv("POST#p9"), "sk": sv("METADATA"), "firstCommentAt": sv(at(1, 8)), // hidden comments: no lastCommentAt
			"recentComments": &types.AttributeValueMemberL{Value: []types.AttributeValue{}}},
		{"pk": sv("POST#p9"), "sk": sv("COMMENT#a"), "createdAt": sv(at(1, 8)), "status": sv("hidden")},
		{"pk": sv("POST#p9"), "sk": sv("COMMENT#b"), "createdAt": sv(at(1, 10)), "status": sv("hidden")},
		{"pk": sv("POST#p9"), "sk": sv("COMMENT#c"), "createdAt": sv(at(0, 9)), "status": sv("hidden")},
		{"pk": sv("POST#p9"), "sk": sv(day(0)), "lastCommentAt": sv(at(0, 7))}, // wrong: c is at 9
		// yesterday's item is missing: a and b create it
	}
	fx := newFixtureOf(t, "../rules/testdata/valid/extremes.yaml", items)
	cfg := fx.config(false)
	cfg.Mode = "verify"
	if got := drift(fx.run(cfg)); !reflect.DeepEqual(got, map[string]int{"post-day-last-comment": 2}) {
		t.Errorf("drift %v, want post-day-last-comment: 2", got)
	}
	fx.repairThenClean(t)
	out, err := fx.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(fx.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": sv("POST#p9"), "sk": sv(day(1))}})
	if err != nil {
		t.Fatal(err)
	}
	wantTTL := strconv.FormatInt(today.Add(90*24*time.Hour).Unix(), 10) // yesterday's end + 90d
	if !reflect.DeepEqual(out.Item["lastCommentAt"], sv(at(1, 10))) || !reflect.DeepEqual(out.Item["ttl"], nv(wantTTL)) {
		t.Errorf("created day item %v, want lastCommentAt %s and ttl %s", out.Item, at(1, 10), wantTTL)
	}
}

// repairThenClean runs verify --repair, then a verify that must be clean.
func (fx *fixture) repairThenClean(t *testing.T) {
	t.Helper()
	cfg := fx.config(true)
	cfg.Mode = "verify --repair"
	fx.run(cfg)
	cfg = fx.config(false)
	cfg.Mode = "verify after repair"
	requireClean(t, fx.run(cfg))
}
