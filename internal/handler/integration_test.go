package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

const testRules = `version: 1
entities:
  User:    {pk: "USER#{userId}", sk: PROFILE, attributes: [name, postCount]}
  Post:    {pk: "POST#{postId}", sk: METADATA, attributes: [userId, commentCount, likeTotal]}
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}", gsi1pk: "USER#{userId}", gsi1sk: "COMMENT#{commentId}",
            attributes: [likes, status, userName]}
rules:
  - name: comment-author
    copy: {from: User, to: Comment, via: gsi1, set: {userName: name}}
  - name: post-comment-count
    count: {of: Comment, into: Post, attribute: commentCount, where: {status: visible}}
  - name: post-like-total
    sum: {of: Comment, into: Post, value: likes, attribute: likeTotal}
  - name: user-post-count
    count: {of: Post, into: User, attribute: postCount}
`

// env is one table with its stream, the real handler, and a stream reader.
type env struct {
	t      *testing.T
	db     *dynamodb.Client
	table  string
	arn    string
	reader *ddbtest.StreamReader
	set    *rules.Set
	h      *handler.Handler
	inv    lambda.Handler
	api    *faultyAPI
}

func newEnv(t *testing.T, opt apply.Options) *env { return newEnvRules(t, opt, testRules) }

// transactionRules is testRules with the cross-partition count made exactly once by
// per-event markers in transactions instead of relay items.
var transactionRules = strings.Replace(testRules, "attribute: postCount}", "attribute: postCount, exactlyOnce: transaction}", 1)

// splitRules is testRules with the cross-partition count's state split over 4 parts, as
// for a hot target.
var splitRules = strings.Replace(testRules, "attribute: postCount}", "attribute: postCount, split: 4}", 1)

func newEnvRules(t *testing.T, opt apply.Options, text string) *env {
	db, streams := ddbtest.Clients(t)
	set, err := rules.ParseSet("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	name, desc := ddbtest.NewTable(t, db, set.Table)
	e := &env{t: t, db: db, table: name, arn: aws.ToString(desc.LatestStreamArn), set: set}
	e.reader = ddbtest.NewStreamReader(t, streams, e.arn)
	e.api = &faultyAPI{API: db}
	e.h = handler.New(set, apply.New(e.api, name, set, opt), handler.Options{})
	e.inv = lambda.NewHandler(e.h.Handle)
	return e
}

// faultyAPI passes calls to DynamoDB Local and fails write calls on demand: after a
// number of successful writes (a crash mid-batch), or with TransactionConflict.
type faultyAPI struct {
	apply.API
	failAfter int // fail every write once this many succeeded; < 0 disables
	writes    int
	conflicts int           // the next n transactions fail with TransactionConflict
	failPK    string        // UpdateItem on this partition key fails; "" for none
	slow      time.Duration // each UpdateItem waits this long first
	gets      atomic.Int64
	queries   atomic.Int64 // Query requests (pages)
}

func (f *faultyAPI) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.queries.Add(1)
	return f.API.Query(ctx, in, o...)
}

// GetItem counts the reads the rules make: not the stream registry's (once per
// Options.StreamCheck).
func (f *faultyAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if pk, ok := in.Key["pk"].(*types.AttributeValueMemberS); !ok || pk.Value != rules.StreamRegistryPK {
		f.gets.Add(1)
	}
	return f.API.GetItem(ctx, in, o...)
}

var errCrash = fmt.Errorf("injected crash")

func (f *faultyAPI) gate() error {
	if f.failAfter >= 0 && f.writes >= f.failAfter {
		return errCrash
	}
	f.writes++
	return nil
}

func (f *faultyAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if pk, ok := in.Key["pk"].(*types.AttributeValueMemberS); ok && f.failPK != "" && pk.Value == f.failPK {
		return nil, errCrash
	}
	if err := f.gate(); err != nil {
		return nil, err
	}
	time.Sleep(f.slow)
	return f.API.UpdateItem(ctx, in, o...)
}

func (f *faultyAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.conflicts > 0 {
		f.conflicts--
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		reasons[0].Code = aws.String("TransactionConflict")
		return nil, &types.TransactionCanceledException{Message: aws.String("injected conflict"), CancellationReasons: reasons}
	}
	if err := f.gate(); err != nil {
		return nil, err
	}
	return f.API.TransactWriteItems(ctx, in, o...)
}

func (e *env) put(item map[string]string) {
	e.t.Helper()
	av := map[string]types.AttributeValue{}
	for k, v := range item {
		if n, err := strconv.Atoi(v); err == nil && k != "pk" && k != "sk" && k != "userId" {
			av[k] = &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
		} else {
			av[k] = &types.AttributeValueMemberS{Value: v}
		}
	}
	e.putItem(av)
}

// failingOn delivers batch once with every UpdateItem on partition pk failing, and fails the
// test unless the handler reports record want as the first one not applied.
func (e *env) failingOn(pk string, batch []json.RawMessage, want int) {
	e.t.Helper()
	e.api.failPK = pk
	defer func() { e.api.failPK = "" }()
	if i := e.invoke(batch); i != want {
		e.t.Fatalf("first delivery failed at record %d, want %d (the write on %s)", i, want, pk)
	}
}

func (e *env) del(pk, sk string) {
	e.t.Helper()
	_, err := e.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		e.t.Fatal(err)
	}
}

// records reads the stream records written since the last call, as Lambda JSON.
func (e *env) records() []json.RawMessage {
	e.t.Helper()
	var out []json.RawMessage
	for _, r := range e.reader.Read(0) {
		raw, err := record.EncodeStreamRecord(r, e.arn, "us-east-1")
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// invoke runs the handler on a batch the way Lambda does and returns the index of the
// first failed record (len(batch) when none).
func (e *env) invoke(batch []json.RawMessage) int {
	e.t.Helper()
	out, err := e.inv.Invoke(context.Background(), record.EncodeEvent(batch))
	if err != nil {
		// A function error: the first record failed (handler.Handle). Lambda retries the
		// batch (or bisects it); retrying it whole is enough here.
		e.t.Logf("invoke: %v", err)
		return 0
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		e.t.Fatal(err)
	}
	if len(resp.BatchItemFailures) == 0 {
		return len(batch)
	}
	id := resp.BatchItemFailures[0].ItemIdentifier
	for i, raw := range batch {
		c, err := record.Decode(raw)
		if (err == nil && c.Seq == id) || (err != nil && record.RawSeq(raw) == id) {
			return i
		}
	}
	e.t.Fatalf("batch item failure %q is not a sequence number of the batch", id)
	return 0
}

// drain delivers the stream in batches of size n through deliver until it is quiet
// (the handler's own writes produce records too: counters, copies, fan-out jobs).
func (e *env) drain(n int, deliver func(batch []json.RawMessage)) {
	e.t.Helper()
	for round := 0; round < 200; round++ {
		recs := e.records()
		if len(recs) == 0 {
			return
		}
		for len(recs) > 0 {
			k := min(n, len(recs))
			deliver(recs[:k])
			recs = recs[k:]
		}
	}
	e.t.Fatal("stream did not go quiet after 200 rounds")
}

// lambdaLike delivers a batch as Lambda does: retry from the reported failure until done.
func (e *env) lambdaLike(batch []json.RawMessage) {
	e.t.Helper()
	for tries := 0; len(batch) > 0; tries++ {
		if tries > 50 {
			e.t.Fatal("batch never completed")
		}
		batch = batch[e.invoke(batch):]
	}
}

// workload writes users, posts, comments, likes, status flips, moves and deletes.
func (e *env) workload(seed uint64, users, posts, ops int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for u := 0; u < users; u++ {
		e.put(map[string]string{"pk": fmt.Sprintf("USER#u%d", u), "sk": "PROFILE", "name": fmt.Sprintf("user %d", u)})
	}
	for p := 0; p < posts; p++ {
		e.put(map[string]string{"pk": fmt.Sprintf("POST#p%d", p), "sk": "METADATA", "userId": fmt.Sprintf("u%d", rng.IntN(users))})
	}
	for i := 0; i < ops; i++ {
		p, c, u := rng.IntN(posts), rng.IntN(ops/2+1), rng.IntN(users)
		pk, sk := fmt.Sprintf("POST#p%d", p), fmt.Sprintf("COMMENT#c%d", c)
		switch k := rng.IntN(10); {
		case k < 6:
			status := "visible"
			if rng.IntN(4) == 0 {
				status = "hidden"
			}
			e.put(map[string]string{"pk": pk, "sk": sk, "gsi1pk": fmt.Sprintf("USER#u%d", u), "gsi1sk": sk,
				"likes": strconv.Itoa(rng.IntN(5)), "status": status, "userName": "stale"})
		case k < 8:
			e.del(pk, sk)
		case k < 9:
			e.put(map[string]string{"pk": fmt.Sprintf("USER#u%d", u), "sk": "PROFILE", "name": fmt.Sprintf("user %d v%d", u, i)})
		default:
			e.put(map[string]string{"pk": pk, "sk": "METADATA", "userId": fmt.Sprintf("u%d", u)})
		}
	}
}

// check compares counters, sums and copies with the truth computed from a scan.
func (e *env) check() {
	e.t.Helper()
	var items []map[string]types.AttributeValue
	for _, it := range e.scan() {
		if !rules.IsReserved(s(it["pk"])) { // state items, relay items, markers, jobs
			items = append(items, it)
		}
	}
	commentCount, likeTotal, postCount := map[string]int{}, map[string]int{}, map[string]int{}
	names := map[string]string{}
	for _, it := range items {
		pk, sk := s(it["pk"]), s(it["sk"])
		switch {
		case sk == "PROFILE":
			names[pk] = s(it["name"])
		case sk == "METADATA" && pk[:5] == "POST#":
			postCount["USER#"+s(it["userId"])]++
		case len(sk) > 8 && sk[:8] == "COMMENT#":
			if s(it["status"]) == "visible" {
				commentCount[pk]++
			}
			likeTotal[pk] += n(it["likes"])
		}
	}
	bad := 0
	for _, it := range items {
		pk, sk := s(it["pk"]), s(it["sk"])
		report := func(what string, got, want any) {
			if bad < 10 {
				e.t.Errorf("%s %s %s = %v, want %v", pk, sk, what, got, want)
			}
			bad++
		}
		switch {
		case sk == "PROFILE":
			if got := n(it["postCount"]); got != postCount[pk] {
				report("postCount", got, postCount[pk])
			}
		case sk == "METADATA" && pk[:5] == "POST#":
			if got := n(it["commentCount"]); got != commentCount[pk] {
				report("commentCount", got, commentCount[pk])
			}
			if got := n(it["likeTotal"]); got != likeTotal[pk] {
				report("likeTotal", got, likeTotal[pk])
			}
		case len(sk) > 8 && sk[:8] == "COMMENT#":
			want := names[s(it["gsi1pk"])]
			if want != "" && s(it["userName"]) != want {
				report("userName", s(it["userName"]), want)
			}
		}
	}
	if bad > 0 {
		e.t.Fatalf("%d values differ from the truth", bad)
	}
	e.checkStates(map[string]map[string]int{"commentCount": commentCount, "likeTotal": likeTotal, "postCount": postCount})
}

// checkStates checks where counts and sums keep their state, against truth (attribute ->
// target partition key -> value; every target of these rules has one sort key per entity):
//
//   - a count or sum target carries no attribute of Denorm's but the copy version
//     (rules.CopyVersionAttr), no more than its state's version: no watermark, write
//     count or restore marks (rules.LegacyTargetAttrs) and no other reserved attribute;
//   - the state item of a target with a value other than 0 exists at rules.StatePrefix +
//     the target's key, and every state item holds the truth and a version (its
//     watermarks depend on the rule's mode: see TestStateItemLayout);
//   - no item in an application's partition has a reserved sort key (relay items live in
//     their own partitions), and there are no park items (rules.LegacyParkPrefix).
func (e *env) checkStates(truth map[string]map[string]int) {
	e.t.Helper()
	items := e.scan()
	state := map[[2]string]map[string]types.AttributeValue{}
	parts := map[[2]string][]record.Item{}
	for _, it := range items {
		pk, sk := s(it["pk"]), s(it["sk"])
		if t, ok := plan.PartTarget(plan.Key{PK: pk, SK: sk}); ok {
			parts[[2]string{t.PK, t.SK}] = append(parts[[2]string{t.PK, t.SK}], it)
			continue
		}
		switch {
		case strings.HasPrefix(pk, rules.StatePrefix):
			state[[2]string{strings.TrimPrefix(pk, rules.StatePrefix), sk}] = it
		case strings.HasPrefix(pk, rules.LegacyParkPrefix):
			e.t.Errorf("park item %s %s", pk, sk)
		case !rules.IsReserved(pk) && rules.IsReserved(sk):
			e.t.Errorf("reserved item %s %s in an application's partition", pk, sk)
		}
	}
	// A split target's state is its state item's and its parts' added up.
	for k, ps := range parts {
		state[k] = counter.Combine(e.set.Table, append([]record.Item{state[k]}, ps...))
	}
	// The attributes of each target entity (by its sort key) and of no other item.
	attrsOf := func(pk, sk string) []string {
		switch {
		case sk == "METADATA" && strings.HasPrefix(pk, "POST#"):
			return []string{"commentCount", "likeTotal"}
		case sk == "PROFILE" && strings.HasPrefix(pk, "USER#"):
			return []string{"postCount"}
		}
		return nil
	}
	bad := 0
	report := func(format string, args ...any) {
		if bad < 10 {
			e.t.Errorf(format, args...)
		}
		bad++
	}
	for _, it := range items {
		pk, sk := s(it["pk"]), s(it["sk"])
		attrs := attrsOf(pk, sk)
		if attrs == nil {
			continue
		}
		for name := range it {
			if strings.HasPrefix(name, rules.ReservedPrefix) && name != rules.CopyVersionAttr {
				report("target %s %s carries %s: counts and sums keep nothing on it but %s", pk, sk, name, rules.CopyVersionAttr)
			}
		}
		st := state[[2]string{pk, sk}]
		for _, a := range attrs {
			if truth[a][pk] != 0 && st == nil {
				report("target %s %s: no state item at %s%s %s, want %s %d", pk, sk, rules.StatePrefix, pk, sk, a, truth[a][pk])
			}
		}
		if cv := it[rules.CopyVersionAttr]; cv != nil && n(cv) > n(st[rules.StateVersionAttr]) {
			report("target %s %s: copy version %d above its state's %d", pk, sk, n(cv), n(st[rules.StateVersionAttr]))
		}
	}
	for k, st := range state {
		attrs := attrsOf(k[0], k[1])
		if attrs == nil {
			report("state item %s%s %s of no count or sum target", rules.StatePrefix, k[0], k[1])
			continue
		}
		for _, a := range attrs {
			if got := n(st[a]); got != truth[a][k[0]] {
				report("state %s%s %s: %s = %d, want %d", rules.StatePrefix, k[0], k[1], a, got, truth[a][k[0]])
			}
		}
		if st[rules.StateVersionAttr] == nil {
			report("state %s%s %s has no version: %v", rules.StatePrefix, k[0], k[1], st)
		}
	}
	if bad > 0 {
		e.t.Fatalf("%d state items or targets are not as the design has them", bad)
	}
}

func (e *env) scan() []map[string]types.AttributeValue {
	var out []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(e.db, &dynamodb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, page.Items...)
	}
	return out
}

func s(v types.AttributeValue) string {
	if x, ok := v.(*types.AttributeValueMemberS); ok {
		return x.Value
	}
	return ""
}

func n(v types.AttributeValue) int {
	if x, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.Atoi(x.Value)
		return i
	}
	return 0
}

// TestProbeAnsweredOnceTheRecordsBeforeItAreApplied: a backfill's probe (rules.ProbePrefix)
// is answered with the names of the rules, and only when every record before it in its
// batch was applied: a failed earlier record makes the batch come again, probe included.
func TestProbeAnsweredOnceTheRecordsBeforeItAreApplied(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#c1", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c1", "status": "visible"})
	probe := map[string]string{"pk": rules.ProbePrefix + "1", "sk": rules.ProbePrefix}
	e.put(probe)
	batch := e.records()
	if len(batch) != 2 {
		t.Fatalf("%d records, want the comment's and the probe's", len(batch))
	}
	answer := func() types.AttributeValue {
		t.Helper()
		out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: probe["pk"]}, "sk": &types.AttributeValueMemberS{Value: probe["sk"]}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item[rules.ProbeAnswerAttr]
	}
	e.failingOn(rules.StatePrefix+"POST#p1", batch, 0)
	if a := answer(); a != nil {
		t.Fatalf("the probe was answered (%v) though the comment before it failed", a)
	}
	if i := e.invoke(batch); i != len(batch) {
		t.Fatalf("redelivery failed at record %d", i)
	}
	got, ok := answer().(*types.AttributeValueMemberL)
	if !ok {
		t.Fatalf("the probe was not answered: %v", answer())
	}
	var names []string
	for _, v := range got.Value {
		names = append(names, v.(*types.AttributeValueMemberS).Value)
	}
	if want := "comment-author post-comment-count post-like-total user-post-count"; strings.Join(names, " ") != want {
		t.Errorf("answer %q, want the rules %q", names, want)
	}
	// The answer's own record (with the state item's, which the event filter drops) asks
	// for nothing.
	if recs := e.records(); e.invoke(recs) != len(recs) {
		t.Fatal("the answer's record failed")
	}
}
