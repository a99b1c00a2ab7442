package ops

import (
	"context"
	"errors"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/exprval"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/rulesdiff"
	"github.com/denorm/denorm/internal/value"
)

// A count or sum is repaired in its target's state item (internal/counter), which only
// Denorm writes, and the state is then copied onto the target as the processor copies it.

// setState sets, in target k's state item, each rule of rs's attribute to its total, marks
// the rules of decided (rs and those whose value the run found right as it was) decided
// there (rules.StateDecidedAttr) and raises the state's version, in one write, on condition
// that the version is still version (nil for a state item that does not exist): every write
// of the processor raises it, so an unchanged version means no delta landed since it was
// read. It returns the state the write left. Marking every rule decided matters when the
// run is interrupted before its checkpoint knows of the write: the next run finds the
// version moved and, without the marks, could not tell this write from a live delta.
func (d *db) setState(ctx context.Context, rs, decided []*rules.CompiledRule, k plan.Key, totals []value.Number, version types.AttributeValue) (record.Item, error) {
	if n := d.splitOf(k); n > 0 {
		return d.setSplitState(ctx, rs, decided, k, n, totals, version)
	}
	return d.updateReturning(ctx, counter.StateKey(k), d.stateUpdate(rs, decided, k, totals), d.unchangedState(version), types.ReturnValueAllNew)
}

// stateUpdate sets each rule of rs's attribute to its total in a state item, marks the
// rules of decided decided there and raises its version.
func (d *db) stateUpdate(rs, decided []*rules.CompiledRule, k plan.Key, totals []value.Number) expression.UpdateBuilder {
	ub := expression.Add(expression.Name(rules.StateVersionAttr), expression.Value(numberAV(value.Int(1))))
	for i, r := range rs {
		ub = ub.Set(expression.Name(r.Agg.Attribute), val(numberAV(totals[i])))
	}
	digests := make([]string, len(decided))
	for i, r := range decided {
		digests[i] = rulesdiff.Digest(r)
	}
	ub = ub.Add(expression.Name(rules.StateDecidedAttr), exprval.Of(&types.AttributeValueMemberSS{Value: digests}))
	return withBucketTTL(ub, d.spec, rs[0], k) // a bucket's state expires with it
}

// unchangedState is the condition that a state item is still at version (absent for nil).
func (d *db) unchangedState(version types.AttributeValue) expression.ConditionBuilder {
	if version == nil {
		return expression.AttributeNotExists(expression.Name(d.spec.PartitionKey))
	}
	return unchanged(rules.StateVersionAttr, version)
}

// setSplitState is setState for a target whose state is split over n parts: the totals are
// what the state item and the parts add up to, so the state item is set to each total less
// the parts' share, in one transaction with a check that no part moved. version is the
// sum of all their versions as read before; the items are read again, and a sum that
// moved since, or an item that moves before the transaction, refuses the write.
func (d *db) setSplitState(ctx context.Context, rs, decided []*rules.CompiledRule, k plan.Key, n int, totals []value.Number, version types.AttributeValue) (record.Item, error) {
	keys := counter.StateKeys(k, n)
	items, err := d.getAll(ctx, keys)
	if err != nil {
		return nil, err
	}
	now := counter.Combine(d.spec, items)
	if (version == nil) != (now == nil) || version != nil && counter.Version(version) != counter.Version(now[rules.StateVersionAttr]) {
		return nil, errStateMoved
	}
	own := make([]value.Number, len(totals))
	for i, r := range rs {
		own[i] = totals[i].Sub(value.NumberOf(now[r.Agg.Attribute])).Add(value.NumberOf(items[0][r.Agg.Attribute]))
	}
	up, err := d.txUpdate(keys[0], d.stateUpdate(rs, decided, k, own), d.unchangedState(items[0][rules.StateVersionAttr]))
	if err != nil {
		return nil, err
	}
	tx := []types.TransactWriteItem{up}
	for i, part := range items[1:] {
		e, err := expression.NewBuilder().WithCondition(d.unchangedState(part[rules.StateVersionAttr])).Build()
		if err != nil {
			return nil, err
		}
		tx = append(tx, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(d.table), Key: d.key(keys[i+1]),
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()}})
	}
	err = d.transact(ctx, "setting the split state of "+k.PK+" "+k.SK, tx)
	var cancel *types.TransactionCanceledException
	if errors.As(err, &cancel) {
		for _, r := range cancel.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return nil, errStateMoved
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return d.getState(ctx, k)
}

// errStateMoved refuses a write of a split state that moved since it was read, as a
// refused condition refuses a state item's (retry.Refused).
var errStateMoved = &types.ConditionalCheckFailedException{Message: aws.String("the split state moved since it was read")}

// copyState writes state onto target k, whose count and sum rules are rs
// (counter.CopyWrite): every aggregate attribute the state holds, and the rules', whose
// value may be zero. A missing target is created only when one of the rules creates its
// targets and its value is not zero. A refused copy (a newer one landed, or no target) is
// not an error.
func (d *db) copyState(ctx context.Context, rs []*rules.CompiledRule, k plan.Key, state record.Item) error {
	if plan.IsDistinctRef(k) {
		return nil // a reference item has no copy: its record moves its target's state
	}
	also := make([]string, 0, len(rs))
	var creator *rules.CompiledRule
	for _, r := range rs {
		also = append(also, r.Agg.Attribute)
		if creator == nil && r.Agg.MissingTarget == rules.MissingCreate && !value.NumberOf(state[r.Agg.Attribute]).IsZero() {
			creator = r
		}
	}
	copy := counter.Copy(state, counter.Values(d.spec, state, also...))
	ub, cond := counter.CopyWrite(d.spec.PartitionKey, copy, creator != nil)
	if creator != nil {
		ub = withBucketTTL(ub, d.spec, creator, k)
	}
	err := d.update(ctx, k, ub, cond)
	if !retry.Refused(err) {
		return err
	}
	// Refused: no target (it gets the copy when it is inserted), or one whose copy version
	// is above the state's, which no copy of this state had: the application made it up,
	// or the state's version went down (a split lowered, its dropped parts' versions no
	// longer counted). The copy goes over it, as long as the target still holds it.
	target, err := d.get(ctx, k)
	if err != nil || target == nil {
		return err
	}
	foreign := counter.Foreign(state, target)
	if foreign == nil {
		return nil // a copy at least as new landed meanwhile
	}
	ub, cond = counter.CopyOver(d.spec.PartitionKey, copy, foreign)
	if err := d.update(ctx, k, ub, cond); !retry.Refused(err) {
		return err
	}
	return nil
}

// getState reads target k's state (nil when there is none): its state item, and the parts
// of a split target added up (counter.Combine).
func (d *db) getState(ctx context.Context, k plan.Key) (record.Item, error) {
	n := d.splitOf(k)
	if n == 0 {
		return d.get(ctx, counter.StateKey(k))
	}
	items, err := d.getAll(ctx, counter.StateKeys(k, n))
	if err != nil {
		return nil, err
	}
	return counter.Combine(d.spec, items), nil
}

// getAll reads items one by one (nil for one that does not exist).
func (d *db) getAll(ctx context.Context, keys []plan.Key) ([]record.Item, error) {
	out := make([]record.Item, len(keys))
	for i, k := range keys {
		it, err := d.get(ctx, k)
		if err != nil {
			return nil, err
		}
		out[i] = it
	}
	return out, nil
}

// splitOf is how many parts target k's state is split over (0 for none).
func (d *db) splitOf(k plan.Key) int {
	if d.split == nil {
		return 0
	}
	return d.split(k)
}

// decided reports whether a backfill or repair set each of rs's values in state: the
// processor's exactly-once deltas have kept them exact since, so no run needs to decide
// them again. A rule changed since (another digest) is not decided.
func decided(state record.Item, rs []*rules.CompiledRule) bool {
	set, _ := state[rules.StateDecidedAttr].(*types.AttributeValueMemberSS)
	if set == nil {
		return false
	}
	for _, r := range rs {
		if !slices.Contains(set.Value, rulesdiff.Digest(r)) {
			return false
		}
	}
	return true
}
