package plan_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

func extremeSet(t testing.TB) *rules.Set {
	t.Helper()
	set, err := rules.LoadSet("../rules/testdata/valid/extremes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// xcomment is a Comment of post p1 created at `at` ("" for none) with status st.
func xcomment(id, at, st string) record.Item {
	it := record.Item{"pk": s("POST#p1"), "sk": s("COMMENT#" + id), "status": s(st)}
	if at != "" {
		it["createdAt"] = s(at)
	}
	return it
}

// offer is an Offer of product prod, sold by seller1, at price.
func offer(id, prod string, price types.AttributeValue) record.Item {
	it := record.Item{"pk": s("SELLER#s1"), "sk": s("OFFER#" + id), "gsi1pk": s("PRODUCT#" + prod), "gsi1sk": s("OFFER#" + id), "active": &types.AttributeValueMemberBOOL{Value: true}}
	if price != nil {
		it["price"] = price
	}
	return it
}

// listed gives an offer the time it was listed (what latest orders by).
func listed(it record.Item, at string) record.Item {
	it["listedAt"] = s(at)
	return it
}

func change(op record.Op, old, new record.Item) record.Change {
	k := old
	if k == nil {
		k = new
	}
	return record.Change{EventID: "ev", Seq: "100", Op: op, Old: old, New: new, Keys: record.Item{"pk": k["pk"], "sk": k["sk"]}}
}

// What each change of a source or target asks of max and min rules, described as
// `denorm explain` prints it (testdata/extremes.golden).
func TestExtremePlans(t *testing.T) {
	set := extremeSet(t)
	p := plan.New(set)
	cases := []struct {
		name string
		c    record.Change
		want string // the effects, one "rule target raise/recheck/recompute" per line
	}{
		{"comment inserted", change(record.Insert, nil, xcomment("c1", "2026-01-02T00:00:00Z", "visible")),
			"post-last-comment POST#p1/METADATA raise=2026-01-02T00:00:00Z\npost-first-comment POST#p1/METADATA raise=2026-01-02T00:00:00Z\npost-recent-comments POST#p1/METADATA raise=2026-01-02T00:00:00Z key=POST#p1|COMMENT#c1 set=pk,sk,createdAt\npost-day-last-comment POST#p1/DAY#2026-01-02 raise=2026-01-02T00:00:00Z"},
		{"hidden comment inserted", change(record.Insert, nil, xcomment("c1", "2026-01-02T00:00:00Z", "hidden")),
			"post-first-comment POST#p1/METADATA raise=2026-01-02T00:00:00Z\npost-day-last-comment POST#p1/DAY#2026-01-02 raise=2026-01-02T00:00:00Z"},
		{"comment without a time", change(record.Insert, nil, xcomment("c1", "", "visible")), ""},
		{"comment deleted", change(record.Remove, xcomment("c1", "2026-01-02T00:00:00Z", "visible"), nil),
			"post-last-comment POST#p1/METADATA recheck=2026-01-02T00:00:00Z\npost-first-comment POST#p1/METADATA recheck=2026-01-02T00:00:00Z\npost-recent-comments POST#p1/METADATA recheck=2026-01-02T00:00:00Z of POST#p1|COMMENT#c1\npost-day-last-comment POST#p1/DAY#2026-01-02 recheck=2026-01-02T00:00:00Z"},
		{"comment hidden", change(record.Modify, xcomment("c1", "2026-01-02T00:00:00Z", "visible"), xcomment("c1", "2026-01-02T00:00:00Z", "hidden")),
			"post-last-comment POST#p1/METADATA recheck=2026-01-02T00:00:00Z\npost-recent-comments POST#p1/METADATA recheck=2026-01-02T00:00:00Z of POST#p1|COMMENT#c1"},
		{"comment moved later", change(record.Modify, xcomment("c1", "2026-01-02T00:00:00Z", "visible"), xcomment("c1", "2026-01-03T00:00:00Z", "visible")),
			"post-last-comment POST#p1/METADATA raise=2026-01-03T00:00:00Z\npost-first-comment POST#p1/METADATA raise=2026-01-03T00:00:00Z recheck=2026-01-02T00:00:00Z\npost-recent-comments POST#p1/METADATA raise=2026-01-03T00:00:00Z key=POST#p1|COMMENT#c1 set=pk,sk,createdAt\npost-day-last-comment POST#p1/DAY#2026-01-03 raise=2026-01-03T00:00:00Z\npost-day-last-comment POST#p1/DAY#2026-01-02 recheck=2026-01-02T00:00:00Z"},
		{"comment text edited", change(record.Modify, xcomment("c1", "2026-01-02T00:00:00Z", "visible"), func() record.Item {
			it := xcomment("c1", "2026-01-02T00:00:00Z", "visible")
			it["text"] = s("edited")
			return it
		}()), "post-recent-comments POST#p1/METADATA raise=2026-01-02T00:00:00Z key=POST#p1|COMMENT#c1 set=pk,sk,createdAt,text"},
		{"offer inserted", change(record.Insert, nil, offer("o1", "x", n("9.5"))),
			"product-cheapest PRODUCT#x/PRODUCT raise=9.5 query=PRODUCT#x\nproduct-highest PRODUCT#x/PRODUCT raise=9.5 query=PRODUCT#x"},
		{"offer lowered", change(record.Modify, offer("o1", "x", n("9.5")), offer("o1", "x", n("7"))),
			"product-cheapest PRODUCT#x/PRODUCT raise=7 query=PRODUCT#x\nproduct-highest PRODUCT#x/PRODUCT raise=7 recheck=9.5 query=PRODUCT#x"},
		{"offer moved to another product", change(record.Modify, offer("o1", "x", n("9.5")), offer("o1", "y", n("9.5"))),
			"product-cheapest PRODUCT#y/PRODUCT raise=9.5 query=PRODUCT#y\nproduct-cheapest PRODUCT#x/PRODUCT recheck=9.5 query=PRODUCT#x\nproduct-highest PRODUCT#y/PRODUCT raise=9.5 query=PRODUCT#y\nproduct-highest PRODUCT#x/PRODUCT recheck=9.5 query=PRODUCT#x"},
		{"offer price becomes a list", change(record.Modify, offer("o1", "x", n("9.5")), offer("o1", "x", &types.AttributeValueMemberL{})),
			"product-cheapest PRODUCT#x/PRODUCT recheck=9.5 query=PRODUCT#x\nproduct-highest PRODUCT#x/PRODUCT recheck=9.5 query=PRODUCT#x"},
		{"product inserted", change(record.Insert, nil, record.Item{"pk": s("PRODUCT#x"), "sk": s("PRODUCT")}),
			"product-cheapest PRODUCT#x/PRODUCT recompute query=PRODUCT#x\nproduct-highest PRODUCT#x/PRODUCT recompute query=PRODUCT#x\nproduct-latest-offer PRODUCT#x/PRODUCT recompute query=PRODUCT#x"},
		{"listed offer inserted", change(record.Insert, nil, listed(offer("o1", "x", n("9")), "2026-02-01")),
			"product-cheapest PRODUCT#x/PRODUCT raise=9 query=PRODUCT#x\nproduct-highest PRODUCT#x/PRODUCT raise=9 query=PRODUCT#x\nproduct-latest-offer PRODUCT#x/PRODUCT raise=2026-02-01 key=SELLER#s1|OFFER#o1 set=latestPrice,latestOfferActive query=PRODUCT#x"},
		{"latest offer repriced", change(record.Modify, listed(offer("o1", "x", n("9")), "2026-02-01"), listed(offer("o1", "x", n("8")), "2026-02-01")),
			"product-cheapest PRODUCT#x/PRODUCT raise=8 query=PRODUCT#x\nproduct-highest PRODUCT#x/PRODUCT raise=8 recheck=9 query=PRODUCT#x\nproduct-latest-offer PRODUCT#x/PRODUCT raise=2026-02-01 key=SELLER#s1|OFFER#o1 set=latestPrice,latestOfferActive query=PRODUCT#x"},
		{"latest offer relisted earlier", change(record.Modify, listed(offer("o1", "x", n("9")), "2026-02-01"), listed(offer("o1", "x", n("9")), "2026-01-01")),
			"product-latest-offer PRODUCT#x/PRODUCT raise=2026-01-01 key=SELLER#s1|OFFER#o1 set=latestPrice,latestOfferActive recheck=2026-02-01 of SELLER#s1|OFFER#o1 query=PRODUCT#x"},
		{"listed offer deleted", change(record.Remove, listed(offer("o1", "x", n("9")), "2026-02-01"), nil),
			"product-cheapest PRODUCT#x/PRODUCT recheck=9 query=PRODUCT#x\nproduct-highest PRODUCT#x/PRODUCT recheck=9 query=PRODUCT#x\nproduct-latest-offer PRODUCT#x/PRODUCT recheck=2026-02-01 of SELLER#s1|OFFER#o1 query=PRODUCT#x"},
		{"product lost its cheapest price", change(record.Modify, record.Item{"pk": s("PRODUCT#x"), "sk": s("PRODUCT"), "cheapestPrice": n("3")}, record.Item{"pk": s("PRODUCT#x"), "sk": s("PRODUCT")}),
			"product-cheapest PRODUCT#x/PRODUCT recompute query=PRODUCT#x"},
		{"post inserted", change(record.Insert, nil, record.Item{"pk": s("POST#p1"), "sk": s("METADATA")}),
			"post-last-comment POST#p1/METADATA recompute\npost-first-comment POST#p1/METADATA recompute\npost-recent-comments POST#p1/METADATA recompute"},
		{"post's list written back by the application", change(record.Modify,
			record.Item{"pk": s("POST#p1"), "sk": s("METADATA"), "recentComments": &types.AttributeValueMemberL{}, "_dnt_post-recent-comments": n("4")},
			record.Item{"pk": s("POST#p1"), "sk": s("METADATA"), "recentComments": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{}}}, "_dnt_post-recent-comments": n("3")}),
			"post-recent-comments POST#p1/METADATA recompute"},
		{"post's list written by Denorm", change(record.Modify,
			record.Item{"pk": s("POST#p1"), "sk": s("METADATA"), "_dnt_post-recent-comments": n("3")},
			record.Item{"pk": s("POST#p1"), "sk": s("METADATA"), "recentComments": &types.AttributeValueMemberL{}, "_dnt_post-recent-comments": n("4")}), ""},
		{"product written by Denorm", change(record.Modify, record.Item{"pk": s("PRODUCT#x"), "sk": s("PRODUCT")},
			record.Item{"pk": s("PRODUCT#x"), "sk": s("PRODUCT"), "cheapestPrice": n("3"), "_dnt_product-cheapest": n("1")}), ""},
		{"product saved back by the application as it read it", change(record.Modify,
			record.Item{"pk": s("PRODUCT#x"), "sk": s("PRODUCT"), "cheapestPrice": n("3"), "_dnt_product-cheapest": n("2")},
			record.Item{"pk": s("PRODUCT#x"), "sk": s("PRODUCT"), "cheapestPrice": n("5"), "_dnt_product-cheapest": n("1")}),
			"product-cheapest PRODUCT#x/PRODUCT recompute query=PRODUCT#x"},
	}
	var golden bytes.Buffer
	for _, tc := range cases {
		rp, err := p.Plan(&tc.c)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, x := range rp.Extremes {
			line := fmt.Sprintf("%s %s/%s", x.Rule.Name, x.Target.PK, x.Target.SK)
			if x.Raise != nil {
				line += " raise=" + show(x.Raise)
			}
			if x.Key != "" {
				names := []string{}
				for _, a := range x.Set {
					names = append(names, a.Name)
				}
				line += " key=" + strings.ReplaceAll(x.Key, "\x00", "|") + " set=" + strings.Join(names, ",")
			}
			if x.Recheck != nil {
				line += " recheck=" + show(x.Recheck)
			}
			if x.RecheckKey != "" {
				line += " of " + strings.ReplaceAll(x.RecheckKey, "\x00", "|")
			}
			if x.Recompute {
				line += " recompute"
			}
			if x.Rule.Extreme.Index.Name != "" {
				line += " query=" + x.QueryPK
			}
			got = append(got, line)
		}
		if g := strings.Join(got, "\n"); g != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, g, tc.want)
		}
		fmt.Fprintf(&golden, "%s (%s):\n", tc.name, tc.c.Op)
		rp.Describe(&golden)
	}
	const path = "testdata/extremes.golden"
	if *update {
		if err := os.WriteFile(path, golden.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if golden.String() != string(want) {
		t.Errorf("described plans differ from %s:\n--- got\n%s--- want\n%s", path, golden.String(), want)
	}
}

func show(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	}
	return fmt.Sprintf("%T", v)
}

// Coalescing keeps one group per rule and target: the best raise and the best value that
// left.
func TestExtremeCoalesce(t *testing.T) {
	set := extremeSet(t)
	p := plan.New(set)
	var plans []plan.RecordPlan
	for _, c := range []record.Change{
		change(record.Insert, nil, offer("o1", "x", n("5"))),
		change(record.Insert, nil, offer("o2", "x", n("12"))),
		change(record.Remove, offer("o3", "x", n("20")), nil),
		change(record.Remove, offer("o4", "x", n("1")), nil),
	} {
		rp, err := p.Plan(&c)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, rp)
	}
	b := plan.Coalesce(plans)
	got := map[string]string{}
	for _, g := range b.Extremes {
		got[g.Rule.Name] = fmt.Sprintf("rec=%d raise=%s recheck=%s", g.Rec, show(g.Raise), show(g.Recheck))
	}
	want := map[string]string{"product-cheapest": "rec=0 raise=5 recheck=1", "product-highest": "rec=0 raise=12 recheck=20"}
	if len(b.Extremes) != 2 || got["product-cheapest"] != want["product-cheapest"] || got["product-highest"] != want["product-highest"] {
		t.Errorf("groups %v, want %v", got, want)
	}
}
