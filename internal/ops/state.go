package ops

import (
	"context"
	"slices"

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
	ub := expression.Add(expression.Name(rules.StateVersionAttr), expression.Value(numberAV(value.Int(1))))
	for i, r := range rs {
		ub = ub.Set(expression.Name(r.Agg.Attribute), val(numberAV(totals[i])))
	}
	digests := make([]string, len(decided))
	for i, r := range decided {
		digests[i] = rulesdiff.Digest(r)
	}
	ub = ub.Add(expression.Name(rules.StateDecidedAttr), exprval.Of(&types.AttributeValueMemberSS{Value: digests}))
	ub = withBucketTTL(ub, d.spec, rs[0], k) // a bucket's state expires with it
	cond := expression.AttributeNotExists(expression.Name(d.spec.PartitionKey))
	if version != nil {
		cond = unchanged(rules.StateVersionAttr, version)
	}
	return d.updateReturning(ctx, counter.StateKey(k), ub, cond, types.ReturnValueAllNew)
}

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
	ub, cond := counter.CopyWrite(d.spec.PartitionKey, counter.Copy(state, counter.Values(d.spec, state, also...)), creator != nil)
	if creator != nil {
		ub = withBucketTTL(ub, d.spec, creator, k)
	}
	err := d.update(ctx, k, ub, cond)
	if retry.Refused(err) {
		return nil
	}
	return err
}

// getState reads target k's state item (nil when there is none).
func (d *db) getState(ctx context.Context, k plan.Key) (record.Item, error) {
	return d.get(ctx, counter.StateKey(k))
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
