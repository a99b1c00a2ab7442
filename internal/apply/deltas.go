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

// WatermarkAttr holds, on a counter target that shares its sources' partition, the
// sequence number of the last record whose deltas it received.
const WatermarkAttr = rules.ReservedPrefix + "_wm"

// MarkerPrefix starts the partition key of idempotency markers.
const MarkerPrefix = rules.ReservedPrefix + "#m#"

// watermarked applies one target's deltas with one conditional UpdateItem: the deltas of
// every record after the target's watermark, and the watermark advanced to the last of
// them, even when they sum to zero. A replayed record is at or below the watermark and is
// left out.
func (r *run) watermarked(t *plan.TargetDeltas) (int, error) {
	x := r.x
	wm := ""
	dropSkip := false
	for attempt := 0; attempt < 4; attempt++ {
		attrs, minSeq, maxSeq, _ := t.Sum(wm)
		if dropSkip {
			attrs = createOnly(attrs)
		}
		rec := firstRec(t, wm)
		zero := allZero(attrs)
		if maxSeq == "" || len(attrs) == 0 || (dropSkip && zero) {
			// Every record is at or below the watermark, or the target is missing and
			// nothing would create it.
			return -1, nil
		}
		// A zero net (an item counted in and out within the batch) still advances the
		// watermark: if Lambda resumes the batch between the two records, the second
		// must be a duplicate, not a delta of its own.
		var ub expression.UpdateBuilder
		needExists := zero // a zero net never creates the target
		for _, a := range attrs {
			if !zero {
				ub = ub.Add(expression.Name(a.Attribute), num(a.Amount.String()))
			}
			needExists = needExists || !a.Create
		}
		ub = ub.Set(expression.Name(WatermarkAttr), num(record.NormSeq(maxSeq)))
		cond := expression.AttributeNotExists(expression.Name(WatermarkAttr)).
			Or(expression.Name(WatermarkAttr).LessThan(num(record.NormSeq(minSeq))))
		if needExists {
			cond = cond.And(exists(x.set.Table.PartitionKey))
		}
		e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
		if err != nil {
			return rec, fmt.Errorf("building counter update: %w", err)
		}
		err = r.do("updating counters on "+t.Target.PK+" "+t.Target.SK, func(ctx context.Context) error {
			out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(x.table), Key: x.key(t.Target),
				UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
				ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
				ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
			})
			r.written(out, err)
			return err
		})
		cf, ok := isCondFailed(err)
		if !ok {
			return rec, err
		}
		// The condition failed: the target is missing, or already has some of these records.
		if len(cf.Item) == 0 {
			dropSkip = true
			r.count(func(s *Stats) { s.MissingTarget++ })
			continue
		}
		cur, _ := cf.Item[WatermarkAttr].(*types.AttributeValueMemberN)
		if cur == nil {
			return rec, fmt.Errorf("counter update on %s %s failed its condition without a watermark", t.Target.PK, t.Target.SK)
		}
		r.count(func(s *Stats) { s.Duplicates++ })
		wm = cur.Value
	}
	return firstRec(t, wm), fmt.Errorf("counter update on %s %s: watermark kept moving", t.Target.PK, t.Target.SK)
}

func firstRec(t *plan.TargetDeltas, wm string) int {
	for _, e := range t.Entries {
		if wm == "" || record.CompareSeq(e.Seq, wm) > 0 {
			return e.Rec
		}
	}
	return -1
}

func createOnly(attrs []plan.AttrAmount) []plan.AttrAmount {
	var out []plan.AttrAmount
	for _, a := range attrs {
		if a.Create {
			out = append(out, a)
		}
	}
	return out
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
		if err := r.transact(events[:n]); err != nil {
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

// transact applies events in one TransactWriteItems, dropping duplicates and missing
// skip-targets as the cancellation reasons reveal them.
func (r *run) transact(events []plan.EventDeltas) error {
	x := r.x
	events = append([]plan.EventDeltas(nil), events...)
	dropped := map[plan.Key]bool{} // targets found missing: their skip-deltas are dropped
	ttl := strconv.FormatInt(x.opt.Now().Add(x.opt.MarkerTTL).Unix(), 10)
	// Each failed attempt removes at least one event or target, so this bounds the loop.
	maxAttempts := 2*len(events) + 4
	for attempt := 0; attempt < maxAttempts; attempt++ {
		items, owners, err := r.buildTransaction(events, dropped, ttl)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		var cancel *types.TransactionCanceledException
		err = r.do("applying counter transaction", func(ctx context.Context) error {
			out, err := x.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
				TransactItems: items, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			if out != nil {
				r.consumed(true, ccPtrs(out.ConsumedCapacity)...)
			} else {
				r.consumed(true)
			}
			return err
		})
		r.count(func(s *Stats) { s.Transactions++ })
		if err == nil {
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
			if o.marker >= 0 {
				dup[o.marker] = true // this event was applied before
				continue
			}
			if !dropped[o.target] {
				dropped[o.target] = true
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

// owner tells what a transaction item is: an event's marker, or a target.
type owner struct {
	marker int // index into events, or -1
	target plan.Key
}

func (r *run) buildTransaction(events []plan.EventDeltas, dropped map[plan.Key]bool, ttl string) ([]types.TransactWriteItem, []owner, error) {
	x := r.x
	spec := x.set.Table
	var items []types.TransactWriteItem
	var owners []owner
	type acc struct {
		attrs []plan.AttrAmount
	}
	merged := map[plan.Key]*acc{}
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
			a := merged[t.Target]
			if a == nil {
				a = &acc{}
				merged[t.Target] = a
				order = append(order, t.Target)
			}
			for _, at := range t.Attrs {
				if dropped[t.Target] && !at.Create {
					continue
				}
				a.attrs = mergeAmount(a.attrs, at)
			}
		}
	}
	for _, k := range order {
		attrs := merged[k].attrs
		if len(attrs) == 0 || allZero(attrs) {
			continue
		}
		var ub expression.UpdateBuilder
		needExists := false
		for _, a := range attrs {
			ub = ub.Add(expression.Name(a.Attribute), num(a.Amount.String()))
			needExists = needExists || !a.Create
		}
		b := expression.NewBuilder().WithUpdate(ub)
		if needExists {
			b = b.WithCondition(exists(spec.PartitionKey))
		}
		e, err := b.Build()
		if err != nil {
			return nil, nil, err
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(x.table), Key: x.key(k),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}})
		owners = append(owners, owner{marker: -1, target: k})
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
