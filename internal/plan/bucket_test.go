package plan_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

const bucketRules = `version: 1
entities:
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt, likes, text]}
  PostDay: {pk: "POST#{postId}", sk: "DAY#{createdAt:day}", attributes: [comments]}
  PostHour: {pk: "STATS#{postId}", sk: "HOUR#{createdAt:hour}", attributes: [likes]}
rules:
  - name: daily
    count: {of: Comment, into: PostDay, attribute: comments, missingTarget: create, ttl: 30d}
  - name: hourly-likes
    sum: {of: Comment, into: PostHour, value: likes, attribute: likes, missingTarget: create}
`

func bucketSet(t *testing.T) *rules.Set {
	t.Helper()
	set, err := rules.ParseSet("buckets.yaml", []byte(bucketRules))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// comment is a Comment image; createdAt is a string, or a number when it starts with "n:".
func comment(createdAt string, likes int) record.Item {
	it := record.Item{
		"pk": &types.AttributeValueMemberS{Value: "POST#p1"}, "sk": &types.AttributeValueMemberS{Value: "COMMENT#c1"},
		"likes": &types.AttributeValueMemberN{Value: fmt.Sprint(likes)},
	}
	switch {
	case strings.HasPrefix(createdAt, "n:"):
		it["createdAt"] = &types.AttributeValueMemberN{Value: createdAt[2:]}
	case createdAt != "":
		it["createdAt"] = &types.AttributeValueMemberS{Value: createdAt}
	}
	return it
}

// deltas lists a plan's deltas as "rule pk/sk amount", sorted.
func deltas(rp plan.RecordPlan) string {
	var out []string
	for _, d := range rp.Deltas {
		out = append(out, fmt.Sprintf("%s %s/%s %s", d.Rule.Name, d.Target.PK, d.Target.SK, d.Amount))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func TestBucketDeltas(t *testing.T) {
	set := bucketSet(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		op       record.Op
		old, new record.Item
		created  time.Time
		want     string
		unlinked int
	}{
		{"insert", record.Insert, nil, comment("2026-11-23T21:34:37Z", 2), now,
			"daily POST#p1/DAY#2026-11-23 1; hourly-likes STATS#p1/HOUR#2026-11-23T21 2", 0},
		{"fractional seconds and a +00:00 offset", record.Insert, nil, comment("2026-11-23T21:34:37.123+00:00", 1), now,
			"daily POST#p1/DAY#2026-11-23 1; hourly-likes STATS#p1/HOUR#2026-11-23T21 1", 0},
		{"another offset is converted to UTC", record.Insert, nil, comment("2026-11-23T23:30:00-05:00", 1), now,
			"daily POST#p1/DAY#2026-11-24 1; hourly-likes STATS#p1/HOUR#2026-11-24T04 1", 0},
		{"epoch seconds", record.Insert, nil, comment("n:1795469677", 1), now,
			"daily POST#p1/DAY#2026-11-23 1; hourly-likes STATS#p1/HOUR#2026-11-23T21 1", 0},
		{"timestamp moves to another day", record.Modify, comment("2026-11-23T21:00:00Z", 2), comment("2026-11-24T01:00:00Z", 2), now,
			"daily POST#p1/DAY#2026-11-23 -1; daily POST#p1/DAY#2026-11-24 1; hourly-likes STATS#p1/HOUR#2026-11-23T21 -2; hourly-likes STATS#p1/HOUR#2026-11-24T01 2", 0},
		{"timestamp moves within its day", record.Modify, comment("2026-11-23T21:00:00Z", 2), comment("2026-11-23T22:00:00Z", 2), now,
			"hourly-likes STATS#p1/HOUR#2026-11-23T21 -2; hourly-likes STATS#p1/HOUR#2026-11-23T22 2", 0},
		{"other attributes change", record.Modify, comment("2026-11-23T21:00:00Z", 2), comment("2026-11-23T21:00:00Z", 5), now,
			"hourly-likes STATS#p1/HOUR#2026-11-23T21 3", 0},
		{"remove", record.Remove, comment("2026-11-23T21:00:00Z", 2), nil, now,
			"daily POST#p1/DAY#2026-11-23 -1; hourly-likes STATS#p1/HOUR#2026-11-23T21 -2", 0},
		{"not a time: no bucket, no failure", record.Insert, nil, comment("yesterday", 1), now, "", 2},
		{"no timestamp", record.Insert, nil, comment("", 1), now, "", 2},
		{"a date is too coarse for an hour", record.Insert, nil, comment("2026-11-23", 1), now, "daily POST#p1/DAY#2026-11-23 1", 1},
		{"a time becomes unreadable: it leaves its buckets", record.Modify, comment("2026-11-23T21:00:00Z", 2), comment("soon", 2), now,
			"daily POST#p1/DAY#2026-11-23 -1; hourly-likes STATS#p1/HOUR#2026-11-23T21 -2", 2},
		// The day bucket of 2026-10-20 expires 30 days after the 21st began: 2026-11-20.
		{"a source deleted after its bucket expired", record.Remove, comment("2026-10-20T10:00:00Z", 2), nil, now,
			"hourly-likes STATS#p1/HOUR#2026-10-20T10 -2", 1},
		{"inserted into a bucket already expired", record.Insert, nil, comment("2026-10-20T10:00:00Z", 2), now,
			"hourly-likes STATS#p1/HOUR#2026-10-20T10 2", 1},
		{"moves out of an expired bucket", record.Modify, comment("2026-10-20T10:00:00Z", 2), comment("2026-11-24T10:00:00Z", 2), now,
			"daily POST#p1/DAY#2026-11-24 1; hourly-likes STATS#p1/HOUR#2026-10-20T10 -2; hourly-likes STATS#p1/HOUR#2026-11-24T10 2", 1},
		{"a record without a time expires nothing", record.Remove, comment("2026-10-20T10:00:00Z", 2), nil, time.Time{},
			"daily POST#p1/DAY#2026-10-20 -1; hourly-likes STATS#p1/HOUR#2026-10-20T10 -2", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := record.Change{EventID: "e1", Seq: "100", Op: tc.op, Old: tc.old, New: tc.new, Created: tc.created,
				Keys: record.Item{"pk": &types.AttributeValueMemberS{Value: "POST#p1"}, "sk": &types.AttributeValueMemberS{Value: "COMMENT#c1"}}}
			rp, err := plan.New(set).Plan(&c)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if got := deltas(rp); got != tc.want || rp.Unlinked != tc.unlinked {
				t.Errorf("deltas %q, unlinked %d\nwant   %q, unlinked %d", got, rp.Unlinked, tc.want, tc.unlinked)
			}
		})
	}
}

// A bucket item removed, by its ttl or by the application, asks for nothing: its state
// item keeps what was counted (and expires with the same ttl).
func TestBucketTargetRemoved(t *testing.T) {
	set := bucketSet(t)
	day := record.Item{
		"pk": &types.AttributeValueMemberS{Value: "POST#p1"}, "sk": &types.AttributeValueMemberS{Value: "DAY#2026-11-23"},
		"comments": &types.AttributeValueMemberN{Value: "4"}, "ttl": &types.AttributeValueMemberN{Value: "1798070400"},
		rules.CopyVersionAttr: &types.AttributeValueMemberN{Value: "4"},
	}
	keys := record.Item{"pk": day["pk"], "sk": day["sk"]}
	for _, ttl := range []bool{true, false} {
		c := record.Change{EventID: "e1", Seq: "100", Op: record.Remove, Old: day, Keys: keys, TTL: ttl}
		rp, err := plan.New(set).Plan(&c)
		if err != nil {
			t.Fatal(err)
		}
		if !rp.Empty() {
			t.Errorf("removed by TTL %v: %+v, want nothing", ttl, rp)
		}
	}
}
