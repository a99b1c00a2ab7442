package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/rules"
)

// The shop of issue 31: customers and their orders, before and after a count and a sum of
// paid orders are added.
const (
	shopV1 = "testdata/shop-v1.yaml"
	shopV2 = "testdata/shop-v2.yaml"
)

// shop is what the shop's writers believe exists.
type shop struct {
	mu        sync.Mutex
	rnd       *rand.Rand
	customers []string
	orders    map[string]string // "customerId#orderId" -> status
	paying    bool              // see step
	next      int
	ops       atomic.Int64
}

func newShop(seed uint64, customers int) *shop {
	s := &shop{rnd: rand.New(rand.NewPCG(seed, 31)), orders: map[string]string{}}
	for i := range customers {
		s.customers = append(s.customers, fmt.Sprintf("c%02d", i))
	}
	return s
}

// profiles writes every customer's profile.
func (s *shop) profiles(t *testing.T, db *dynamodb.Client, table string) {
	t.Helper()
	for _, c := range s.customers {
		if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: item{"pk": str("CUSTOMER#" + c), "sk": str("PROFILE"), "name": str("Customer " + c)}}); err != nil {
			t.Fatal(err)
		}
	}
}

func orderKey(k string) item {
	c, o, _ := strings.Cut(k, "#")
	return item{"pk": str("CUSTOMER#" + c), "sk": str("ORDER#" + o)}
}

// step makes one write of the shop: an order placed (pending, or paid at once), an order's
// status changed (paid, refunded, pending again), an order's amount changed, an order
// deleted. A paying shop only pays pending orders and places and deletes pending ones: its
// paid orders only grow.
func (s *shop) step(ctx context.Context, db *dynamodb.Client, table string) error {
	s.mu.Lock()
	defer s.mu.Unlock() // the model and the table change together
	s.next++
	op := s.rnd.IntN(20)
	k, ok := pickKey(&blog{rnd: s.rnd}, s.orders)
	if s.paying && ok && op >= 7 && op != 17 && op != 18 {
		k, ok = s.pending()
	}
	if !ok {
		op = 0
	}
	var err error
	switch {
	case op < 7:
		status := "pending"
		if !s.paying && s.rnd.IntN(3) == 0 {
			status = "paid"
		}
		err = s.place(ctx, db, table, s.customers[s.rnd.IntN(len(s.customers))], status)
	case op < 17:
		status := "paid"
		switch s.orders[k] {
		case "paid":
			status = "refunded"
		case "refunded":
			status = "pending"
		}
		s.orders[k] = status
		_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: orderKey(k),
			UpdateExpression: aws.String("SET #s = :s"), ExpressionAttributeNames: map[string]string{"#s": "status"},
			ExpressionAttributeValues: item{":s": str(status)}})
	case op < 19:
		_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: orderKey(k),
			UpdateExpression: aws.String("SET amount = :a"), ExpressionAttributeValues: item{":a": num(10 + s.rnd.IntN(90))}})
	default:
		delete(s.orders, k)
		_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: orderKey(k)})
	}
	s.ops.Add(1)
	return err
}

// place writes a new order of customer c; the caller holds s.mu.
func (s *shop) place(ctx context.Context, db *dynamodb.Client, table, c, status string) error {
	s.next++
	k := fmt.Sprintf("%s#o%05d", c, s.next)
	it := orderKey(k)
	it["status"], it["amount"] = str(status), num(10+s.rnd.IntN(90))
	s.orders[k] = status
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
	return err
}

// pending picks a pending order.
func (s *shop) pending() (string, bool) {
	var ks []string
	for k, st := range s.orders {
		if st == "pending" {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return "", false
	}
	slices.Sort(ks)
	return ks[s.rnd.IntN(len(ks))], true
}

// TestBackfillOfNewCountersWhileWriting is issue 31's first report: a count and a sum of
// paid orders are added to a shop's rules while its writer places and pays orders. The new
// rules are deployed, so the stream processor counts every change from then on into
// counters that hold only those changes; the plan's backfill runs with the writer still
// writing, again while it exits 1. A backfill that exits 0 must leave nothing for verify to
// find once the stream drains, however the live counters and the scan's totals happened to
// compare. Every customer had one paid order before the change, so each whose orders the
// writer pays once between the scan of its orders and the check of its counter shows a
// counter (1, the live payment) equal to the scan's stale total (1, the old order): as wrong
// as one that differs. With 40 customers and a settle per page of 10 items, some always
// are.
func TestBackfillOfNewCountersWhileWriting(t *testing.T) {
	db, _ := ddbtest.Clients(t) // skips without an emulator
	table := ddbtest.TableName(t)
	ckpt := filepath.Join(t.TempDir(), "mapping.json")
	t.Cleanup(func() { deleteTable(db, table) })
	ctx := context.Background()

	p := startRules(t, shopV1, table, ckpt)
	s := newShop(5, 40)
	s.profiles(t, db, table)
	s.mu.Lock()
	for _, c := range s.customers {
		for _, status := range []string{"paid", "pending", "pending"} {
			if err := s.place(ctx, db, table, c, status); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.paying = true
	s.mu.Unlock()
	drain(t, p)
	if code, _ := denorm(t, "verify", "--rules", shopV1, "--table", table, "--no-progress"); code != 0 {
		t.Fatalf("the old rules do not hold before the change (exit %d)", code)
	}

	stopWriters := runWriters(t, 1, 75*time.Millisecond, 150*time.Millisecond, func(ctx context.Context) error { return s.step(ctx, db, table) })
	defer stopWriters()
	time.Sleep(300 * time.Millisecond)

	code, plan := denorm(t, "diff", shopV1, shopV2, "--table", table)
	if code != 1 {
		t.Fatalf("denorm diff exited %d, want 1", code)
	}
	cmds := commandsOf(plan)
	if len(cmds) != 2 || cmds[0][0] != "backfill" || cmds[1][0] != "verify" {
		t.Fatalf("the plan's commands are %v, want a backfill and a verify", cmds)
	}

	// Deploy: the mapping resumes where the old rules stopped, with the new ones.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = startRules(t, shopV2, table, ckpt)
	defer p.Close()
	time.Sleep(time.Second) // the new rules count a few changes before the backfill starts

	before := s.ops.Load()
	for run := 1; ; run++ {
		code, _ := denorm(t, append(cmds[0], "--settle", "1s", "--page-size", "10", "--no-progress")...)
		if code == 0 {
			break
		}
		if code != 1 || run == 6 {
			t.Fatalf("backfill run %d exited %d", run, code)
		}
	}
	if during := s.ops.Load() - before; during == 0 {
		t.Fatal("no application write during the backfill: the test proves nothing")
	} else {
		t.Logf("the shop made %d writes during the backfill", during)
	}

	stopWriters()
	drain(t, p)
	if code, _ := denorm(t, append(cmds[1], "--no-progress", "--examples", "10")...); code != 0 {
		t.Errorf("verify of the backfilled rules exited %d, want 0: the backfill exited 0 and left counters wrong", code)
	}
	if code, _ := denorm(t, "verify", "--rules", shopV2, "--table", table, "--no-progress"); code != 0 {
		t.Errorf("verify of every rule exited %d, want 0", code)
	}
}

// TestBackfillBeforeTheProcessorStarts is issue 31's second report: a table that held
// items before its stream was turned on, whose stream is on and whose application writes, backfilled before the stream processor's first
// start. The mapping then starts at TRIM_HORIZON and applies every write the stream still
// holds on top of totals that include them. Whatever the backfill does in that order, an
// exit 0 must mean that verify finds nothing once the stream drains; refused, it runs
// again once the processor does.
func TestBackfillBeforeTheProcessorStarts(t *testing.T) {
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	t.Cleanup(func() { deleteTable(db, table) })
	ctx := context.Background()
	f, err := rules.Load(shopV1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provision.Ensure(ctx, db, table, f.Table); err != nil {
		t.Fatal(err)
	}
	// The shop's items from before its stream was turned on: on no stream.
	stream(t, db, table, false)
	s := newShop(9, 20)
	s.profiles(t, db, table)
	for range 100 {
		if err := s.step(ctx, db, table); err != nil {
			t.Fatal(err)
		}
	}
	stream(t, db, table, true)
	stopWriters := runWriters(t, 1, 100*time.Millisecond, 200*time.Millisecond, func(ctx context.Context) error { return s.step(ctx, db, table) })
	defer stopWriters()
	time.Sleep(time.Second)

	// 1. Backfilled first: no stream processor has ever run on this table.
	backfill := []string{"backfill", "--rules", shopV1, "--table", table, "--settle", "1s", "--no-progress"}
	code, out := denorm(t, backfill...)

	// 2. The processor starts: a new mapping, at TRIM_HORIZON.
	p := startRules(t, shopV1, table, filepath.Join(t.TempDir(), "mapping.json"))
	defer p.Close()
	if code != 0 {
		// Refused: it must say why, and run now that the processor does.
		if code != 3 || !strings.Contains(out, "stream processor") {
			t.Errorf("the backfill before the processor exited %d, want 3 with the reason in terms of the stream processor:\n%s", code, out)
		}
		for run := 1; ; run++ {
			code, _ := denorm(t, backfill...)
			if code == 0 {
				break
			}
			if code != 1 || run == 6 {
				t.Fatalf("backfill after the processor started, run %d, exited %d", run, code)
			}
		}
	}
	stopWriters()
	drain(t, p)
	if code, _ := denorm(t, "verify", "--rules", shopV1, "--table", table, "--no-progress", "--examples", "10"); code != 0 {
		t.Errorf("verify exited %d once the stream drained, want 0: a backfill exited 0 and left counters wrong", code)
	}
	t.Logf("%d writes in all", s.ops.Load())
}

// TestBackfillWhileATargetIsAway: a customer deleted before new counters are deployed and
// put back after their backfill. The processor keeps every change since the deploy in the
// target's state item although the target is away (a paid order deleted: -1); the backfill
// meets no target, and must still decide the state, or the customer put back shows those
// deltas alone. c1 keeps one paid order (total 1), c2 none (total 0, state -1).
func TestBackfillWhileATargetIsAway(t *testing.T) {
	backfillWhileAway(t, shopV2, "customer-paid-count,customer-paid-total", "paid")
}

// TestBackfillWhileADistinctTargetIsAway is TestBackfillWhileATargetIsAway for a distinct
// count: customers away while a distinct of their orders' statuses is deployed and
// backfilled. c1 loses its one paid order (left: shipped, 1 status), c2 its only order (0);
// the processor moved their reference items while they were away. The backfill must decide
// their reference items and states, or c1 put back shows no status at all.
func TestBackfillWhileADistinctTargetIsAway(t *testing.T) {
	db, table := backfillWhileAway(t, "testdata/shop-distinct.yaml", "customer-statuses", "shipped")
	got, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: item{"pk": str("CUSTOMER#c1"), "sk": str("PROFILE")}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := got.Item["statusCount"].(*types.AttributeValueMemberN); !ok || n.Value != "1" {
		t.Errorf("c1 statusCount = %v, want 1 (shipped)", got.Item["statusCount"])
	}
}

// backfillWhileAway is the story of the two tests above, on rules over shopV1's table:
// customer c1 with orders o1 (paid) and o2 (o2Status), c2 with o3 (paid), under shopV1;
// both customers deleted; rules deployed; o1 and o3 deleted while the customers are away;
// the rules only names backfilled; the customers put back. verify must then exit 0. It
// returns the table for further checks.
func backfillWhileAway(t *testing.T, rules, only, o2Status string) (*dynamodb.Client, string) {
	t.Helper()
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	ckpt := filepath.Join(t.TempDir(), "mapping.json")
	t.Cleanup(func() { deleteTable(db, table) })
	ctx := context.Background()
	put := func(it item) {
		t.Helper()
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(pk, sk string) {
		t.Helper()
		if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: item{"pk": str(pk), "sk": str(sk)}}); err != nil {
			t.Fatal(err)
		}
	}
	profile := func(c string) item {
		return item{"pk": str("CUSTOMER#" + c), "sk": str("PROFILE"), "name": str("Customer " + c)}
	}
	order := func(c, o, status string) item {
		return item{"pk": str("CUSTOMER#" + c), "sk": str("ORDER#" + o), "status": str(status), "amount": num(30)}
	}

	p := startRules(t, shopV1, table, ckpt)
	put(profile("c1"))
	put(order("c1", "o1", "paid"))
	put(order("c1", "o2", o2Status))
	put(profile("c2"))
	put(order("c2", "o3", "paid"))
	drain(t, p)
	del("CUSTOMER#c1", "PROFILE")
	del("CUSTOMER#c2", "PROFILE")
	drain(t, p)

	// Deploy the new rules; an order of each customer goes while they are away.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = startRules(t, rules, table, ckpt)
	defer p.Close()
	del("CUSTOMER#c1", "ORDER#o1")
	del("CUSTOMER#c2", "ORDER#o3")
	drain(t, p)

	if code, out := denorm(t, "backfill", "--rules", rules, "--table", table, "--only", only,
		"--settle", "500ms", "--no-progress"); code != 0 {
		t.Fatalf("backfill exited %d:\n%s", code, out)
	}
	put(profile("c1"))
	put(profile("c2"))
	drain(t, p)
	if code, out := denorm(t, "verify", "--rules", rules, "--table", table, "--no-progress"); code != 0 {
		t.Errorf("verify exited %d once the customers were back, want 0: the backfill exited 0 and left their states wrong\n%s", code, out)
	}
	return db, table
}

// stream turns the table's stream on (NEW_AND_OLD_IMAGES) or off.
func stream(t *testing.T, db *dynamodb.Client, table string, on bool) {
	t.Helper()
	spec := &types.StreamSpecification{StreamEnabled: aws.Bool(on)}
	if on {
		spec.StreamViewType = types.StreamViewTypeNewAndOldImages
	}
	if _, err := db.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: aws.String(table), StreamSpecification: spec}); err != nil {
		t.Fatalf("turning the stream of %s on=%t: %v", table, on, err)
	}
}
