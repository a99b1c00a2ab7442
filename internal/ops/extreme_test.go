package ops

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// The expectations of max, min, latest and top rules survive a checkpoint, and merging scan
// segments keeps the extreme (latest: the greatest by value, then key).
func TestExtremeExpectationsCheckpointAndMerge(t *testing.T) {
	f, err := rules.Load("../rules/testdata/valid/extremes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	S := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	N := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	offer := func(seller, id, price, at string) record.Item {
		return record.Item{"pk": S("SELLER#" + seller), "sk": S("OFFER#" + id), "gsi1pk": S("PRODUCT#x"), "gsi1sk": S("OFFER#" + id),
			"price": N(price), "listedAt": S(at), "active": &types.AttributeValueMemberBOOL{Value: true}}
	}
	w := ev.NewWorker()
	a, b := ev.NewExpected(), ev.NewExpected()
	all := ev.All()
	w.Observe(offer("s1", "o1", "30", "2026-03-01"), all, a)
	w.Observe(offer("s2", "o2", "10", "2026-02-01"), all, b)
	w.Observe(offer("s2", "o3", "20", "2026-03-01"), all, b)
	w.Observe(record.Item{"pk": S("POST#p"), "sk": S("COMMENT#c"), "createdAt": S("2026-01-01"), "status": S("visible"), "text": S("first")}, all, a)
	w.Observe(record.Item{"pk": S("POST#p"), "sk": S("COMMENT#d"), "createdAt": S("2026-01-02"), "status": S("visible"), "text": S("second")}, all, b)
	a.Merge(b)
	x := map[string]int{}
	for i, rs := range ev.rules {
		x[rs.r.Name] = i
	}
	for name, want := range map[string]string{"product-cheapest": "10", "product-highest": "30"} {
		for k, v := range a.Extremes[x[name]] {
			if k.PK != "PRODUCT#x" || v.(*types.AttributeValueMemberN).Value != want {
				t.Errorf("%s: %s %v, want PRODUCT#x %s", name, k.PK, v, want)
			}
		}
	}
	for _, l := range a.Latest[x["product-latest-offer"]] {
		if l.Key != "SELLER#s2\x00OFFER#o3" || !reflect.DeepEqual(l.Set[0].Value, N("20")) {
			t.Errorf("latest offer %q %v, want o3 (same day as o1, greater key) at 20", l.Key, l.Set)
		}
	}
	raw, err := json.Marshal(encodeExpected(ev, a))
	if err != nil {
		t.Fatal(err)
	}
	var j expectJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	back, err := decodeExpected(ev, &j)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Extremes, a.Extremes) || !reflect.DeepEqual(back.Latest, a.Latest) {
		t.Errorf("checkpoint round trip:\n got %+v %+v\nwant %+v %+v", back.Extremes, back.Latest, a.Extremes, a.Latest)
	}
	top := a.Tops[x["post-recent-comments"]]
	if es := top[plan.Key{PK: "POST#p", SK: "METADATA"}]; len(es) != 2 {
		t.Fatalf("recent comments of POST#p: %+v, want the two visible comments", top)
	}
	if !reflect.DeepEqual(back.Tops, a.Tops) {
		t.Errorf("checkpoint round trip of top lists:\n got %+v\nwant %+v", back.Tops, a.Tops)
	}
}
