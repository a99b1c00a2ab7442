package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/exprval"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// extremeAttempts bounds how often a recompute reads again after its write was refused
// because the target's value changed since the read (a raise landed in between).
const extremeAttempts = 4

// ErrExtremeConflict is returned when a max or min target kept changing under its
// recompute: the record fails and is delivered again.
var ErrExtremeConflict = errors.New("the target kept changing while its extreme was recomputed")

// extreme applies one max or min group: the raise first (one conditional UpdateItem), then,
// when a value left the target, a consistent read of the target and, only if the value
// that left may have been the extreme, one recompute from the sources. Every step is
// idempotent against the table's current state, so a redelivered or crashed group is
// simply applied again.
func (r *run) extreme(g *plan.ExtremeGroup) error {
	switch g.Rule.Kind {
	case rules.KindLatest:
		return r.latest(g)
	case rules.KindTop:
		return r.top(g)
	}
	if g.Raise != nil {
		if err := r.raise(g); err != nil {
			return err
		}
	}
	if g.Recheck == nil && !g.Recompute {
		return nil
	}
	for range extremeAttempts {
		stored, exists, err := r.readExtreme(g)
		if err != nil || !exists {
			return err // a missing target is recomputed when it is inserted
		}
		if stored != nil && !value.Comparable(stored) {
			g.Recompute = true // not a number or string (an application wrote it): replace it
		}
		if !g.Recompute && (stored == nil || value.Better(g.Rule.Kind, stored, g.Recheck)) {
			// The value that left was not the extreme (nothing is stored, or something
			// better is): the read was the whole cost.
			r.count(func(s *Stats) { s.ExtremesKept++ })
			return nil
		}
		best, err := r.recompute(g)
		if err != nil {
			return err
		}
		if best != nil && stored != nil && value.Compare(best, stored) == 0 && sameType(best, stored) {
			r.count(func(s *Stats) { s.Unchanged++ })
			return nil
		}
		if best == nil && stored == nil {
			return nil
		}
		err = r.writeExtreme(g, stored, best)
		if _, refused := retry.CondFailed(err); refused {
			continue // changed since the read: read and recompute again
		}
		return err
	}
	return fmt.Errorf("%s on %s %s: %w", g.Rule.Name, g.Target.PK, g.Target.SK, ErrExtremeConflict)
}

func sameType(a, b types.AttributeValue) bool { return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) }

// raise sets the target's attribute to the group's best raise if the attribute is absent
// or worse. Numbers rank below strings (value.Compare), so a string raises a number
// for max and a number lowers a string for min.
func (r *run) raise(g *plan.ExtremeGroup) error {
	x := r.x
	attr := g.Rule.Agg.Attribute
	name := expression.Name(attr)
	beats := name.LessThan(exprval.Of(g.Raise))
	_, isStr := g.Raise.(*types.AttributeValueMemberS)
	switch {
	case g.Rule.Kind == rules.KindMax && isStr:
		beats = beats.Or(expression.AttributeType(name, expression.Number))
	case g.Rule.Kind == rules.KindMin && isStr:
		beats = name.GreaterThan(exprval.Of(g.Raise))
	case g.Rule.Kind == rules.KindMin:
		beats = name.GreaterThan(exprval.Of(g.Raise)).Or(expression.AttributeType(name, expression.String))
	}
	cond := exists(x.set.Table.PartitionKey).And(expression.AttributeNotExists(name).Or(beats))
	ub := expression.Set(name, exprval.Of(g.Raise)).Add(expression.Name(g.Rule.ExtremeVersion), exprval.Num("1"))
	if g.Rule.CreatesBuckets() {
		// A bucket item is created by its first source, with its expiry.
		cond = expression.AttributeNotExists(name).Or(beats)
		ub = withExpiry(ub, x.set.Table, g.Rule, g.Target)
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building %s raise: %w", g.Rule.Kind, err)
	}
	err = r.updateItem("raising "+attr+" of "+g.Target.PK+" "+g.Target.SK, x.key(g.Target), e, GuardExtreme)
	if _, refused := retry.CondFailed(err); refused {
		return nil // the stored value is as good, or the target does not exist: both normal
	}
	if err == nil {
		r.count(func(s *Stats) { s.ExtremeRaises++ })
	}
	return err
}

// readExtreme reads the target's attribute with one consistent GetItem.
func (r *run) readExtreme(g *plan.ExtremeGroup) (types.AttributeValue, bool, error) {
	item, err := r.getItem("reading "+g.Target.PK+" "+g.Target.SK, r.x.key(g.Target), r.x.set.Table.PartitionKey, g.Rule.Agg.Attribute)
	if err != nil || item == nil {
		return nil, false, err
	}
	return item[g.Rule.Agg.Attribute], true, nil
}

// recompute reads every source of the target with one query (all its pages, projecting
// only what the rule reads) and returns the extreme of their values (nil: none). The query
// sees the table as it is now, possibly ahead of the stream: records not yet processed
// re-apply idempotently on top.
func (r *run) recompute(g *plan.ExtremeGroup) (types.AttributeValue, error) {
	r.count(func(s *Stats) { s.ExtremeRecomputes++ })
	return RecomputeExtreme(r.ctx, r.x.api, r.x.table, g.Rule, g.Target, g.QueryPK, func(out *dynamodb.QueryOutput, err error) error {
		if out != nil {
			r.consumed(false, out.ConsumedCapacity)
		}
		return err
	}, r.do)
}

// Querier is the one call a recompute makes.
type Querier interface {
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// RecomputeExtreme queries rule r's sources of target (at partition value pkValue) and
// returns their extreme value, nil for none. seen is told of every page's outcome; do
// wraps each call (retries). Shared by the stream processor and `denorm verify --repair`.
func RecomputeExtreme(ctx context.Context, api Querier, table string, r *rules.CompiledRule, target plan.Key, pkValue string,
	seen func(*dynamodb.QueryOutput, error) error, do func(string, func(context.Context) error) error) (types.AttributeValue, error) {
	best, err := RecomputeBest(ctx, api, table, r, target, pkValue, seen, do)
	if err != nil || best == nil {
		return nil, err
	}
	return value.ExtremeValue(r, best), nil
}

// RecomputeBest queries rule r's sources of target and returns the one holding the
// extreme (for latest: the greatest by its by attribute, then by key), as projected; nil
// for none.
func RecomputeBest(ctx context.Context, api Querier, table string, r *rules.CompiledRule, target plan.Key, pkValue string,
	seen func(*dynamodb.QueryOutput, error) error, do func(string, func(context.Context) error) error) (map[string]types.AttributeValue, error) {
	var best map[string]types.AttributeValue
	var bestV types.AttributeValue
	bestK := ""
	err := QuerySources(ctx, api, table, r, target, pkValue, seen, do, func(it map[string]types.AttributeValue, v types.AttributeValue) {
		if r.Kind == rules.KindLatest {
			if k := value.LatestKey(r, it); value.LatestBetter(v, k, bestV, bestK) {
				best, bestV, bestK = it, v, k
			}
		} else if value.Better(r.Kind, v, bestV) {
			best, bestV = it, v
		}
	})
	return best, err
}

// RecomputeTop queries top rule r's sources of target and returns its list.
func RecomputeTop(ctx context.Context, api Querier, table string, r *rules.CompiledRule, target plan.Key, pkValue string,
	seen func(*dynamodb.QueryOutput, error) error, do func(string, func(context.Context) error) error) ([]value.TopEntry, error) {
	var es []value.TopEntry
	err := QuerySources(ctx, api, table, r, target, pkValue, seen, do, func(it map[string]types.AttributeValue, _ types.AttributeValue) {
		if e, ok := plan.TopEntryOf(r, it); ok {
			es = value.TopKeep(es, e, r.Agg.N)
		}
	})
	return es, err
}

// QuerySources reads every source of target of rule r (max, min, latest, top) with one
// query (all its pages, projecting only what the rule reads) and calls visit with each
// one that links to target and its value.
func QuerySources(ctx context.Context, api Querier, table string, r *rules.CompiledRule, target plan.Key, pkValue string,
	seen func(*dynamodb.QueryOutput, error) error, do func(string, func(context.Context) error) error,
	visit func(map[string]types.AttributeValue, types.AttributeValue)) error {
	q := r.Extreme
	kc := expression.Key(q.Index.PartitionKey).Equal(exprval.Str(pkValue))
	if q.SKPrefix != "" {
		kc = kc.And(expression.Key(q.SKAttr).BeginsWith(q.SKPrefix))
	}
	attrs := plan.ExtremeProjection(r)
	proj := expression.NamesList(expression.Name(attrs[0]))
	for _, a := range attrs[1:] {
		proj = proj.AddNames(expression.Name(a))
	}
	e, err := expression.NewBuilder().WithKeyCondition(kc).WithProjection(proj).Build()
	if err != nil {
		return fmt.Errorf("building %s recompute query: %w", r.Kind, err)
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: e.KeyCondition(), ProjectionExpression: e.Projection(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	if q.Index.Name != "" {
		in.IndexName = aws.String(q.Index.Name)
	}
	// A global index cannot be read consistently; the table and its local indexes can.
	in.ConsistentRead = aws.Bool(!q.Global)
	for {
		var out *dynamodb.QueryOutput
		err := do("querying the sources of "+target.PK+" "+target.SK, func(ctx context.Context) error {
			var err error
			out, err = api.Query(ctx, in)
			return seen(out, err)
		})
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			if t, v, ok := plan.ExtremeSource(r, it); ok && t == target {
				visit(it, v)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// writeExtreme writes the recomputed value (REMOVE for none) on condition that the target
// still holds what was read, so a raise that landed since is not overwritten.
func (r *run) writeExtreme(g *plan.ExtremeGroup, stored, best types.AttributeValue) error {
	x := r.x
	name := expression.Name(g.Rule.Agg.Attribute)
	cond := exists(x.set.Table.PartitionKey).And(expression.AttributeNotExists(name))
	if stored != nil {
		cond = exists(x.set.Table.PartitionKey).And(name.Equal(exprval.Of(stored)))
	}
	ub := expression.Remove(name)
	if best != nil {
		ub = expression.Set(name, exprval.Of(best))
	}
	ub = ub.Add(expression.Name(g.Rule.ExtremeVersion), exprval.Num("1"))
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building %s write: %w", g.Rule.Kind, err)
	}
	err = r.updateItem("writing the recomputed "+g.Rule.Agg.Attribute+" of "+g.Target.PK+" "+g.Target.SK, x.key(g.Target), e, GuardExtreme)
	return err
}
