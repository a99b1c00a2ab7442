package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// The I/O of counts and sums (internal/counter decides what each write holds): a batch's
// deltas go to each target's state item, exactly once, and the state is then copied onto
// the target.

// WatermarkAttr is rules.WatermarkAttr: on a state item, the sequence number of the last
// record of the target's partition whose deltas it holds.
const WatermarkAttr = rules.WatermarkAttr

// MarkerPrefix starts the partition key of idempotency markers.
const MarkerPrefix = rules.MarkerPrefix

// watermarked applies one target's deltas from one partition's records to its state item
// with one conditional UpdateItem (counter.Watermarked), then copies the state onto the
// target. A refused write returns the state: its watermark says which records it holds
// already, and the rest are written again. Once records of the batch were found applied
// (a redelivered batch), the copy is written whatever the rest adds, since a batch that
// failed between the state's write and the copy left it behind.
func (r *run) watermarked(t *plan.TargetDeltas) (int, error) {
	wm := ""
	redelivered := false
	for attempt := 0; attempt < 5; attempt++ {
		attrs, minSeq, maxSeq := t.Sum(wm)
		rec := firstRec(t, wm)
		if maxSeq == "" {
			return -1, nil // every record is at or below the watermark
		}
		state, err := r.updateState(t, attrs, minSeq, maxSeq)
		if err == nil {
			if allZero(attrs) && !redelivered {
				return -1, nil // the values did not move: the copy is as right as it was
			}
			return rec, r.copyState(t.Target, state, attrs)
		}
		cf, ok := retry.CondFailed(err)
		if !ok {
			return rec, err
		}
		cur := record.SeqOf(cf.Item[t.Watermark])
		if cur == "" || record.CompareSeq(cur, minSeq) < 0 {
			return rec, fmt.Errorf("state update of %s %s failed its condition with watermark %q below %s", t.Target.PK, t.Target.SK, cur, minSeq)
		}
		r.count(func(s *Stats) { s.Duplicates++ })
		wm, redelivered = cur, true
		if _, _, next := t.Sum(wm); next == "" {
			return rec, r.copyState(t.Target, cf.Item, attrs)
		}
	}
	return firstRec(t, wm), fmt.Errorf("state update of %s %s: watermark kept moving", t.Target.PK, t.Target.SK)
}

// updateState makes the conditional state update of t's deltas after minSeq and returns
// the state it left (or, refused, the state as it was, in the error).
func (r *run) updateState(t *plan.TargetDeltas, attrs []plan.AttrAmount, minSeq, maxSeq string) (record.Item, error) {
	x := r.x
	ub, cond := counter.Watermarked(t.Watermark, attrs, minSeq, maxSeq)
	ub = withBucketTTL(ub, x.set.Table, x.key(t.Target), attrs) // a bucket's state expires with it
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("building state update: %w", err)
	}
	var state record.Item
	err = r.do("updating the state of "+t.Target.PK+" "+t.Target.SK, func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(x.table), Key: x.key(counter.StateKey(t.Target)),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardWatermark, out, err)
		if out != nil {
			state = out.Attributes
		}
		return err
	})
	return state, err
}

// copyState writes state's values onto target (counter.CopyWrite). attrs are the deltas
// that led to it: a rule among them that creates a missing target creates it (with its
// bucket's expiry). A refused copy is not an error: a newer copy landed, or the target does
// not exist and nothing creates it (it gets its copy when it is inserted).
func (r *run) copyState(target plan.Key, state record.Item, attrs []plan.AttrAmount) error {
	x := r.x
	if plan.IsDistinctRef(target) {
		return nil // a reference item has no copy: its record moves the target's state
	}
	if x.set.Split(target.PK, target.SK) > 0 {
		// The state item holds a share of a split target's values: add up the parts.
		var err error
		if state, err = r.getState(target); err != nil || state == nil {
			return err
		}
	}
	create := anyCreate(attrs)
	ub, cond := counter.CopyWrite(x.set.Table.PartitionKey, counter.Copy(state, counter.Values(x.set.Table, state)), create)
	if create {
		ub = withBucketTTL(ub, x.set.Table, x.key(target), attrs)
	}
	return r.writeCopy(target, ub, cond)
}

// writeCopy sends one copy write.
func (r *run) writeCopy(target plan.Key, ub expression.UpdateBuilder, cond expression.ConditionBuilder) error {
	x := r.x
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building copy of the state: %w", err)
	}
	err = r.do("copying the state onto "+target.PK+" "+target.SK, func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(x.table), Key: x.key(target),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardCopy, out, err)
		return err
	})
	if cf, ok := retry.CondFailed(err); ok {
		if len(cf.Item) == 0 {
			r.count(func(s *Stats) { s.MissingTarget++ })
		} else {
			r.count(func(s *Stats) { s.Stale++ })
		}
		return nil
	}
	if err == nil {
		r.count(func(s *Stats) { s.Copies++ })
	}
	return err
}

// refresh puts back a target's copy the application wrote: one consistent read of the
// state (the state item, and a split target's parts), and a copy only when the target as
// its record shows it differs. A later write of the application has a record of its own,
// refreshed in turn. For a part's record (f.Copy) the copy is written whatever the target
// shows: the part changed the state.
func (r *run) refresh(f *plan.Refresh) error {
	x := r.x
	r.count(func(s *Stats) { s.Refreshes++ })
	state, err := r.getState(f.Target)
	if err != nil {
		return err
	}
	attrs := counter.Values(x.set.Table, state, f.Attrs...)
	copy := counter.Copy(state, attrs)
	if foreign := counter.Foreign(state, f.Seen); f.Seen != nil && foreign != nil {
		// A copy version above the state's was never Denorm's for this target (the
		// application copied another item whole): put the copy over it, as long as the
		// item still holds that version.
		ub, cond := counter.CopyOver(x.set.Table.PartitionKey, copy, foreign)
		return r.writeCopy(f.Target, ub, cond)
	}
	if !f.Copy && !counter.Differs(state, f.Seen, attrs) {
		return nil
	}
	// A part's record copies a split target's state: a rule that creates missing targets
	// creates it once its value is not zero, as a delta of it would.
	var creator *rules.CompiledRule
	for _, c := range f.Creators {
		if f.Copy && !value.NumberOf(state[c.Agg.Attribute]).IsZero() {
			creator = c
			break
		}
	}
	ub, cond := counter.CopyWrite(x.set.Table.PartitionKey, copy, creator != nil)
	if creator != nil {
		ub = withExpiry(ub, x.set.Table, creator, f.Target)
	}
	return r.writeCopy(f.Target, ub, cond)
}

// getState reads target's state (nil when there is none): its state item with a consistent
// GetItem, or a split target's state item and parts with one TransactGetItems, so that the
// sum (counter.Combine) is of one moment: reads one by one could add a part before a
// write to a part after it, a total no state ever held.
func (r *run) getState(target plan.Key) (record.Item, error) {
	x := r.x
	n := x.set.Split(target.PK, target.SK)
	if n == 0 {
		return r.getItem("reading the state of "+target.PK+" "+target.SK, x.key(counter.StateKey(target)))
	}
	in := &dynamodb.TransactGetItemsInput{ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	for _, k := range counter.StateKeys(target, n) {
		in.TransactItems = append(in.TransactItems, types.TransactGetItem{Get: &types.Get{TableName: aws.String(x.table), Key: x.key(k)}})
	}
	var items []record.Item
	err := r.do("reading the split state of "+target.PK+" "+target.SK, func(ctx context.Context) error {
		out, err := x.api.TransactGetItems(ctx, in)
		if out != nil {
			r.consumed(false, ccPtrs(out.ConsumedCapacity)...)
			items = items[:0]
			for _, resp := range out.Responses {
				items = append(items, resp.Item)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return counter.Combine(x.set.Table, items), nil
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

// marked applies deltas that need a per-event marker: each event's marker and its deltas
// to the targets' state items go in one transaction, events packed into transactions of
// at most 100 distinct items with their deltas to a shared target merged. A duplicate
// event (its marker exists) is dropped from the transaction and the rest retried. Each
// target's state is then read and copied onto it, except a split target's, whose deltas
// went to one of its parts: that part's record copies it. It returns the earliest event
// left unapplied.
func (r *run) marked(events []plan.EventDeltas) (int, error) {
	for len(events) > 0 {
		n := packCount(events, maxTransactItems)
		if err := r.transact(events[:n]); err != nil {
			return events[0].Rec, err
		}
		if err := r.copyTargets(events[:n]); err != nil {
			return events[0].Rec, err
		}
		events = events[n:]
	}
	return -1, nil
}

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

// transact applies events in one TransactWriteItems, dropping duplicates as the
// cancellation reasons reveal them.
func (r *run) transact(events []plan.EventDeltas) error {
	events = append([]plan.EventDeltas(nil), events...)
	ttl := strconv.FormatInt(r.x.opt.Now().Add(r.x.opt.MarkerTTL).Unix(), 10)
	// Each refused attempt drops at least one event: one more than there are ends it.
	for attempt, n := 0, len(events); attempt <= n; attempt++ {
		items, markers, err := r.buildTransaction(events, ttl)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		err = r.transactWrite("applying counter transaction", GuardMarker, items)
		var cancel *types.TransactionCanceledException
		if err == nil || !errors.As(err, &cancel) || retry.Transient(err) {
			return err
		}
		dup := map[int]bool{}
		for i, reason := range cancel.CancellationReasons {
			if aws.ToString(reason.Code) == "ConditionalCheckFailed" && i < markers {
				dup[i] = true // this event was applied before
			}
		}
		if len(dup) == 0 {
			return fmt.Errorf("counter transaction canceled: %w", err)
		}
		kept := events[:0]
		for i, ev := range events {
			if !dup[i] {
				kept = append(kept, ev)
			}
		}
		events = kept
		r.count(func(s *Stats) { s.Duplicates += len(dup) })
	}
	return fmt.Errorf("counter transaction: too many attempts")
}

// buildTransaction returns the items of one transaction: a marker per event (the first
// markers items), then one state update per target with every event's deltas to it.
func (r *run) buildTransaction(events []plan.EventDeltas, ttl string) (items []types.TransactWriteItem, markers int, err error) {
	x := r.x
	spec := x.set.Table
	for _, ev := range events {
		marker := x.key(plan.Key{PK: MarkerPrefix + ev.EventID, SK: MarkerPrefix})
		if spec.TTLAttribute != "" {
			marker[spec.TTLAttribute] = &types.AttributeValueMemberN{Value: ttl}
		}
		marker["seq"] = &types.AttributeValueMemberN{Value: record.NormSeq(ev.Seq)}
		e, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(spec.PartitionKey))).Build()
		if err != nil {
			return nil, 0, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(x.table), Item: marker,
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(),
		}})
	}
	markers = len(items)
	order, merged := targetsOf(events)
	for _, k := range order {
		// A target whose deltas sum to zero still gets its version raised (ADD _dn_v 1),
		// as a watermark-mode state does: a recount sees that it was written, and the
		// markers that make a later redelivery of these events a duplicate are written
		// with it.
		attrs := merged[k]
		ub := withBucketTTL(counter.Add(attrs), spec, x.key(k), attrs)
		e, err := expression.NewBuilder().WithUpdate(ub).Build()
		if err != nil {
			return nil, 0, err
		}
		at := counter.StateKey(k)
		if n := x.set.Split(k.PK, k.SK); n > 0 {
			// A split target takes the deltas in one of its parts, picked by the first
			// event's source: its record then copies the state onto the target.
			at = plan.PartKey(k, counter.PartOf(events[0].Source.PK+"\x00"+events[0].Source.SK, n))
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(x.table), Key: x.key(at),
			UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}})
	}
	return items, markers, nil
}

// copyTargets copies the state of every target of events onto it, duplicates' included:
// a batch that failed between its transaction and its copies left them behind.
func (r *run) copyTargets(events []plan.EventDeltas) error {
	order, merged := targetsOf(events)
	errs := make([]error, len(order))
	sem := make(chan struct{}, r.x.opt.Concurrency)
	var wg sync.WaitGroup
	for i, k := range order {
		if allZero(merged[k]) || plan.IsDistinctRef(k) || r.x.set.Split(k.PK, k.SK) > 0 {
			continue // a split target's copy comes with its part's record
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			state, err := r.getState(k)
			if err == nil && state != nil {
				err = r.copyState(k, state, merged[k])
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// targetsOf merges the deltas of events per target: the targets in first appearance order,
// and each one's amounts per attribute.
func targetsOf(events []plan.EventDeltas) (order []plan.Key, merged map[plan.Key][]plan.AttrAmount) {
	merged = map[plan.Key][]plan.AttrAmount{}
	for _, ev := range events {
		for _, t := range ev.Targets {
			if _, ok := merged[t.Target]; !ok {
				order = append(order, t.Target)
			}
			for _, at := range t.Attrs {
				merged[t.Target] = mergeAmount(merged[t.Target], at)
			}
		}
	}
	return order, merged
}

func mergeAmount(list []plan.AttrAmount, a plan.AttrAmount) []plan.AttrAmount {
	for i := range list {
		if list[i].Attribute == a.Attribute {
			list[i].Amount = list[i].Amount.Add(a.Amount)
			list[i].Create = list[i].Create || a.Create
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
		if errors.As(err, &cancel) && !retry.Transient(err) {
			r.count(func(s *Stats) { s.Refused[g]++ })
		}
		return err
	})
	r.count(func(s *Stats) { s.Transactions++ })
	return err
}
