package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/exprval"
	"github.com/denorm/denorm/internal/value"
)

// Baseline is the stream handler a team writes by hand for the social example
// (rules/social.yaml) without Denorm, in the style of the seed's single-table guide: it walks
// the batch record by record; every record that changes counters gets one
// TransactWriteItems holding an idempotency marker for its event and the counter updates;
// every copy found by querying gets one UpdateItem; mirrors and pulls get one write each.
// Nothing is coalesced across records. It is correct under in-order delivery and
// re-delivery (the markers), which is what `denorm verify` checks after each run.
//
// Only the rules named in Rules run, so a workload compares like with like.
type Baseline struct {
	DB    API
	Table string
	Rules map[string]bool
	// Applied, when set, is called after each record is fully applied (lag measurement).
	Applied func(rec *events.DynamoDBEventRecord, at time.Time)
	// Floor, when set, receives every logical effect, to compute the floor.
	Floor *floorCounter
	// recentSim is every post's live comments as the records so far say (post-recent-
	// comments): the floor counts a post whose 3 newest changed by the records alone. The
	// handler's own list may be ahead of the records (a refill's query reads comments whose
	// records are still to come), which would make the floor depend on when it refills.
	simMu     sync.Mutex
	recentSim map[string]map[string]item
	Now       func() time.Time
}

// markerTTL outlives stream retention (24 h) plus retries, like Denorm's markers.
const markerTTL = 7 * 24 * time.Hour

// Handle is the Lambda handler (lambda.NewHandler(b.Handle)).
func (b *Baseline) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	for i := range ev.Records {
		rec := &ev.Records[i]
		if err := b.process(ctx, rec); err != nil {
			// Report the first record not applied: the stream resumes there.
			resp.BatchItemFailures = append(resp.BatchItemFailures,
				events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
			return resp, nil
		}
		if b.Applied != nil {
			b.Applied(rec, time.Now())
		}
	}
	return resp, nil
}

type item = map[string]types.AttributeValue

func (b *Baseline) process(ctx context.Context, rec *events.DynamoDBEventRecord) error {
	pk, sk := str(rec.Change.Keys["pk"]), str(rec.Change.Keys["sk"])
	old, nw := image(rec.Change.OldImage), image(rec.Change.NewImage)
	insert := rec.EventName == "INSERT"
	switch {
	case strings.HasPrefix(pk, "_dn"):
		return nil
	case strings.HasPrefix(pk, "USER#") && sk == "PROFILE":
		return b.user(ctx, pk, old, nw)
	case strings.HasPrefix(pk, "POST#") && sk == "METADATA":
		return b.post(ctx, rec, old, nw)
	case strings.HasPrefix(pk, "POST#") && strings.HasPrefix(sk, "COMMENT#"):
		return b.comment(ctx, rec, pk, sk, old, nw, insert)
	case strings.HasPrefix(pk, "GROUP#") && sk == "METADATA":
		return b.group(ctx, pk, old, nw)
	case strings.HasPrefix(pk, "USER#") && strings.HasPrefix(sk, "GROUP#"):
		return b.membership(ctx, pk, sk, old, nw, insert)
	case strings.HasPrefix(pk, "GROUP#") && strings.HasPrefix(sk, "USER#"):
		return b.member(ctx, rec, pk, sk, nw, insert)
	case strings.HasPrefix(pk, "FOLDER#") && strings.HasPrefix(sk, "FILE#"):
		return b.file(ctx, rec, pk, old, nw)
	}
	return nil
}

// user: a rename reaches every comment (gsi1, COMMENT#) and every member item (gsi1, MEMBER#).
func (b *Baseline) user(ctx context.Context, pk string, old, nw item) error {
	if nw == nil {
		return nil // onSourceDelete: keep
	}
	if b.Rules["comment-author"] && (old == nil || changed(old, nw, "name", "avatar")) {
		if err := b.copyToQueried(ctx, "gsi1", "gsi1pk", pk, "gsi1sk", "COMMENT#",
			map[string]types.AttributeValue{"userName": nw["name"], "userAvatar": nw["avatar"]}); err != nil {
			return err
		}
	}
	if b.Rules["member-name"] && (old == nil || changed(old, nw, "name")) {
		if err := b.copyToQueried(ctx, "gsi1", "gsi1pk", pk, "gsi1sk", "MEMBER#",
			map[string]types.AttributeValue{"userName": nw["name"]}); err != nil {
			return err
		}
	}
	return nil
}

// group: a rename reaches every membership (gsi2); a deleted group's name is removed.
func (b *Baseline) group(ctx context.Context, pk string, old, nw item) error {
	if !b.Rules["membership-group-name"] {
		return nil
	}
	switch {
	case nw == nil:
		return b.copyToQueried(ctx, "gsi2", "gsi2pk", pk, "gsi2sk", "USER#", map[string]types.AttributeValue{"groupName": nil})
	case old == nil || changed(old, nw, "name"):
		return b.copyToQueried(ctx, "gsi2", "gsi2pk", pk, "gsi2sk", "USER#", map[string]types.AttributeValue{"groupName": nw["name"]})
	}
	return nil
}

// post: mirrored onto its author's page; counted into its author while published, and into
// the global statistics item.
func (b *Baseline) post(ctx context.Context, rec *events.DynamoDBEventRecord, old, nw item) error {
	postID := strings.TrimPrefix(str(first(nw, old)["pk"]), "POST#")
	if b.Rules["user-posts"] {
		oldKey, newKey := "", ""
		if old != nil {
			oldKey = "USER#" + str(old["userId"])
		}
		if nw != nil {
			newKey = "USER#" + str(nw["userId"])
		}
		if oldKey != "" && oldKey != newKey {
			if err := b.deleteItem(ctx, oldKey, "POST#"+postID); err != nil {
				return err
			}
		}
		if newKey != "" && (oldKey != newKey || changed(old, nw, "title", "status", "createdAt")) {
			if err := b.upsert(ctx, newKey, "POST#"+postID, pick(nw, "title", "status", "createdAt")); err != nil {
				return err
			}
		}
	}
	var ds []delta
	if b.Rules["user-post-count"] {
		if old != nil && str(old["status"]) == "published" {
			ds = append(ds, delta{"USER#" + str(old["userId"]), "PROFILE", "postCount", -1, 0})
		}
		if nw != nil && str(nw["status"]) == "published" {
			ds = append(ds, delta{"USER#" + str(nw["userId"]), "PROFILE", "postCount", 1, 0})
		}
	}
	if b.Rules["global-post-count"] {
		// Every post, drafts included, into the one item the application put.
		if old != nil {
			ds = append(ds, delta{"STATS#global", "STATS", "postCount", -1, 0})
		}
		if nw != nil {
			ds = append(ds, delta{"STATS#global", "STATS", "postCount", 1, 0})
		}
	}
	return b.count(ctx, rec, ds)
}

// comment: counted into its post and its author; filled with its author's name on insert, and
// again when the application replaced it (PutItem) without the copy.
func (b *Baseline) comment(ctx context.Context, rec *events.DynamoDBEventRecord, pk, sk string, old, nw item, insert bool) error {
	var ds []delta
	if b.Rules["post-comment-count"] {
		switch {
		case old == nil && nw != nil:
			ds = append(ds, delta{pk, "METADATA", "commentCount", 1, 0})
		case old != nil && nw == nil:
			ds = append(ds, delta{pk, "METADATA", "commentCount", -1, 0})
		}
	}
	if b.Rules["user-comment-count"] {
		if u := str(get(old, "gsi1pk")); u != "" {
			ds = append(ds, delta{u, "PROFILE", "commentCount", -1, 0})
		}
		if u := str(get(nw, "gsi1pk")); u != "" {
			ds = append(ds, delta{u, "PROFILE", "commentCount", 1, 0})
		}
	}
	if b.Rules["post-daily-comments"] {
		// The post's day item: ADD to it, created by the first comment of the day, with
		// its ttl set once. The day is the UTC day of the createdAt in the sk.
		if day, ok := commentDay(sk); ok {
			ttl := day.Add(24*time.Hour + dayTTL).Unix()
			switch {
			case old == nil && nw != nil:
				ds = append(ds, delta{pk, "DAY#" + day.Format("2006-01-02"), "commentCount", 1, ttl})
			case old != nil && nw == nil:
				ds = append(ds, delta{pk, "DAY#" + day.Format("2006-01-02"), "commentCount", -1, ttl})
			}
		}
	}
	if err := b.count(ctx, rec, ds); err != nil {
		return err
	}
	if b.Rules["post-recent-comments"] {
		if err := b.recent(ctx, pk, sk, nw); err != nil {
			return err
		}
	}
	if (insert || dropped(old, nw, "userName", "userAvatar")) && b.Rules["comment-author"] {
		return b.pull(ctx, pk, sk, nw, str(nw["gsi1pk"]), "PROFILE", map[string]string{"userName": "name", "userAvatar": "avatar"})
	}
	return nil
}

// membership: mirrored into the group's member list; filled with the group's name on insert,
// and again when the application replaced it (PutItem) without the copy.
func (b *Baseline) membership(ctx context.Context, pk, sk string, old, nw item, insert bool) error {
	group, user := sk, "USER#"+strings.TrimPrefix(pk, "USER#")
	if b.Rules["group-members"] {
		switch {
		case nw == nil:
			if err := b.deleteItem(ctx, group, user); err != nil {
				return err
			}
		case old == nil || changed(old, nw, "role", "joinedAt"):
			set := pick(nw, "role", "joinedAt")
			set["gsi1pk"] = &types.AttributeValueMemberS{Value: pk}
			set["gsi1sk"] = &types.AttributeValueMemberS{Value: "MEMBER#" + strings.TrimPrefix(group, "GROUP#")}
			if err := b.upsert(ctx, group, user, set); err != nil {
				return err
			}
		}
	}
	if (insert || dropped(old, nw, "groupName")) && b.Rules["membership-group-name"] {
		return b.pull(ctx, pk, sk, nw, group, "METADATA", map[string]string{"groupName": "name"})
	}
	return nil
}

// member: counted into its group; filled with the user's name on insert.
func (b *Baseline) member(ctx context.Context, rec *events.DynamoDBEventRecord, pk, sk string, nw item, insert bool) error {
	if b.Rules["group-member-count"] {
		var ds []delta
		switch rec.EventName {
		case "INSERT":
			ds = append(ds, delta{pk, "METADATA", "memberCount", 1, 0})
		case "REMOVE":
			ds = append(ds, delta{pk, "METADATA", "memberCount", -1, 0})
		}
		if err := b.count(ctx, rec, ds); err != nil {
			return err
		}
	}
	if insert && b.Rules["member-name"] {
		return b.pull(ctx, pk, sk, nw, sk, "PROFILE", map[string]string{"userName": "name"})
	}
	return nil
}

// file: counted and summed into its folder, and counted while it is large (size gte 524288)
// or pinned (pinned true): folder-large-file-count's any.
func (b *Baseline) file(ctx context.Context, rec *events.DynamoDBEventRecord, pk string, old, nw item) error {
	var ds []delta
	if b.Rules["folder-file-count"] {
		switch {
		case old == nil && nw != nil:
			ds = append(ds, delta{pk, "METADATA", "fileCount", 1, 0})
		case old != nil && nw == nil:
			ds = append(ds, delta{pk, "METADATA", "fileCount", -1, 0})
		}
	}
	if b.Rules["folder-size"] {
		if d := number(get(nw, "size")) - number(get(old, "size")); d != 0 {
			ds = append(ds, delta{pk, "METADATA", "totalBytes", d, 0})
		}
	}
	if b.Rules["folder-large-file-count"] {
		large := func(it item) int64 {
			pinned, _ := get(it, "pinned").(*types.AttributeValueMemberBOOL)
			if number(get(it, "size")) >= largeFileBound || pinned != nil && pinned.Value {
				return 1
			}
			return 0
		}
		if d := large(nw) - large(old); d != 0 {
			ds = append(ds, delta{pk, "METADATA", "largeFileCount", d, 0})
		}
	}
	return b.count(ctx, rec, ds)
}

// delta adds N to Attr of the item PK/SK; a TTL (epoch seconds) other than 0 is set on the
// item unless it has one.
type delta struct {
	PK, SK, Attr string
	N            int64
	TTL          int64
}

// dayTTL is the ttl of post-daily-comments in rules/social.yaml: a day item expires this
// long after its day ends.
const dayTTL = 3650 * 24 * time.Hour

// commentDay returns the start of the UTC day of the createdAt in a comment's sk
// (COMMENT#{createdAt}#{commentId}).
func commentDay(sk string) (time.Time, bool) {
	at, _, ok := strings.Cut(strings.TrimPrefix(sk, "COMMENT#"), "#")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC().Truncate(24 * time.Hour), true
}

// count applies a record's counter updates together with the record's marker in one
// TransactWriteItems; a marker that exists means the event was applied before.
func (b *Baseline) count(ctx context.Context, rec *events.DynamoDBEventRecord, ds []delta) error {
	// One Update per item: a transaction may not touch an item twice.
	type target struct{ pk, sk string }
	var order []target
	adds := map[target]map[string]int64{}
	ttls := map[target]int64{}
	for _, d := range ds {
		t := target{d.PK, d.SK}
		if adds[t] == nil {
			adds[t] = map[string]int64{}
			order = append(order, t)
		}
		adds[t][d.Attr] += d.N
		if d.TTL != 0 {
			ttls[t] = d.TTL
		}
	}
	items := []types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String(b.Table),
		Item: item{
			"pk":  &types.AttributeValueMemberS{Value: "_dn#marker#" + rec.EventID},
			"sk":  &types.AttributeValueMemberS{Value: "MARKER"},
			"ttl": &types.AttributeValueMemberN{Value: strconv.FormatInt(b.now().Add(markerTTL).Unix(), 10)},
		},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}}
	for _, t := range order {
		var ub expression.UpdateBuilder
		n := 0
		for attr, v := range adds[t] {
			if v == 0 {
				continue
			}
			ub = ub.Add(expression.Name(attr), expression.Value(v))
			n++
			b.Floor.delta(ctx, t.pk, t.sk, attr, v)
		}
		if n == 0 {
			continue
		}
		if ttl := ttls[t]; ttl != 0 {
			ub = ub.Set(expression.Name("ttl"), expression.IfNotExists(expression.Name("ttl"), expression.Value(ttl)))
		}
		e, err := expression.NewBuilder().WithUpdate(ub).Build()
		if err != nil {
			return err
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(b.Table), Key: key(t.pk, t.sk), UpdateExpression: e.Update(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}})
	}
	if len(items) == 1 {
		return nil
	}
	_, err := b.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: items, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	var tc *types.TransactionCanceledException
	if errors.As(err, &tc) && len(tc.CancellationReasons) > 0 && aws.ToString(tc.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
		return nil // a duplicate delivery: this event was counted before
	}
	if err != nil {
		return fmt.Errorf("counting event %s: %w", rec.EventID, err)
	}
	return nil
}

// copyToQueried sets attrs (nil values are removed) on every item of the index partition
// whose sort key starts with prefix: one UpdateItem per copy.
func (b *Baseline) copyToQueried(ctx context.Context, index, pkAttr, pkValue, skAttr, prefix string, attrs map[string]types.AttributeValue) error {
	kc := expression.Key(pkAttr).Equal(exprval.Str(pkValue)).And(expression.Key(skAttr).BeginsWith(prefix))
	e, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return err
	}
	pages := dynamodb.NewQueryPaginator(b.DB, &dynamodb.QueryInput{
		TableName: aws.String(b.Table), IndexName: aws.String(index), KeyConditionExpression: e.KeyCondition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("querying %s for %s: %w", index, pkValue, err)
		}
		for _, it := range page.Items {
			pk, sk := str(it["pk"]), str(it["sk"])
			diff := false
			for a, v := range attrs {
				diff = diff || !sameValue(it[a], v)
			}
			applied, err := b.update(ctx, pk, sk, attrs)
			if err != nil {
				return err
			}
			if applied && diff {
				b.Floor.changed(ctx, pk, sk)
			}
		}
	}
	return nil
}

// pull fills a new copy from its source, writing only what differs.
func (b *Baseline) pull(ctx context.Context, pk, sk string, target item, srcPK, srcSK string, set map[string]string) error {
	out, err := b.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(b.Table), Key: key(srcPK, srcSK), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", srcPK, err)
	}
	if out.Item == nil {
		return nil
	}
	attrs := map[string]types.AttributeValue{}
	for to, from := range set {
		if v := out.Item[from]; !sameValue(target[to], v) {
			attrs[to] = v
		}
	}
	if len(attrs) == 0 {
		return nil
	}
	applied, err := b.update(ctx, pk, sk, attrs)
	if applied {
		b.Floor.changed(ctx, pk, sk)
	}
	return err
}

// update sets attrs (nil values are removed) on an existing item; a deleted item is left
// alone (applied is false).
func (b *Baseline) update(ctx context.Context, pk, sk string, attrs map[string]types.AttributeValue) (applied bool, err error) {
	var ub expression.UpdateBuilder
	for a, v := range attrs {
		if v == nil {
			ub = ub.Remove(expression.Name(a))
		} else {
			ub = ub.Set(expression.Name(a), exprval.Of(v))
		}
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(expression.AttributeExists(expression.Name("pk"))).Build()
	if err != nil {
		return false, err
	}
	_, err = b.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.Table), Key: key(pk, sk), UpdateExpression: e.Update(),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("updating %s %s: %w", pk, sk, err)
	}
	return true, nil
}

// upsert creates or updates a mirror item, keeping attributes other handlers wrote there.
func (b *Baseline) upsert(ctx context.Context, pk, sk string, attrs map[string]types.AttributeValue) error {
	var ub expression.UpdateBuilder
	for a, v := range attrs {
		ub = ub.Set(expression.Name(a), exprval.Of(v))
	}
	e, err := expression.NewBuilder().WithUpdate(ub).Build()
	if err != nil {
		return err
	}
	b.Floor.changed(ctx, pk, sk)
	_, err = b.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.Table), Key: key(pk, sk), UpdateExpression: e.Update(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return fmt.Errorf("writing mirror %s %s: %w", pk, sk, err)
	}
	return nil
}

func (b *Baseline) deleteItem(ctx context.Context, pk, sk string) error {
	out, err := b.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(b.Table), Key: key(pk, sk), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		ReturnValues: types.ReturnValueAllOld, // for the floor only: was there anything to delete?
	})
	if err != nil {
		return fmt.Errorf("deleting mirror %s %s: %w", pk, sk, err)
	}
	if len(out.Attributes) > 0 {
		b.Floor.changed(ctx, pk, sk)
	}
	return nil
}

func (b *Baseline) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func key(pk, sk string) item {
	return item{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

// image converts a stream image to SDK attribute values (nil for none).
func image(m map[string]events.DynamoDBAttributeValue) item {
	if m == nil {
		return nil
	}
	out := make(item, len(m))
	for k, v := range m {
		out[k] = toAV(v)
	}
	return out
}

func toAV(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeList:
		var l []types.AttributeValue
		for _, e := range v.List() {
			l = append(l, toAV(e))
		}
		return &types.AttributeValueMemberL{Value: l}
	case events.DataTypeMap:
		return &types.AttributeValueMemberM{Value: image(v.Map())}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}

func str(v any) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case events.DynamoDBAttributeValue:
		if x.DataType() == events.DataTypeString {
			return x.String()
		}
	}
	return ""
}

func number(v types.AttributeValue) int64 {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(n.Value, 10, 64)
		return i
	}
	return 0
}

func get(it item, attr string) types.AttributeValue {
	if it == nil {
		return nil
	}
	return it[attr]
}

func first(a, b item) item {
	if a != nil {
		return a
	}
	return b
}

func pick(it item, attrs ...string) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for _, a := range attrs {
		if v, ok := it[a]; ok {
			out[a] = v
		}
	}
	return out
}

func changed(old, nw item, attrs ...string) bool {
	for _, a := range attrs {
		if !sameValue(get(old, a), get(nw, a)) {
			return true
		}
	}
	return false
}

// dropped: the record removed one of attrs from the item (an application PutItem that
// replaced the item without its copied attributes).
func dropped(old, nw item, attrs ...string) bool {
	if old == nil || nw == nil {
		return false // an insert or a delete, not a replacement
	}
	for _, a := range attrs {
		if get(old, a) != nil && get(nw, a) == nil {
			return true
		}
	}
	return false
}

// sameValue compares attribute values as DynamoDB holds them (numbers by value, lists and
// maps element by element).
func sameValue(a, b types.AttributeValue) bool { return value.Equal(a, b) }

// recent keeps the post's 3 newest comments in recentComments, as a team writes it: read the
// post, put the comment in (or take it out), write the list back. A listed comment deleted
// from a full list is replaced by querying the post's comments. One read and at most one
// write per record; nothing is coalesced.
func (b *Baseline) recent(ctx context.Context, pk, sk string, nw item) error {
	b.simRecent(ctx, pk, sk, nw)
	out, err := b.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.Table), Key: key(pk, "METADATA"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("reading %s: %w", pk, err)
	}
	if out.Item == nil {
		return nil
	}
	var list []item
	if l, ok := out.Item["recentComments"].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			if m, ok := e.(*types.AttributeValueMemberM); ok {
				list = append(list, m.Value)
			}
		}
	}
	full := len(list) >= 3
	next := make([]item, 0, len(list)+1)
	listed := false
	for _, e := range list {
		if str(e["sk"]) == sk {
			listed = true
			continue
		}
		next = append(next, e)
	}
	switch {
	case nw != nil && nw["createdAt"] != nil:
		next = append(next, recentEntry(nw))
	case listed && full: // a listed comment left a full list: the next newest must come in
		next = nil
		in := &dynamodb.QueryInput{TableName: aws.String(b.Table), KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :c)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}, ":c": &types.AttributeValueMemberS{Value: "COMMENT#"}},
			ConsistentRead:            aws.Bool(true)}
		for {
			q, err := b.DB.Query(ctx, in)
			if err != nil {
				return fmt.Errorf("querying the comments of %s: %w", pk, err)
			}
			for _, it := range q.Items {
				if it["createdAt"] != nil {
					next = append(next, recentEntry(it))
				}
			}
			if len(q.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = q.LastEvaluatedKey
		}
	}
	sortRecent(next)
	if len(next) > 3 {
		next = next[:3]
	}
	l := &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	for _, e := range next {
		l.Value = append(l.Value, &types.AttributeValueMemberM{Value: e})
	}
	if sameValue(out.Item["recentComments"], l) || (out.Item["recentComments"] == nil && len(next) == 0) {
		return nil
	}
	_, err = b.update(ctx, pk, "METADATA", map[string]types.AttributeValue{"recentComments": l})
	return err
}

// simRecent applies the record to recentSim and tells the floor when the post's 3 newest
// changed.
func (b *Baseline) simRecent(ctx context.Context, pk, sk string, nw item) {
	b.simMu.Lock()
	defer b.simMu.Unlock()
	if b.recentSim == nil {
		b.recentSim = map[string]map[string]item{}
	}
	cs := b.recentSim[pk]
	if cs == nil {
		cs = map[string]item{}
		b.recentSim[pk] = cs
	}
	top := func() string {
		es := make([]item, 0, len(cs))
		for _, e := range cs {
			es = append(es, e)
		}
		sortRecent(es)
		if len(es) > 3 {
			es = es[:3]
		}
		var out strings.Builder
		for _, e := range es {
			fmt.Fprintf(&out, "%s|%s|%s|%s\n", str(e["sk"]), str(e["createdAt"]), str(e["author"]), str(e["text"]))
		}
		return out.String()
	}
	before := top()
	if nw != nil && nw["createdAt"] != nil {
		cs[sk] = recentEntry(nw)
	} else {
		delete(cs, sk)
	}
	if top() != before {
		b.Floor.changed(ctx, pk, "METADATA")
	}
}

// recentEntry is a comment's entry in its post's list.
func recentEntry(c item) item {
	e := item{"pk": c["pk"], "sk": c["sk"], "createdAt": c["createdAt"]}
	if c["userName"] != nil {
		e["author"] = c["userName"]
	}
	if c["text"] != nil {
		e["text"] = c["text"]
	}
	return e
}

// sortRecent orders entries newest first, equal times by the greater key.
func sortRecent(es []item) {
	sort.Slice(es, func(i, j int) bool {
		a, b := str(es[i]["createdAt"]), str(es[j]["createdAt"])
		if a != b {
			return a > b
		}
		return str(es[i]["pk"])+"\x00"+str(es[i]["sk"]) > str(es[j]["pk"])+"\x00"+str(es[j]["sk"])
	})
}
