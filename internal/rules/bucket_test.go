package rules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bucketBase is a valid file with bucket targets; cases append rules to it (rules start on
// line 20).
const bucketBase = `version: 1
entities:
  Post:
    pk: "POST#{postId}"
    sk: METADATA
    attributes: [commentCount]
  Comment:
    pk: "POST#{postId}"
    sk: "COMMENT#{commentId}"
    attributes: [createdAt, likes, text]
  PostDay:
    pk: "POST#{postId}"
    sk: "DAY#{createdAt:day}"
    attributes: [comments, likes, text]
  Order:
    pk: "CUSTOMER#{customerId}"
    sk: "ORDER#{orderId}"
    attributes: [total, placedAt]
rules:
`

func TestValidateBuckets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules string
		want  []want
	}{
		{"count into a day bucket", `  - name: a
    count: {of: Comment, into: PostDay, attribute: comments, missingTarget: create, ttl: 90d}
  - name: b
    sum: {of: Comment, into: PostDay, value: likes, attribute: likes, missingTarget: create, ttl: 2160h}
`, nil},
		{"bucket without missingTarget create", `  - name: a
    count: {of: Comment, into: PostDay, attribute: comments}
  - name: b
    count: {of: Comment, into: PostDay, attribute: likes, missingTarget: skip}
`, []want{
			{`21:32: rule "a"`, `PostDay's sk "DAY#{createdAt:day}" holds a time bucket ({createdAt:day}): a bucket item does not exist before its first source, and missingTarget the default, skip, would park its deltas until the application writes it: add missingTarget: create`},
			{`23:74: rule "b"`, "missingTarget skip would park its deltas"},
		}},
		{"bucket on a variable the source lacks", `  - name: a
    count: {of: Order, into: PostDay, attribute: comments, missingTarget: create}
`, []want{
			{`21:30: rule "a"`, `PostDay's sk "DAY#{createdAt:day}" buckets {createdAt}, the time of each Order, which Order does not have: add createdAt (an ISO-8601 time or epoch seconds) to Order's attributes (Order has: {customerId, orderId} from its keys; placedAt, total as attributes)`},
			{`21:30: rule "a"`, `PostDay's pk "POST#{postId}" needs {postId}, which Order does not have`},
		}},
		{"ttl without a bucket", `  - name: a
    count: {of: Comment, into: Post, attribute: commentCount, ttl: 90d}
`, []want{{`21:68: rule "a"`, `ttl counts from the end of the target's time bucket, and Post's keys hold none: remove ttl, or bucket Post's key, e.g. sk: "DAY#{createdAt:day}"`}}},
		{"ttl not a duration", `  - name: a
    count: {of: Comment, into: PostDay, attribute: comments, missingTarget: create, ttl: 90}
  - name: b
    sum: {of: Comment, into: PostDay, value: likes, attribute: likes, missingTarget: create, ttl: 3 months}
  - name: c
    count: {of: Comment, into: Post, attribute: commentCount, ttl: 0d}
`, []want{
			{`21:90: rule "a"`, `ttl "90" is not a duration: write a whole number of days or hours, e.g. 90d or 36h`},
			{`23:99: rule "b"`, `ttl "3 months" is not a duration`},
			{`25:68: rule "c"`, `ttl "0d" is out of range: from 1h to 36500d`},
			{`25:68: rule "c"`, "Post's keys hold none"},
		}},
		{"rules into one bucket disagree on ttl", `  - name: a
    count: {of: Comment, into: PostDay, attribute: comments, missingTarget: create, ttl: 90d}
  - name: b
    sum: {of: Comment, into: PostDay, value: likes, attribute: likes, missingTarget: create}
`, []want{{`23:10: rule "b"`, `rule "a" (line 20) gives PostDay ttl 90d and this rule no ttl: an item has one expiry, written by whichever rule creates it: give every rule into PostDay the same ttl`}}},
		{"copy into a bucket", `  - name: a
    copy: {from: Comment, to: PostDay, via: key, set: {text: text}}
`, []want{{`21:31: rule "a"`, `PostDay's sk "DAY#{createdAt:day}" holds a time bucket ({createdAt:day}): a bucket item stands for every source of its day, which only a count, sum, max, min, latest or top can keep, and a copy writes one target per source: write {createdAt} without a width in PostDay's templates, or count, sum, max, min, latest or top into PostDay`}}},
		{"mirror into a bucket", `  - name: a
    mirror: {from: Comment, to: PostDay, attributes: [text]}
`, []want{{`21:33: rule "a"`, `a mirror writes one target per source`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := bucketBase + tc.rules
			checkProblems(t, doc, problemsOf(t, doc), tc.want)
		})
	}
}

func TestValidateBucketTTLNeedsTheTableAttribute(t *testing.T) {
	doc := `version: 1
table: {partitionKey: pk, sortKey: sk}
entities:
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt]}
  PostDay: {pk: "POST#{postId}", sk: "DAY#{createdAt:day}", attributes: [comments]}
rules:
  - name: a
    count: {of: Comment, into: PostDay, attribute: comments, missingTarget: create, ttl: 90d}
`
	checkProblems(t, doc, problemsOf(t, doc), []want{
		{`8:90: rule "a"`, "ttl is written to the table's TTL attribute, and the table has none: add ttlAttribute: ttl under table"},
	})
}

func TestValidateBadBucketWidth(t *testing.T) {
	doc := `version: 1
entities:
  PostDay: {pk: "POST#{postId}", sk: "DAY#{createdAt:Day}", attributes: [comments]}
  Week: {pk: "POST#{postId}", sk: "WEEK#{createdAt:week}", attributes: [comments]}
`
	checkProblems(t, doc, problemsOf(t, doc), []want{
		{`3:38: entity "PostDay"`, `bad sk template: key template syntax: "DAY#{createdAt:Day}": variable {createdAt:Day}: "Day" is not a time bucket (did you mean {createdAt:day}?): use hour, day, month or year`},
		{`4:35: entity "Week"`, `"week" is not a time bucket: use hour, day, month or year`},
	})
}

func TestParseTTL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"90d", 90 * 24 * time.Hour}, {"1h", time.Hour}, {"36h", 36 * time.Hour}, {"36500d", 36500 * 24 * time.Hour}} {
		if got, err := ParseTTL(c.in); err != nil || got != c.want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "90", "d", "90dd", "-1d", "+1d", "1.5d", "90D", "90 d", "0h", "36501d", "9999999999999999999d"} {
		if _, err := ParseTTL(in); !errors.Is(err, ErrTTL) {
			t.Errorf("ParseTTL(%q) = %v, want an ErrTTL", in, err)
		}
	}
}

func TestExpiryAndBucketing(t *testing.T) {
	set, err := ParseSet("t.yaml", []byte(bucketBase+`  - name: daily
    count: {of: Comment, into: PostDay, attribute: comments, missingTarget: create, ttl: 90d}
  - name: likes
    sum: {of: Comment, into: PostDay, value: likes, attribute: likes, missingTarget: create, ttl: 90d}
  - name: posts
    count: {of: Comment, into: Post, attribute: commentCount}
`))
	if err != nil {
		t.Fatal(err)
	}
	daily := set.Rule("daily")
	if daily.TTL != 90*24*time.Hour {
		t.Errorf("TTL = %v", daily.TTL)
	}
	exp, ok := daily.Expiry("POST#p1", "DAY#2026-11-23")
	if want := time.Date(2027, 2, 22, 0, 0, 0, 0, time.UTC); !ok || !exp.Equal(want) {
		t.Errorf("Expiry = %v, %v; want %v (90 days after the 24th began)", exp, ok, want)
	}
	for _, k := range [][2]string{{"POST#p1", "DAY#2026-11"}, {"POST#p1", "METADATA"}, {"X#p1", "DAY#2026-11-23"}} {
		if _, ok := daily.Expiry(k[0], k[1]); ok {
			t.Errorf("Expiry(%v) ok for a key that is no target", k)
		}
	}
	if _, ok := set.Rule("posts").Expiry("POST#p1", "METADATA"); ok {
		t.Error("a rule without ttl has an expiry")
	}
	if got := fmt.Sprint(set.Rule("daily").Target.Buckets()); got != "[{createdAt:day} in sk]" {
		t.Errorf("Buckets = %s", got)
	}
	want := `Comment by the UTC day of createdAt into PostDay (sk "DAY#{createdAt:day}"), created on first use; expires 90d after its day ends (written to ttl)`
	if got := daily.Bucketing("ttl"); got != want {
		t.Errorf("Bucketing =\n%s\nwant\n%s", got, want)
	}
	if got := set.Rule("posts").Bucketing("ttl"); got != "" {
		t.Errorf("Bucketing of a plain count = %q", got)
	}
	// The bucket item matches PostDay; a key that is no bucket does not.
	for _, c := range []struct {
		sk   string
		want string
	}{{"DAY#2026-11-23", "PostDay"}, {"DAY#2026-11-23T10", ""}, {"DAY#yesterday", ""}} {
		e, _ := set.Match(strItem("pk", "POST#p1", "sk", c.sk), nil)
		got := ""
		if e != nil {
			got = e.Name
		}
		if got != c.want {
			t.Errorf("%s matches %q, want %q", c.sk, got, c.want)
		}
	}
}

func ExampleCompiledRule_Expiry() {
	set, _ := ParseSet("orders.yaml", []byte(`version: 1
entities:
  Order: {pk: "CUSTOMER#{customerId}", sk: "ORDER#{orderId}", attributes: [placedAt, total]}
  CustomerMonth: {pk: "CUSTOMER#{customerId}", sk: "MONTH#{placedAt:month}", attributes: [revenue]}
rules:
  - name: monthly-revenue
    sum: {of: Order, into: CustomerMonth, value: total, attribute: revenue, missingTarget: create, ttl: 400d}
`))
	r := set.Rule("monthly-revenue")
	exp, _ := r.Expiry("CUSTOMER#c1", "MONTH#2026-11")
	fmt.Println(r.Bucketing(set.Table.TTLAttribute))
	fmt.Println(exp.Format(time.RFC3339), exp.Unix())
	// Output:
	// Order by the UTC month of placedAt into CustomerMonth (sk "MONTH#{placedAt:month}"), created on first use; expires 400d after its month ends (written to ttl)
	// 2028-01-05T00:00:00Z 1830643200
}

// testdata/valid/buckets.yaml, the worked example of docs/rules.md, is valid and matches the
// schema; the schema refuses a ttl without a unit.
func TestBucketExampleAndSchema(t *testing.T) {
	path := filepath.Join("testdata", "valid", "buckets.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseSet(path, data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s := compileSchema(t)
	if err := s.Validate(yamlToJSONValue(t, data)); err != nil {
		t.Errorf("%s does not match schema.json:\n%v", path, err)
	}
	for _, ttl := range []string{"90", "90 days", "0d", "1w"} {
		doc := strings.Replace(string(data), "ttl: 90d", "ttl: "+ttl, 1)
		if err := s.Validate(yamlToJSONValue(t, []byte(doc))); err == nil {
			t.Errorf("schema accepted ttl: %s", ttl)
		}
	}
}
