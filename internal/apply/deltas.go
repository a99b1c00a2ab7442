package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// WatermarkAttr is rules.WatermarkAttr: on a counter target that shares its sources'
// partition, the sequence number of the last record whose deltas it received.
const WatermarkAttr = rules.WatermarkAttr

// MarkerPrefix starts the partition key of idempotency markers.
const MarkerPrefix = rules.ReservedPrefix + "#m#"

// watermarked applies one target's deltas with one conditional UpdateItem: the deltas of
// every record after the target's watermark, and the watermark advanced to the last of
// them, even when they sum to zero. A replayed record is at or below the watermark and is
// left out. A missing target gets its create-rule deltas (which create it, the rest with
// them) or, when none would create it, has the deltas parked until it appears.
//
// A group that restores a target the application wrote (a replacement, or a delete) puts
// the restore's condition on the update and takes out of its deltas what Denorm's writes
// since applied again (restore.go).
func (r *run) watermarked(t *plan.TargetDeltas) (int, error) {
	if t.Await >= 0 && firstRec(t, "") == t.Await {
		// A delete of the target ends the batch: an INSERT of it (the application putting
		// it back) makes it a replacement, which needs both records in one batch.
		r.count(func(s *Stats) { s.RestoresDeferred++ })
		return t.Await, errRestoreDeferred
	}
	rs := r.newRestore(t)
	wm := ""
	create := false // the target is missing and a delta creates it
	for attempt := 0; attempt < 5; attempt++ {
		raw, minSeq, maxSeq, _ := t.Sum(wm)
		rec := firstRec(t, wm)
		if maxSeq == "" || len(raw) == 0 {
			return -1, nil // every record is at or below the watermark
		}
		rs.appliedBelow(minSeq)
		attrs := rs.takeOut(mergeAttrs(raw))
		zero := allZero(attrs)
		// A create rule's target is written as it may be missing: a time bucket is missing
		// before its first source, and asking first cost a refused write (1 WCU) per new
		// bucket. A restore expects the target the application left, so it asks first.
		if !create && rs.rep == nil && anyCreate(raw) {
			create = true
		}
		// Until it is found missing, the target must exist; a zero net never creates it.
		err := r.updateCounters(t, attrs, minSeq, maxSeq, !create || zero, rs)
		cf, ok := isCondFailed(err)
		if !ok {
			return rec, err
		}
		if len(cf.Item) == 0 {
			// The target is missing: a zero net has nothing to keep.
			r.count(func(s *Stats) { s.MissingTarget++ })
			if zero {
				return -1, nil
			}
			if !create && anyCreate(raw) {
				create = true
				continue
			}
			return rec, r.parkWatermarked(t, wm)
		}
		cur, _ := cf.Item[WatermarkAttr].(*types.AttributeValueMemberN)
		if cur != nil && record.CompareSeq(cur.Value, minSeq) >= 0 {
			r.count(func(s *Stats) { s.Duplicates++ })
			wm = cur.Value
			continue
		}
		switch {
		case rs.removalPending():
			if err := r.settleRemoval(rs, cf.Item, attempt, rec); err != nil {
				return rec, err
			}
		case rs.rep != nil && rs.expect != nil:
			// A deferred restore fails at the replacement, which is rec: it is deferred only
			// when it is the group's first record still to apply.
			if err := r.settleReplacement(rs, cf.Item, rec); err != nil {
				return rec, err
			}
		default:
			return rec, fmt.Errorf("counter update on %s %s failed its condition with watermark %v below %s", t.Target.PK, t.Target.SK, cur, minSeq)
		}
	}
	return firstRec(t, wm), fmt.Errorf("counter update on %s %s: watermark kept moving", t.Target.PK, t.Target.SK)
}

// updateCounters ADDs attrs to t's target and advances its watermark to maxSeq, on
// condition that the watermark is absent or below minSeq (with the restore's expect, that it
// is exactly that, "" for absent; with fresh, that Denorm never wrote it; without
// needExists, a missing item is created). It records the first sequence number applied
// since the item was written by the application, which a later restore or fold needs, the
// delete whose image it restores, if any, which a later fold needs, and adds one to the
// write count, which tells this write from the application's in the stream.
func (r *run) updateCounters(t *plan.TargetDeltas, attrs []plan.AttrAmount, minSeq, maxSeq string, needExists bool, rs *restore) error {
	x := r.x
	key, what := x.key(t.Target), "updating counters on "+t.Target.PK+" "+t.Target.SK
	expect, fresh := rs.expect, rs.fresh
	var ub expression.UpdateBuilder
	if del, covers := t.Restored(minSeq, maxSeq); del != "" {
		ub = ub.Set(expression.Name(rules.RestoredAttr), num(record.NormSeq(del)))
		ub = ub.Set(expression.Name(rules.RestoredCoversAttr), num(record.NormSeq(covers)))
	}
	for _, a := range attrs {
		if !a.Amount.IsZero() {
			ub = ub.Add(expression.Name(a.Attribute), num(a.Amount.String()))
		}
	}
	ub = withBucketTTL(ub, x.set.Table, key, attrs)
	ub = ub.Set(expression.Name(WatermarkAttr), num(record.NormSeq(maxSeq)))
	ub = ub.Set(expression.Name(rules.FirstAttr), expression.IfNotExists(expression.Name(rules.FirstAttr), num(record.NormSeq(minSeq))))
	ub = ub.Set(expression.Name(rules.LastFirstAttr), num(record.NormSeq(minSeq)))
	ub = ub.Add(expression.Name(rules.WritesAttr), num("1"))
	// A target without a watermark (one the application wrote, or one that predates Denorm)
	// takes the write and is stamped by it.
	cond := expression.AttributeNotExists(expression.Name(WatermarkAttr)).
		Or(expression.Name(WatermarkAttr).LessThan(num(record.NormSeq(minSeq))))
	switch {
	case expect != nil && *expect == "":
		cond = expression.AttributeNotExists(expression.Name(WatermarkAttr))
	case expect != nil:
		cond = cond.And(expression.Name(WatermarkAttr).Equal(num(*expect)))
	}
	if needExists {
		cond = cond.And(exists(x.set.Table.PartitionKey))
	}
	if fresh {
		cond = cond.And(expression.AttributeNotExists(expression.Name(rules.WritesAttr)))
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building counter update: %w", err)
	}
	return r.do(what, func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(x.table), Key: key,
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardWatermark, out, err)
		return err
	})
}

// parkWatermarked keeps a missing target's deltas in its park item, one attribute per
// record (`_dn_pe_<seq>`, a map of attribute to amount): writing a record's entry again is
// a no-op, so redelivery needs no guard, and the fold can leave out the records the target
// itself received (a batch delivered again once the target existed).
func (r *run) parkWatermarked(t *plan.TargetDeltas, wm string) error {
	x := r.x
	bySeq := map[string]map[string]plan.Number{}
	covers := map[string]string{}
	var order []string
	for _, e := range t.Entries {
		if wm != "" && record.CompareSeq(e.Seq, wm) <= 0 {
			continue
		}
		m := bySeq[e.Seq]
		if m == nil {
			m = map[string]plan.Number{}
			bySeq[e.Seq] = m
			order = append(order, e.Seq)
		}
		m[e.Rule.Agg.Attribute] = m[e.Rule.Agg.Attribute].Add(e.Amount)
		covers[e.Seq] = plan.MaxSeq(covers[e.Seq], e.Covers)
	}
	var ub expression.UpdateBuilder
	n := 0
	for _, seq := range order {
		entry := map[string]types.AttributeValue{}
		for a, amt := range bySeq[seq] {
			if !amt.IsZero() {
				entry[a] = &types.AttributeValueMemberN{Value: amt.String()}
			}
		}
		if c := covers[seq]; c != "" {
			// A restore's entry: the fold leaves out the records its image holds.
			entry[WatermarkAttr] = &types.AttributeValueMemberN{Value: record.NormSeq(c)}
		}
		if len(entry) == 0 {
			continue
		}
		ub = ub.Set(expression.Name(rules.ParkEntryPrefix+record.NormSeq(seq)), val(&types.AttributeValueMemberM{Value: entry}))
		n++
	}
	if n == 0 {
		return nil
	}
	ub = ub.Add(expression.Name(rules.WritesAttr), num("1"))
	e, err := expression.NewBuilder().WithUpdate(ub).Build()
	if err != nil {
		return fmt.Errorf("building park: %w", err)
	}
	err = r.do("parking counters of "+t.Target.PK+" "+t.Target.SK, func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(x.table), Key: x.key(parkKey(t.Target)),
			UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardNone, out, err)
		return err
	})
	if err == nil {
		r.count(func(s *Stats) { s.Parked++ })
	}
	return err
}

// parkKey is where a missing target's deltas wait for it.
func parkKey(k plan.Key) plan.Key { return plan.Key{PK: rules.ParkPrefix + k.PK, SK: k.SK} }

// mergeAttrs merges amounts to the same attribute (deltas that may create a target and
// deltas that may not are kept apart until the target is found).
func mergeAttrs(attrs []plan.AttrAmount) []plan.AttrAmount {
	var out []plan.AttrAmount
	for _, a := range attrs {
		out = mergeAmount(out, a)
	}
	return out
}

func anyCreate(attrs []plan.AttrAmount) bool {
	for _, a := range attrs {
		if a.Create && !a.Amount.IsZero() {
			return true
		}
	}
	return false
}

func firstRec(t *plan.TargetDeltas, wm string) int {
	for _, e := range t.Entries {
		if wm == "" || record.CompareSeq(e.Seq, wm) > 0 {
			return e.Rec
		}
	}
	return -1
}

func allZero(attrs []plan.AttrAmount) bool {
	for _, a := range attrs {
		if !a.Amount.IsZero() {
			return false
		}
	}
	return true
}

// marked applies deltas that need a per-event marker: each event's marker and deltas go in
// one transaction, events packed into transactions of at most 100 distinct items with their
// deltas to a shared target merged. A duplicate event (its marker exists) is dropped from
// the transaction and the rest retried. It returns the earliest event left unapplied.
func (r *run) marked(events []plan.EventDeltas) (int, error) {
	for len(events) > 0 {
		n := packCount(events, maxTransactItems)
		err := r.transact(events[:n])
		for errors.Is(err, errTooManyItems) && n > 1 {
			// Parking a missing target's deltas adds a check item: halve the group.
			n /= 2
			err = r.transact(events[:n])
		}
		if err != nil {
			return events[0].Rec, err
		}
		events = events[n:]
	}
	return -1, nil
}

// errTooManyItems: a transaction would exceed DynamoDB's 100 items; nothing was written.
var errTooManyItems = errors.New("more than 100 items in one transaction")

const maxTransactItems = 100

// packCount returns how many leading events fit one transaction.
func packCount(events []plan.EventDeltas, max int) int {
	targets := map[plan.Key]bool{}
	items := 0
	for i, ev := range events {
		add := 1
		for _, t := range ev.Targets {
			if !targets[t.Target] {
				add++
			}
		}
		if i > 0 && items+add > max {
			return i
		}
		items += add
		for _, t := range ev.Targets {
			targets[t.Target] = true
		}
	}
	return len(events)
}

// transact applies events in one TransactWriteItems, dropping duplicates and parking the
// deltas of missing targets as the cancellation reasons reveal them.
func (r *run) transact(events []plan.EventDeltas) error {
	x := r.x
	events = append([]plan.EventDeltas(nil), events...)
	missing := map[plan.Key]bool{} // targets found missing: their deltas are parked
	ttl := strconv.FormatInt(x.opt.Now().Add(x.opt.MarkerTTL).Unix(), 10)
	// Each failed attempt removes an event or flips a target between present and missing;
	// a target created and deleted again meanwhile can flip it back, which this bounds.
	maxAttempts := 2*len(events) + 8
	for attempt := 0; attempt < maxAttempts; attempt++ {
		items, owners, err := r.buildTransaction(events, missing, ttl)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		if len(items) > maxTransactItems {
			return errTooManyItems
		}
		var cancel *types.TransactionCanceledException
		err = r.transactWrite("applying counter transaction", GuardMarker, items)
		if err == nil {
			parked := 0
			for _, o := range owners {
				if o.park {
					parked++
				}
			}
			r.count(func(s *Stats) { s.Parked += parked })
			return nil
		}
		if !errors.As(err, &cancel) || retryable(err) {
			return err
		}
		progressed := false
		dup := map[int]bool{}
		for i, reason := range cancel.CancellationReasons {
			if code(reason.Code) != "ConditionalCheckFailed" || i >= len(owners) {
				continue
			}
			o := owners[i]
			switch {
			case o.marker >= 0:
				dup[o.marker] = true // this event was applied before
			case o.check:
				missing[o.target] = false // the target appeared meanwhile
				progressed = true
			case !missing[o.target]:
				missing[o.target] = true
				r.count(func(s *Stats) { s.MissingTarget++ })
				progressed = true
			}
		}
		if len(dup) > 0 {
			kept := events[:0]
			for i, ev := range events {
				if !dup[i] {
					kept = append(kept, ev)
				}
			}
			events = kept
			r.count(func(s *Stats) { s.Duplicates += len(dup) })
			progressed = true
		}
		if !progressed {
			return fmt.Errorf("counter transaction canceled: %w", err)
		}
	}
	return fmt.Errorf("counter transaction: too many attempts")
}

// owner tells what a transaction item is: an event's marker, a target's update, a park of
// a missing target's deltas, or the check that the target is still missing.
type owner struct {
	marker int // index into events, or -1
	target plan.Key
	park   bool
	check  bool
}

func (r *run) buildTransaction(events []plan.EventDeltas, missing map[plan.Key]bool, ttl string) ([]types.TransactWriteItem, []owner, error) {
	x := r.x
	spec := x.set.Table
	var items []types.TransactWriteItem
	var owners []owner
	merged := map[plan.Key][]plan.AttrAmount{}
	var order []plan.Key
	for i, ev := range events {
		marker := x.key(plan.Key{PK: MarkerPrefix + ev.EventID, SK: MarkerPrefix})
		if spec.TTLAttribute != "" {
			marker[spec.TTLAttribute] = &types.AttributeValueMemberN{Value: ttl}
		}
		marker["seq"] = &types.AttributeValueMemberN{Value: record.NormSeq(ev.Seq)}
		e, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(spec.PartitionKey))).Build()
		if err != nil {
			return nil, nil, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(x.table), Item: marker,
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(),
		}})
		owners = append(owners, owner{marker: i})
		for _, t := range ev.Targets {
			if _, ok := merged[t.Target]; !ok {
				order = append(order, t.Target)
			}
			for _, at := range t.Attrs {
				merged[t.Target] = mergeAmount(merged[t.Target], at)
			}
		}
	}
	for _, k := range order {
		attrs := merged[k]
		if allZero(attrs) {
			continue
		}
		// A missing target is created by a create rule's delta, the others' with it;
		// without one, the deltas wait in the park item, on condition that the target is
		// still missing (it may appear on another shard at any time).
		park := missing[k] && !anyCreate(attrs)
		var ub expression.UpdateBuilder
		for _, a := range attrs {
			if !a.Amount.IsZero() {
				ub = ub.Add(expression.Name(a.Attribute), num(a.Amount.String()))
			}
		}
		if !park {
			ub = withBucketTTL(ub, spec, x.key(k), attrs)
		}
		// The write count tells Denorm's writes from the application's in the stream.
		ub = ub.Add(expression.Name(rules.WritesAttr), num("1"))
		b := expression.NewBuilder().WithUpdate(ub)
		if !missing[k] {
			b = b.WithCondition(exists(spec.PartitionKey))
		}
		e, err := b.Build()
		if err != nil {
			return nil, nil, err
		}
		key := k
		if park {
			key = parkKey(k)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(x.table), Key: x.key(key),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}})
		owners = append(owners, owner{marker: -1, target: k, park: park})
		if park {
			c, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(spec.PartitionKey))).Build()
			if err != nil {
				return nil, nil, err
			}
			items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
				TableName: aws.String(x.table), Key: x.key(k),
				ConditionExpression: c.Condition(), ExpressionAttributeNames: c.Names(),
			}})
			owners = append(owners, owner{marker: -1, target: k, check: true})
		}
	}
	return items, owners, nil
}

func mergeAmount(list []plan.AttrAmount, a plan.AttrAmount) []plan.AttrAmount {
	for i := range list {
		if list[i].Attribute == a.Attribute {
			list[i].Amount = list[i].Amount.Add(a.Amount)
			return list
		}
	}
	return append(list, a)
}

func ccPtrs(cc []types.ConsumedCapacity) []*types.ConsumedCapacity {
	out := make([]*types.ConsumedCapacity, len(cc))
	for i := range cc {
		out[i] = &cc[i]
	}
	return out
}

// transactWrite runs one TransactWriteItems with retries, metering its capacity.
func (r *run) transactWrite(what string, g Guard, items []types.TransactWriteItem) error {
	err := r.do(what, func(ctx context.Context) error {
		out, err := r.x.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: items, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if out != nil {
			r.consumed(true, ccPtrs(out.ConsumedCapacity)...)
		} else {
			r.consumed(true)
		}
		var cancel *types.TransactionCanceledException
		if errors.As(err, &cancel) && !retryable(err) {
			r.count(func(s *Stats) { s.Refused[g]++ })
		}
		return err
	})
	r.count(func(s *Stats) { s.Transactions++ })
	return err
}
