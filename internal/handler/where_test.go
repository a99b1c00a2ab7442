package handler_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/rules"
)

// whereRules count and sum readings by comparisons, lists, presence and alternatives
// (any); one site's readings share its partition, another's target is in another partition
// (relay).
const whereRules = `version: 1
entities:
  Site:    {pk: "SITE#{siteId}", sk: SITE, attributes: [hot, okTotal, cool, alert, region]}
  Region:  {pk: "REGION#{regionId}", sk: REGION, attributes: [hotReadings]}
  Reading: {pk: "SITE#{siteId}", sk: "READING#{readingId}", attributes: [temp, status, archivedAt, regionId]}
rules:
  - name: site-hot
    count: {of: Reading, into: Site, attribute: hot, where: {temp: {gt: 80}}}
  - name: site-ok-total
    sum: {of: Reading, into: Site, value: temp, attribute: okTotal, where: {status: {in: [ok, calibrated]}, archivedAt: {exists: false}}}
  - name: site-cool
    count: {of: Reading, into: Site, attribute: cool, where: {temp: {gte: 10.5, lte: 40}, status: {ne: faulty}}}
  - name: region-hot
    count: {of: Reading, into: Region, attribute: hotReadings, where: {temp: {gt: 80}, status: {notIn: [faulty, retired]}}}
  - name: site-alert
    count: {of: Reading, into: Site, attribute: alert, where: {archivedAt: {exists: false}, any: [{temp: {gt: 80}}, {status: {in: [faulty, retired]}}]}}
`

// Readings cross each condition back and forth (whole-item puts, as an application saves
// a form; removals of the presence-tested attribute; deletes), delivered with every fault
// the exactly-once tests use: each target ends at what the conditions say of the items.
func TestWhereComparisonsExactlyOnce(t *testing.T) {
	for _, tc := range faultyDeliveries() {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvRules(t, apply.Options{}, whereRules)
			e.api.failAfter = -1
			ctx := context.Background()
			put := e.putItem
			str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
			num := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
			for _, site := range []string{"s1", "s2"} {
				put(map[string]types.AttributeValue{"pk": str("SITE#" + site), "sk": str("SITE")})
			}
			put(map[string]types.AttributeValue{"pk": str("REGION#r1"), "sk": str("REGION")})
			e.drain(20, e.lambdaLike)

			rng := rand.New(rand.NewPCG(11, 3))
			temps := []string{"5", "10.5", "10.4999", "40", "40.01", "79.99", "80", "80.5", "95"}
			statuses := []string{"ok", "calibrated", "faulty", "retired", "new"}
			for range 160 {
				site, id := fmt.Sprintf("s%d", 1+rng.IntN(2)), fmt.Sprintf("r%d", rng.IntN(12))
				key := map[string]types.AttributeValue{"pk": str("SITE#" + site), "sk": str("READING#" + id)}
				switch op := rng.IntN(10); {
				case op < 7: // a whole item, some without status, some archived
					item := map[string]types.AttributeValue{"pk": key["pk"], "sk": key["sk"], "regionId": str("r1"),
						"temp": num(temps[rng.IntN(len(temps))])}
					if rng.IntN(3) > 0 { // a third have no status
						item["status"] = str(statuses[rng.IntN(len(statuses))])
					}
					if rng.IntN(4) == 0 {
						item["archivedAt"] = str("2026-11-01")
					}
					put(item)
				case op < 8:
					if _, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.table), Key: key,
						UpdateExpression: aws.String("REMOVE archivedAt")}); err != nil {
						t.Fatal(err)
					}
				default:
					if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: key}); err != nil {
						t.Fatal(err)
					}
				}
			}
			e.drain(25, tc.deliver(e))

			// The truth, computed here from the items with big.Rat, not by the planner.
			// An UpdateItem of a deleted reading creates one with its keys alone: no temp passes
			// no comparison and adds 0 to a sum.
			rat := func(v types.AttributeValue) *big.Rat {
				if v == nil {
					return new(big.Rat)
				}
				r, _ := new(big.Rat).SetString(v.(*types.AttributeValueMemberN).Value)
				return r
			}
			cmp := func(v types.AttributeValue, lit string) (int, bool) {
				r, _ := new(big.Rat).SetString(lit)
				return rat(v).Cmp(r), v != nil
			}
			want := map[string]map[string]*big.Rat{}
			add := func(pk, attr string, d *big.Rat) {
				if want[pk] == nil {
					want[pk] = map[string]*big.Rat{"hot": new(big.Rat), "okTotal": new(big.Rat), "cool": new(big.Rat), "alert": new(big.Rat), "hotReadings": new(big.Rat)}
				}
				want[pk][attr].Add(want[pk][attr], d)
			}
			one := big.NewRat(1, 1)
			items := e.scan()
			for _, it := range items {
				pk, sk := s(it["pk"]), s(it["sk"])
				if rules.IsReserved(pk) || len(sk) < 8 || sk[:8] != "READING#" {
					continue
				}
				temp, status := it["temp"], s(it["status"])
				_, hasStatus := it["status"]
				hot := false
				if c, ok := cmp(temp, "80"); ok && c > 0 {
					hot = true
					add(pk, "hot", one)
					if status != "faulty" && status != "retired" {
						add("REGION#r1", "hotReadings", one)
					}
				}
				if (status == "ok" || status == "calibrated") && it["archivedAt"] == nil {
					add(pk, "okTotal", rat(temp))
				}
				if it["archivedAt"] == nil && (hot || status == "faulty" || status == "retired") {
					add(pk, "alert", one)
				}
				lo, ok := cmp(temp, "10.5")
				hi, _ := cmp(temp, "40")
				if ok && lo >= 0 && hi <= 0 && (!hasStatus || status != "faulty") {
					add(pk, "cool", one)
				}
			}
			checked := 0
			for _, it := range items {
				pk := s(it["pk"])
				for attr, w := range want[pk] {
					if _, on := map[string]bool{"SITE": true, "REGION": true}[s(it["sk"])]; !on {
						continue
					}
					if (pk == "REGION#r1") != (attr == "hotReadings") {
						continue
					}
					got := new(big.Rat)
					if v, ok := it[attr]; ok {
						got = rat(v)
					}
					checked++
					if got.Cmp(w) != 0 {
						t.Errorf("%s %s = %s, want %s", pk, attr, got.RatString(), w.RatString())
					}
				}
			}
			if checked < 9 {
				t.Fatalf("checked %d values, want the 4 of each site and the region's", checked)
			}
		})
	}
}
