package reliability

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
)

// A comment is inserted with its author's current name; its record pulls and stamps the
// registered version. The application then replaces the comment with a stale name
// (PutItem, no version). Before that record is processed, the insert's batch is delivered
// again (its first response was lost): the insert's pull compares the source with the
// record's image, not with the item, finds nothing to change and stamps the version on the
// stale item. The stale record's own pull then fails its guard (a version is there now):
// the stale name stays. Found by TestEachFaultAlone/short_deadlines.
func TestRedeliveredPullDoesNotStampAStaleItem(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, apply.Options{})
	db, table := r.db, r.table
	drain := func() (last []json.RawMessage) {
		for round := 0; round < 20; round++ {
			recs := r.reader.Read(0)
			if len(recs) == 0 {
				return last
			}
			last = nil
			for _, rec := range recs {
				raw := r.encode(rec)
				last = append(last, raw)
				r.invoke(raw)
			}
		}
		t.Fatal("the stream did not go quiet")
		return nil
	}
	put := func(kv ...string) {
		item := map[string]types.AttributeValue{}
		for i := 0; i+1 < len(kv); i += 2 {
			item[kv[i]] = &types.AttributeValueMemberS{Value: kv[i+1]}
		}
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	const pk, sk = "POST#p1", "COMMENT#2025-01-01T00:00:00Z#c1"
	put("pk", "USER#u1", "sk", "PROFILE", "name", "Ann", "avatar", "a.png")
	drain()
	put("pk", "USER#u1", "sk", "PROFILE", "name", "Bea", "avatar", "b.png") // registers the version of Bea
	drain()
	put("pk", pk, "sk", sk, "gsi1pk", "USER#u1", "gsi1sk", "COMMENT#2025-01-01T00:00:00Z", "text", "hi", "userName", "Bea", "userAvatar", "b.png")
	recs := r.reader.Read(0)
	if len(recs) != 1 {
		t.Fatalf("%d records, want the comment's insert", len(recs))
	}
	insert := r.encode(recs[0])
	r.invoke(insert)
	put("pk", pk, "sk", sk, "gsi1pk", "USER#u1", "gsi1sk", "COMMENT#2025-01-01T00:00:00Z", "text", "edited", "userName", "stale")
	r.invoke(insert) // the insert's batch again, its first response lost
	drain()
	c := getItemDB(t, db, table, pk, sk)
	if attrS(c, "userName") != "Bea" || attrS(c, "userAvatar") != "b.png" {
		t.Fatalf("comment userName %s, userAvatar %s; want Bea, b.png", attrS(c, "userName"), attrS(c, "userAvatar"))
	}
}
