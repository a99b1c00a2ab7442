package handler_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/rules"
)

// distinctRules count different values three ways: statuses of a site's readings (in the
// site's partition: watermarks), sites reporting into a region (a key variable, from other
// partitions: relay items) and statuses into the region (exactlyOnce: transaction).
const distinctRules = `version: 1
entities:
  Site:    {pk: "SITE#{siteId}", sk: SITE, attributes: [name, statuses]}
  Region:  {pk: "REGION#{regionId}", sk: REGION, attributes: [name, sites, statusKinds]}
  Reading: {pk: "SITE#{siteId}", sk: "READING#{readingId}", attributes: [status, archivedAt, regionId]}
rules:
  - name: site-statuses
    distinct: {of: Reading, into: Site, value: status, attribute: statuses, where: {archivedAt: {exists: false}}}
  - name: region-sites
    distinct: {of: Reading, into: Region, value: "{siteId}", attribute: sites}
  - name: region-statuses
    distinct: {of: Reading, into: Region, value: status, attribute: statusKinds, exactlyOnce: transaction}
`

// Readings change status (strings, numbers that are equal as numbers, booleans, values of
// no type a distinct counts), move between regions, are archived and deleted, while the
// application saves the sites and regions whole (dropping the counts) or deletes and
// re-puts them; every batch is delivered with the faults of the exactly-once tests. Each
// target ends with the number of different values its readings hold, computed here from
// the items, and `denorm verify` finds nothing to repair.
func TestDistinctExactlyOnce(t *testing.T) {
	for _, tc := range faultyDeliveries() {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvRules(t, apply.Options{}, distinctRules)
			e.api.failAfter = -1
			ctx := context.Background()
			put := func(item map[string]types.AttributeValue) {
				if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: item}); err != nil {
					t.Fatal(err)
				}
			}
			str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
			targets := []map[string]types.AttributeValue{
				{"pk": str("SITE#s1"), "sk": str("SITE"), "name": str("north")},
				{"pk": str("SITE#s2"), "sk": str("SITE"), "name": str("south")},
				{"pk": str("SITE#s3"), "sk": str("SITE"), "name": str("east")},
				{"pk": str("REGION#r1"), "sk": str("REGION"), "name": str("one")},
				{"pk": str("REGION#r2"), "sk": str("REGION"), "name": str("two")},
			}
			for _, it := range targets {
				put(it)
			}
			e.drain(20, e.lambdaLike)

			rng := rand.New(rand.NewPCG(35, 2))
			statuses := []types.AttributeValue{str("ok"), str("faulty"), str("1"),
				&types.AttributeValueMemberN{Value: "1"}, &types.AttributeValueMemberN{Value: "1.0"},
				&types.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberL{}}
			for round := range 180 {
				site, id := fmt.Sprintf("s%d", 1+rng.IntN(3)), fmt.Sprintf("r%d", rng.IntN(10))
				key := map[string]types.AttributeValue{"pk": str("SITE#" + site), "sk": str("READING#" + id)}
				switch op := rng.IntN(12); {
				case op < 7: // a whole reading, some without a status, region or archived
					item := map[string]types.AttributeValue{"pk": key["pk"], "sk": key["sk"]}
					if rng.IntN(5) > 0 {
						item["status"] = statuses[rng.IntN(len(statuses))]
					}
					if rng.IntN(6) > 0 {
						item["regionId"] = str(fmt.Sprintf("r%d", 1+rng.IntN(2)))
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
				case op < 10:
					if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: key}); err != nil {
						t.Fatal(err)
					}
				case op < 11: // the application saves a target whole, as its form read it
					put(targets[rng.IntN(len(targets))])
				default: // deleted and put back
					tg := targets[rng.IntN(len(targets))]
					if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.table),
						Key: map[string]types.AttributeValue{"pk": tg["pk"], "sk": tg["sk"]}}); err != nil {
						t.Fatal(err)
					}
					put(tg)
				}
				if round%45 == 44 {
					e.drain(25, tc.deliver(e))
				}
			}
			e.drain(25, tc.deliver(e))
			e.drain(25, tc.deliver(e)) // the reference items' records of the last batches

			// The truth, from the items: a value's identity as DynamoDB equality has it,
			// worked out here without the planner.
			ident := func(v types.AttributeValue) (string, bool) {
				switch x := v.(type) {
				case *types.AttributeValueMemberS:
					return "s:" + x.Value, true
				case *types.AttributeValueMemberN:
					r, _ := new(big.Rat).SetString(x.Value)
					return "n:" + r.RatString(), true
				case *types.AttributeValueMemberBOOL:
					return fmt.Sprint("b:", x.Value), true
				}
				return "", false
			}
			want := map[string]map[string]map[string]bool{} // target pk -> attribute -> values
			add := func(pk, attr, v string) {
				if want[pk] == nil {
					want[pk] = map[string]map[string]bool{}
				}
				if want[pk][attr] == nil {
					want[pk][attr] = map[string]bool{}
				}
				want[pk][attr][v] = true
			}
			items := e.scan()
			for _, it := range items {
				pk, sk := s(it["pk"]), s(it["sk"])
				if rules.IsReserved(pk) || !strings.HasPrefix(sk, "READING#") {
					continue
				}
				status, hasStatus := ident(it["status"])
				if hasStatus && it["archivedAt"] == nil {
					add(pk, "statuses", status)
				}
				if region := s(it["regionId"]); region != "" {
					add("REGION#"+region, "sites", strings.TrimPrefix(pk, "SITE#"))
					if hasStatus {
						add("REGION#"+region, "statusKinds", status)
					}
				}
			}
			checked := 0
			for _, it := range items {
				pk := s(it["pk"])
				if rules.IsReserved(pk) {
					continue
				}
				var attrs []string
				switch s(it["sk"]) {
				case "SITE":
					attrs = []string{"statuses"}
				case "REGION":
					attrs = []string{"sites", "statusKinds"}
				}
				for _, a := range attrs {
					checked++
					if got, w := n(it[a]), len(want[pk][a]); got != w || (w > 0 && it[a] == nil) {
						t.Errorf("%s %s = %v, want %d (%v)", pk, a, show(it[a]), w, want[pk][a])
					}
				}
			}
			if checked != 7 {
				t.Fatalf("checked %d values, want 7", checked)
			}
			// VERIFY
		})
	}
}
