package handler_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/rulesdiff"
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
			put := e.putItem
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
			e.verifyRules(distinctRules)
		})
	}
}

// useRules makes e's handler run text's rules from now on, on the same table: a deploy of
// new rules.
func (e *env) useRules(text string) {
	e.t.Helper()
	set, err := rules.ParseSet("test.yaml", []byte(text))
	if err != nil {
		e.t.Fatal(err)
	}
	e.set = set
	e.h = handler.New(set, apply.New(e.api, e.table, set, apply.Options{}), handler.Options{})
	e.inv = lambda.NewHandler(e.h.Handle)
}

// A distinct rule added to a table whose readings exist: `denorm backfill` writes the
// reference items the sources call for and each target's state in one transaction, and
// copies it (the targets are right before the processor reads anything, which then leaves
// the backfill's records of the reference items alone); readings written after it are
// counted on top, a verify is clean; then the rule is removed and `denorm cleanup` deletes
// its reference items and its attribute.
func TestDistinctBackfillAndCleanup(t *testing.T) {
	const before = `version: 1
entities:
  Site:    {pk: "SITE#{siteId}", sk: SITE, attributes: [name, statuses, readings]}
  Region:  {pk: "REGION#{regionId}", sk: REGION, attributes: [name, sites, statusKinds]}
  Reading: {pk: "SITE#{siteId}", sk: "READING#{readingId}", attributes: [status, archivedAt, regionId]}
rules:
  - name: site-readings
    count: {of: Reading, into: Site, attribute: readings}
`
	after := strings.Replace(distinctRules, "attributes: [name, statuses]", "attributes: [name, statuses, readings]", 1) +
		"  - name: site-readings\n    count: {of: Reading, into: Site, attribute: readings}\n"
	e := newEnvRules(t, apply.Options{}, before)
	e.api.failAfter = -1
	ctx := context.Background()
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	put := e.putItem
	reading := func(site, id, status, region string) {
		put(map[string]types.AttributeValue{"pk": str("SITE#" + site), "sk": str("READING#" + id), "status": str(status), "regionId": str(region)})
	}
	put(map[string]types.AttributeValue{"pk": str("SITE#s1"), "sk": str("SITE")})
	put(map[string]types.AttributeValue{"pk": str("SITE#s2"), "sk": str("SITE")})
	put(map[string]types.AttributeValue{"pk": str("REGION#r1"), "sk": str("REGION")})
	reading("s1", "a", "ok", "r1")
	reading("s1", "b", "ok", "r1")
	reading("s1", "c", "faulty", "r1")
	reading("s2", "d", "ok", "r1")
	e.drain(20, e.lambdaLike)

	e.useRules(after)
	f, err := rules.Parse("test.yaml", []byte(after))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ops.NewEvaluatorFor(f, []string{"site-statuses", "region-sites", "region-statuses"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ops.Run(ctx, ops.Config{API: e.db, Table: e.table, Eval: ev, Repair: true, Segments: 2, PageSize: 100, Mode: "backfill"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	t.Logf("%s", b.String())
	check := func(when string, want map[[2]string]int) {
		t.Helper()
		for k, w := range want {
			sk := "SITE"
			if strings.HasPrefix(k[0], "REGION#") {
				sk = "REGION"
			}
			if got := n(e.get(k[0], sk)[k[1]]); got != w {
				t.Errorf("%s: %s %s = %d, want %d", when, k[0], k[1], got, w)
			}
		}
	}
	backfilled := map[[2]string]int{{"SITE#s1", "statuses"}: 2, {"SITE#s2", "statuses"}: 1, {"REGION#r1", "sites"}: 2, {"REGION#r1", "statusKinds"}: 2}
	check("after the backfill", backfilled)
	e.drain(20, e.lambdaLike) // the reference items' records: the backfill's, left alone
	check("after the backfill's records", backfilled)
	reading("s2", "e", "calibrated", "r1")
	e.del("SITE#s1", "READING#c")
	e.drain(20, e.lambdaLike)
	e.drain(20, e.lambdaLike)
	check("after more writes", map[[2]string]int{{"SITE#s1", "statuses"}: 1, {"SITE#s2", "statuses"}: 2, {"REGION#r1", "sites"}: 2, {"REGION#r1", "statusKinds"}: 2})
	e.verifyRules(after)

	// Damage to the reference items, written around Denorm: one deleted (its record takes
	// its value out of the count), one holding a wrong number. Verify reports both and the
	// count; a repair puts them right in one transaction, and the processor leaves its
	// writes alone.
	var refs []map[string]types.AttributeValue
	for _, it := range e.scan() {
		if strings.HasPrefix(s(it["sk"]), rules.DistinctRefPrefix+"site-statuses#") && n(it["statuses"]) > 0 {
			refs = append(refs, it)
		}
	}
	if len(refs) < 2 {
		t.Fatalf("%d reference items of site-statuses above zero, want 2 or more", len(refs))
	}
	if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.table),
		Key: map[string]types.AttributeValue{"pk": refs[0]["pk"], "sk": refs[0]["sk"]}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.table),
		Key: map[string]types.AttributeValue{"pk": refs[1]["pk"], "sk": refs[1]["sk"]}, UpdateExpression: aws.String("SET statuses = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "7"}}}); err != nil {
		t.Fatal(err)
	}
	e.drain(20, e.lambdaLike)
	vrep, err := ops.Run(ctx, ops.Config{API: e.db, Table: e.table, Eval: ev, Segments: 2, PageSize: 100, Mode: "verify"})
	if err != nil {
		t.Fatal(err)
	}
	if vrep.Drift != 3 {
		var b strings.Builder
		vrep.WriteText(&b)
		t.Errorf("verify of the damaged reference items: %d drifted, want 3 (the two and a count)\n%s", vrep.Drift, b.String())
	}
	rep, err = ops.Run(ctx, ops.Config{API: e.db, Table: e.table, Eval: ev, Repair: true, Segments: 2, PageSize: 100, Mode: "repair"})
	if err != nil || rep.Unrepaired != 0 {
		t.Fatalf("repair: %v, %d unrepaired", err, rep.Unrepaired)
	}
	e.verifyRules(after)
	e.drain(20, e.lambdaLike) // the repair's own records: left alone
	e.verifyRules(after)

	old, err := rules.ParseSet("test.yaml", []byte(after))
	if err != nil {
		t.Fatal(err)
	}
	beforeFile, err := rules.Parse("test.yaml", []byte(before))
	if err != nil {
		t.Fatal(err)
	}
	d, err := rulesdiff.Compare(f, beforeFile)
	if err != nil {
		t.Fatal(err)
	}
	cls := d.Cleanups()
	if len(cls) != 3 || !cls[0].Refs {
		t.Fatalf("cleanups %+v, want the three distinct rules' with their reference items", cls)
	}
	newSet, err := rules.ParseSet("test.yaml", []byte(before))
	if err != nil {
		t.Fatal(err)
	}
	e.useRules(before)
	crep, err := ops.Cleanup(ctx, ops.CleanupConfig{API: e.db, Table: e.table, Old: old, New: newSet, Cleanups: cls})
	if err != nil {
		t.Fatal(err)
	}
	if crep.Left != 0 {
		t.Errorf("cleanup left %d", crep.Left)
	}
	e.drain(20, e.lambdaLike)
	for _, it := range e.scan() {
		pk, sk := s(it["pk"]), s(it["sk"])
		if strings.HasPrefix(pk, rules.RelayPrefix) && strings.HasPrefix(sk, rules.DistinctRefPrefix) {
			t.Errorf("reference item %s %s left after the cleanup", pk, sk)
		}
		for _, a := range []string{"statuses", "sites", "statusKinds"} {
			if it[a] != nil {
				t.Errorf("%s %s still holds %s", pk, sk, a)
			}
		}
	}
}
