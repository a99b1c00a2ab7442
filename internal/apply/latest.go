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

// latest applies one latest group as extreme does a max: the raise copies the source's
// attributes with its by value and key; a value that left costs one read, and one
// recompute only when its source may have been the latest.
func (r *run) latest(g *plan.ExtremeGroup) error {
	if g.Raise != nil {
		if err := r.raiseLatest(g); err != nil {
			return err
		}
	}
	if g.Recheck == nil && !g.Recompute {
		return nil
	}
	rule := g.Rule
	for range extremeAttempts {
		stored, exists, err := r.readLatest(g)
		if err != nil || !exists {
			return err
		}
		sv, sk := stored[rule.LatestBy], stringOf(stored[rule.LatestKey])
		if sv != nil && !value.Comparable(sv) {
			g.Recompute = true
		}
		if !g.Recompute && (sv == nil || value.LatestBetter(sv, sk, g.Recheck, g.RecheckKey)) {
			r.count(func(s *Stats) { s.ExtremesKept++ })
			return nil
		}
		r.count(func(s *Stats) { s.ExtremeRecomputes++ })
		best, err := RecomputeBest(r.ctx, r.x.api, r.x.table, rule, g.Target, g.QueryPK, func(out *dynamodb.QueryOutput, err error) error {
			if out != nil {
				r.consumed(false, out.ConsumedCapacity)
			}
			return err
		}, r.do)
		if err != nil {
			return err
		}
		if best == nil && sv == nil {
			return nil
		}
		err = r.writeLatest(g, stored, best)
		if _, refused := retry.CondFailed(err); refused {
			continue
		}
		return err
	}
	return fmt.Errorf("%s on %s %s: %w", rule.Name, g.Target.PK, g.Target.SK, ErrExtremeConflict)
}

func stringOf(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// latestUpdate sets what the target copies from a source: its set attributes, by value
// and key.
func latestUpdate(rule *rules.CompiledRule, by types.AttributeValue, key string, set []plan.AttrValue, remove []string) expression.UpdateBuilder {
	ub := expression.Set(expression.Name(rule.LatestBy), exprval.Of(by)).Set(expression.Name(rule.LatestKey), exprval.Str(key)).
		Add(expression.Name(rule.ExtremeVersion), exprval.Num("1"))
	for _, a := range set {
		ub = ub.Set(expression.Name(a.Name), exprval.Of(a.Value))
	}
	for _, a := range remove {
		ub = ub.Remove(expression.Name(a))
	}
	return ub
}

// raiseLatest writes the group's source if it comes after the one the target holds, or is
// that source (same value and key: its newer attributes).
func (r *run) raiseLatest(g *plan.ExtremeGroup) error {
	x := r.x
	rule := g.Rule
	by, key := expression.Name(rule.LatestBy), expression.Name(rule.LatestKey)
	beats := by.LessThan(exprval.Of(g.Raise)).
		Or(by.Equal(exprval.Of(g.Raise)).And(key.LessThanEqual(exprval.Str(g.Key))))
	if _, isStr := g.Raise.(*types.AttributeValueMemberS); isStr {
		beats = beats.Or(expression.AttributeType(by, expression.Number))
	}
	cond := exists(x.set.Table.PartitionKey).And(expression.AttributeNotExists(by).Or(beats))
	ub := latestUpdate(rule, g.Raise, g.Key, g.Set, g.Remove)
	if rule.CreatesBuckets() {
		// A bucket item is created by its first source, with its expiry.
		cond = expression.AttributeNotExists(by).Or(beats)
		ub = withExpiry(ub, x.set.Table, rule, g.Target)
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building latest raise: %w", err)
	}
	err = r.updateItem("raising "+rule.Name+" of "+g.Target.PK+" "+g.Target.SK, x.key(g.Target), e, GuardExtreme)
	if _, refused := retry.CondFailed(err); refused {
		return nil
	}
	if err == nil {
		r.count(func(s *Stats) { s.ExtremeRaises++ })
	}
	return err
}

// readLatest reads the target's by value and key with one consistent GetItem.
func (r *run) readLatest(g *plan.ExtremeGroup) (record.Item, bool, error) {
	item, err := r.getItem("reading "+g.Target.PK+" "+g.Target.SK, r.x.key(g.Target),
		r.x.set.Table.PartitionKey, g.Rule.LatestBy, g.Rule.LatestKey)
	if err != nil || item == nil {
		return nil, false, err
	}
	return item, true, nil
}

// writeLatest copies best (nil: remove everything the rule keeps) on condition that the
// target's by value and key are still as read.
func (r *run) writeLatest(g *plan.ExtremeGroup, stored record.Item, best map[string]types.AttributeValue) error {
	x := r.x
	e, err := LatestWrite(x.set.Table, g.Rule, g.Target, stored, best)
	if err != nil {
		return err
	}
	return r.updateItem("writing the recomputed "+g.Rule.Name+" of "+g.Target.PK+" "+g.Target.SK, x.key(g.Target), e, GuardExtreme)
}

// LatestWrite builds the write of a recomputed latest: best's attributes, by value and key
// (REMOVE of them all when best is nil), on condition that the target's by value and key
// are still those of stored. A bucket item (stored nil) is created, with its expiry.
// Shared with `denorm verify --repair`.
func LatestWrite(spec table.Spec, rule *rules.CompiledRule, target plan.Key, stored record.Item, best map[string]types.AttributeValue) (expression.Expression, error) {
	var ub expression.UpdateBuilder
	if best == nil {
		ub = expression.Remove(expression.Name(rule.LatestBy)).Remove(expression.Name(rule.LatestKey)).
			Add(expression.Name(rule.ExtremeVersion), exprval.Num("1"))
		for _, t := range rule.Agg.SetOrder {
			ub = ub.Remove(expression.Name(t))
		}
	} else {
		set, remove := plan.LatestValues(rule, best)
		ub = latestUpdate(rule, value.ExtremeValue(rule, best), value.LatestKey(rule, best), set, remove)
	}
	held := func(a string) expression.ConditionBuilder {
		if v := stored[a]; v != nil {
			return expression.Name(a).Equal(exprval.Of(v))
		}
		return expression.AttributeNotExists(expression.Name(a))
	}
	cond := exists(spec.PartitionKey).And(held(rule.LatestBy), held(rule.LatestKey))
	if rule.CreatesBuckets() {
		ub = withExpiry(ub, spec, rule, target) // if_not_exists: kept, or put back
	}
	if stored == nil && rule.CreatesBuckets() {
		// A bucket item is created, or one that holds no source yet is written.
		cond = held(rule.LatestBy).And(held(rule.LatestKey))
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return e, fmt.Errorf("building latest write: %w", err)
	}
	return e, nil
}
