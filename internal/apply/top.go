package apply

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/exprval"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
)

// top applies one top group: one consistent read of the list and its version, the batch's
// changes applied to it (value.TopNext), one query of the target's sources only when a listed
// source left a full list or fell in it (or the list must be recomputed), and one write
// conditional on the version read, skipped when the list is unchanged. The list is a
// function of the sources' current states, so a redelivered or crashed group is applied
// again to the same end.
func (r *run) top(g *plan.ExtremeGroup) error {
	rule := g.Rule
	for range extremeAttempts {
		item, err := r.getItem("reading "+g.Target.PK+" "+g.Target.SK, r.x.key(g.Target),
			r.x.set.Table.PartitionKey, rule.Agg.Attribute, rule.ExtremeVersion)
		if err != nil || (item == nil && !rule.CreatesBuckets()) {
			return err // a missing target is recomputed when it is inserted
		}
		stored, ok := value.DecodeTop(rule, item[rule.Agg.Attribute])
		if item == nil {
			// A bucket item is created by its first sources; its INSERT's record then
			// recomputes it from every source of its bucket.
			if len(g.Ups) == 0 {
				return nil
			}
			stored, ok = nil, true
		}
		next, query := value.TopNext(rule.Agg.N, stored, g.Ups, g.Left)
		if !ok || g.Recompute || query {
			r.count(func(s *Stats) { s.ExtremeRecomputes++ })
			if next, err = RecomputeTop(r.ctx, r.x.api, r.x.table, rule, g.Target, g.QueryPK, func(out *dynamodb.QueryOutput, err error) error {
				if out != nil {
					r.consumed(false, out.ConsumedCapacity)
				}
				return err
			}, r.do); err != nil {
				return err
			}
		}
		if ok && value.SameTop(stored, next) {
			r.count(func(s *Stats) { s.Unchanged++ })
			return nil
		}
		e, err := TopWrite(r.x.set.Table, rule, g.Target, item, next)
		if err != nil {
			return err
		}
		err = r.updateItem("writing "+rule.Name+" of "+g.Target.PK+" "+g.Target.SK, r.x.key(g.Target), e, GuardExtreme)
		if _, refused := retry.CondFailed(err); refused {
			continue // written since the read: read and apply again
		}
		if err == nil {
			r.count(func(s *Stats) { s.ExtremeRaises++ })
		}
		return err
	}
	return fmt.Errorf("%s on %s %s: %w", rule.Name, g.Target.PK, g.Target.SK, ErrExtremeConflict)
}

// TopWrite builds the write of a top list: the list (empty when no source is left, so
// that an application's removal of the attribute stays distinguishable) and the next
// version, on condition that the version is still the one stored holds. A bucket item
// (stored nil) is created, with its expiry. Shared with `denorm verify --repair`.
func TopWrite(spec table.Spec, rule *rules.CompiledRule, target plan.Key, stored record.Item, next []value.TopEntry) (expression.Expression, error) {
	ver := expression.Name(rule.ExtremeVersion)
	n := value.Int(1)
	if v, ok := stored[rule.ExtremeVersion].(*types.AttributeValueMemberN); ok {
		if cur, err := value.ParseNumber(v.Value); err == nil {
			n = cur.Add(value.Int(1))
		}
	}
	ub := expression.Set(expression.Name(rule.Agg.Attribute), exprval.Of(value.TopList(next))).
		Set(ver, exprval.Of(&types.AttributeValueMemberN{Value: n.String()}))
	cond := exists(spec.PartitionKey)
	if rule.CreatesBuckets() {
		ub = withExpiry(ub, spec, rule, target) // if_not_exists: kept, or put back
	}
	switch v := stored[rule.ExtremeVersion]; {
	case stored == nil && rule.CreatesBuckets():
		cond = expression.AttributeNotExists(ver) // created, or one that got no list yet
	case v != nil:
		cond = cond.And(ver.Equal(exprval.Of(v)))
	default:
		cond = cond.And(expression.AttributeNotExists(ver))
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return e, fmt.Errorf("building top write: %w", err)
	}
	return e, nil
}
