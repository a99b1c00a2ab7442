package handler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
)

// meterAPI adds up the write capacity DynamoDB Local reports for the processor's writes.
type meterAPI struct {
	apply.API
	mu  sync.Mutex
	wcu float64
}

func (m *meterAPI) add(cc ...types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cc {
		m.wcu += aws.ToFloat64(c.CapacityUnits)
	}
}

func (m *meterAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.API.UpdateItem(ctx, in, o...)
	if out != nil && out.ConsumedCapacity != nil {
		m.add(*out.ConsumedCapacity)
	} else if err != nil {
		m.add(types.ConsumedCapacity{CapacityUnits: aws.Float64(1)}) // a refused write is billed
	}
	return out, err
}

func (m *meterAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	// Priced as DynamoDB bills it, 2 WCU per item: DynamoDB Local reports 2 WCU per
	// TransactWriteItems whatever its size (docs/benchmarks.md).
	out, err := m.API.TransactWriteItems(ctx, in, o...)
	if err == nil {
		m.add(types.ConsumedCapacity{CapacityUnits: aws.Float64(2 * float64(len(in.TransactItems)))})
	}
	return out, err
}

func (m *meterAPI) taken() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.wcu
	m.wcu = 0
	return w
}

// The write capacity (transactions priced at 2 WCU per item) a source write costs a distinct rule, beside a count of the same
// sources into the same target, in each exactly-once mode: one reading per batch, every
// record (the reference item's and the relay item's too) applied before the next. A
// reading whose value is new to its target moves the count; one whose value another
// reading holds only moves its reference item. docs/rules.md quotes these figures.
func TestDistinctCost(t *testing.T) {
	const entities = `version: 1
entities:
  Site:    {pk: "SITE#{siteId}", sk: SITE, attributes: [n]}
  Region:  {pk: "REGION#{regionId}", sk: REGION, attributes: [n]}
  Reading: {pk: "SITE#{siteId}", sk: "READING#{readingId}", attributes: [status, regionId]}
rules:
`
	cases := []struct {
		mode, rule string
		pk         string // the target's
		count      float64
		newValue   float64 // a distinct's, per reading whose value is new
		heldValue  float64 // per reading whose value is held already
	}{
		{"watermark", "{of: Reading, into: Site, attribute: n}", "SITE#s1", 2, 3, 1},
		{"relay", "{of: Reading, into: Region, attribute: n}", "REGION#r1", 3, 4, 2},
		{"transaction", "{of: Reading, into: Region, attribute: n, exactlyOnce: transaction}", "REGION#r1", 5, 9, 4},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			measure := func(kind string, values func(i int) string) float64 {
				rule := tc.rule
				if kind == "distinct" {
					rule = rule[:len(rule)-1] + ", value: status}"
				}
				e := newEnvRules(t, apply.Options{}, entities+"  - name: r\n    "+kind+": "+rule+"\n")
				e.api.failAfter = -1
				m := &meterAPI{API: e.api.API}
				e.api.API = m
				sk := "SITE"
				if tc.pk[0] == 'R' {
					sk = "REGION"
				}
				e.put(map[string]string{"pk": tc.pk, "sk": sk})
				e.drain(1, e.lambdaLike)
				m.taken()
				const n = 10
				for i := range n {
					e.put(map[string]string{"pk": "SITE#s1", "sk": fmt.Sprintf("READING#%d", i), "status": values(i), "regionId": "r1"})
					e.drain(1, e.lambdaLike)
				}
				return m.taken() / n
			}
			count := measure("count", func(i int) string { return "ok" })
			fresh := measure("distinct", func(i int) string { return fmt.Sprint("v", i) })
			held := measure("distinct", func(i int) string { return "ok" }) // the first reading's is new
			held = (held*10 - fresh) / 9
			t.Logf("%s: count %.1f WCU per reading; distinct %.1f (new value), %.1f (value held already)", tc.mode, count, fresh, held)
			if count != tc.count || fresh != tc.newValue || held != tc.heldValue {
				t.Errorf("%s: count %.2f, distinct new %.2f, held %.2f WCU; docs/rules.md says %.0f, %.0f, %.0f",
					tc.mode, count, fresh, held, tc.count, tc.newValue, tc.heldValue)
			}
		})
	}
}

// The write capacity a comment costs a latest or top, into its post or into its post's day
// (a time bucket), one comment per batch and every record applied: the first comment of a
// day creates the day item, whose INSERT record recomputes it (a latest writes it again; a
// top finds its list as written); later comments of that day cost what a comment costs the
// rule into the post. docs/rules.md quotes these figures.
func TestBucketLatestTopCost(t *testing.T) {
	const entities = `version: 1
entities:
  Post:    {pk: "POST#{postId}", sk: METADATA, attributes: [newest, hottest]}
  PostDay: {pk: "POST#{postId}", sk: "DAY#{createdAt:day}", attributes: [newest, hottest]}
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", attributes: [createdAt, likes]}
rules:
`
	for _, tc := range []struct {
		kind, rule                string
		post, firstOfDay, sameDay float64
	}{
		{"latest", "latest: {of: Comment, into: %s, by: createdAt, set: {newest: likes}%s}", 1, 2, 1},
		{"top", "top: {of: Comment, into: %s, by: createdAt, n: 3, attribute: hottest%s}", 1, 1, 1},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			measure := func(into, ttl string, days int) float64 {
				e := newEnvRules(t, apply.Options{}, entities+"  - name: r\n    "+fmt.Sprintf(tc.rule, into, ttl)+"\n")
				e.api.failAfter = -1
				m := &meterAPI{API: e.api.API}
				e.api.API = m
				e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA"})
				e.drain(1, e.lambdaLike)
				m.taken()
				const n = 6
				today := time.Now().UTC().Truncate(24 * time.Hour)
				for i := range n {
					at := today.Add(-time.Duration(i%days)*24*time.Hour + time.Duration(i)*time.Minute).Format(time.RFC3339)
					e.put(map[string]string{"pk": "POST#p1", "sk": fmt.Sprintf("COMMENT#c%d", i), "createdAt": at, "likes": "1"})
					e.drain(1, e.lambdaLike)
				}
				return m.taken() / n
			}
			post := measure("Post", "", 1)
			firstOfDay := measure("PostDay", ", ttl: 30d", 6) // every comment on a day of its own
			sameDay := measure("PostDay", ", ttl: 30d", 1)    // all on one day: the first creates it
			sameDay = (sameDay*6 - firstOfDay) / 5
			t.Logf("%s: into the post %.1f WCU per comment; into its day %.1f (the day's first), %.1f (later ones)", tc.kind, post, firstOfDay, sameDay)
			if post != tc.post || firstOfDay != tc.firstOfDay || sameDay != tc.sameDay {
				t.Errorf("%s: %.2f, %.2f, %.2f WCU; docs/rules.md says %.0f, %.0f, %.0f", tc.kind, post, firstOfDay, sameDay, tc.post, tc.firstOfDay, tc.sameDay)
			}
		})
	}
}
