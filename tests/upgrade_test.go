package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/rules"
)

// A table the version before state items ran on: counters with their watermark and write
// count on the targets, a park item, a relay item in a target's partition. This version is
// deployed over it (its mapping starts at LATEST), the application goes on writing, and
// the documented path (docs/operations.md, "Upgrading to state items") ends with verify
// clean and nothing of the old layout left.
func TestUpgradeFromTargetsThatHeldTheirState(t *testing.T) {
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	ctx := context.Background()
	f, err := rules.Load(deviceRules)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provision.Ensure(ctx, db, table, f.Table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteTable(db, table) })
	put := func(it item) {
		t.Helper()
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	// What the older version left: d1 with 3 readings counted, d2 deleted with its count
	// parked, a relay item in d1's partition.
	d1 := deviceItem("d1", "boiler")
	d1["readingCount"], d1["maxTemp"], d1["_dn_wm"], d1["_dn_n"], d1["_dn_wl"] = num(3), num(27), num(1003), num(3), num(1003)
	put(d1)
	for i, temp := range []int{25, 21, 27} {
		put(readingItem("d1", i+1, temp))
	}
	put(item{"pk": str("_dn#p#DEVICE#d2"), "sk": str("METADATA"), "_dn_pe_0000001": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"readingCount": num(2)}}, "_dn_n": num(1)})
	put(item{"pk": str("DEVICE#d1"), "sk": str("_dn#r#0f31d3f616863ba1502665dc6b58ac2d"), "_dn_rq": num(5), "_dn_rt": str("METADATA")})

	p, err := local.Start(ctx, local.Config{RulesPath: deviceRules, Endpoint: ddbtest.Endpoint(t), Table: table, Logger: quietLogger(),
		Mapping: esm.Config{BatchSize: 50, MaximumRetryAttempts: esm.Int(3), BisectBatchOnFunctionError: true,
			ReportBatchItemFailures: true, OnFailureDir: t.TempDir(), PollInterval: 20 * time.Millisecond, StartingPosition: esm.Latest}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	time.Sleep(500 * time.Millisecond) // the mapping takes its LATEST position
	put(readingItem("d1", 4, 30))
	put(deviceItem("d2", "pump"))
	put(readingItem("d2", 1, 40))
	drain(t, p)

	ev, err := ops.NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ops.Run(ctx, ops.Config{API: db, Table: table, Eval: ev, Mode: "backfill", Repair: true, Settle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backfill: drift %d", rep.Drift)
	set, err := rules.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	crep, err := ops.Cleanup(ctx, ops.CleanupConfig{API: db, Table: table, Old: set, Legacy: true})
	if err != nil {
		t.Fatal(err)
	}
	if crep.Left != 0 {
		t.Errorf("cleanup --legacy left %d items", crep.Left)
	}
	drain(t, p)
	rep, err = ops.Run(ctx, ops.Config{API: db, Table: table, Eval: ev})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() {
		t.Errorf("verify after the upgrade: drift %d, problems %d", rep.Drift, rep.Problems)
	}
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		pk, sk := it["pk"].(*types.AttributeValueMemberS).Value, it["sk"].(*types.AttributeValueMemberS).Value
		if strings.HasPrefix(pk, rules.LegacyParkPrefix) || !rules.IsReserved(pk) && strings.HasPrefix(sk, rules.RelayPrefix) {
			t.Errorf("%s %s: an item of the old layout is left", pk, sk)
		}
		for _, a := range rules.LegacyTargetAttrs {
			if _, ok := it[a]; ok && !rules.IsReserved(pk) {
				t.Errorf("%s %s: %s is left", pk, sk, a)
			}
		}
	}
	got := func(d, attr string) string {
		it, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: deviceKey(d), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := it.Item[attr].(*types.AttributeValueMemberN)
		if n == nil {
			return "absent"
		}
		return n.Value
	}
	if c := got("d1", "readingCount"); c != "4" {
		t.Errorf("d1 readingCount %s, want 4", c)
	}
	if c := got("d2", "readingCount"); c != "1" {
		t.Errorf("d2 readingCount %s, want 1", c)
	}
}
