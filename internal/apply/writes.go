package apply

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/retry"
)

// write applies one version-guarded copy or mirror write. A failed guard means a newer
// version already landed (or the copy target does not exist): nothing to do.
func (r *run) write(w *plan.Write) error {
	ver := w.Rule.VersionAttr
	var err error
	switch {
	case w.Delete:
		err = r.deleteGuarded(w.Target, ver, w.Version, w.Link)
	case w.Item != nil:
		err = r.mirrorWrite(w)
	default:
		var guards []plan.AttrValue
		if w.Link != nil {
			guards = []plan.AttrValue{*w.Link}
		}
		err = r.update(w.Target, ver, w.Version, w.Set, w.Remove, "", guards)
	}
	if _, ok := retry.CondFailed(err); ok {
		r.count(func(s *Stats) { s.Stale++ })
		return nil
	}
	return err
}

// update sets and removes copied attributes on an existing target. With seen == "" it is
// a push guarded by the version and advancing it; otherwise (a pull) it requires the
// version to still be seen ("-" for absent) and leaves it alone. Every guard must hold
// too: its attribute equals its value, or is absent when the value is nil.
func (r *run) update(t plan.Key, ver, version string, set []plan.AttrValue, remove []string, seen string, guards []plan.AttrValue) error {
	x := r.x
	var ub expression.UpdateBuilder
	for _, a := range set {
		ub = ub.Set(expression.Name(a.Name), val(a.Value))
	}
	for _, a := range remove {
		ub = ub.Remove(expression.Name(a))
	}
	cond := exists(x.set.Table.PartitionKey)
	switch seen {
	case "":
		ub = ub.Set(expression.Name(ver), num(version))
		cond = cond.And(newer(ver, version))
	case "-":
		cond = cond.And(expression.AttributeNotExists(expression.Name(ver)))
	default:
		cond = cond.And(expression.Name(ver).Equal(num(seen)))
	}
	for _, g := range guards {
		if g.Value == nil {
			cond = cond.And(expression.AttributeNotExists(expression.Name(g.Name)))
		} else {
			cond = cond.And(expression.Name(g.Name).Equal(val(g.Value)))
		}
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building copy update: %w", err)
	}
	guard := GuardVersion
	if seen != "" {
		guard = GuardPull
	}
	return r.updateItem("updating "+t.PK+" "+t.SK, x.key(t), e, guard)
}

func (r *run) deleteGuarded(t plan.Key, ver, version string, link *plan.AttrValue) error {
	x := r.x
	cond := newer(ver, version)
	if link != nil {
		cond = cond.And(expression.Name(link.Name).Equal(val(link.Value)))
	}
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building delete: %w", err)
	}
	return r.do("deleting "+t.PK+" "+t.SK, func(ctx context.Context) error {
		out, err := x.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(x.table), Key: x.key(t),
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardVersion, out, err)
		return err
	})
}

// updateItem makes one conditional UpdateItem of the item at key with e's update and
// condition, counting its capacity and, when its condition refuses it, the refusal under
// guard g.
func (r *run) updateItem(what string, key map[string]types.AttributeValue, e expression.Expression, g Guard) error {
	x := r.x
	return r.do(what, func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(x.table), Key: key,
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		r.written(g, out, err)
		return err
	})
}

// getItem reads the item at key with one consistent GetItem projecting names (every
// attribute without names); nil when there is none.
func (r *run) getItem(what string, key map[string]types.AttributeValue, names ...string) (map[string]types.AttributeValue, error) {
	x := r.x
	in := &dynamodb.GetItemInput{TableName: aws.String(x.table), Key: key, ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	if len(names) > 0 {
		proj := expression.NamesList(expression.Name(names[0]))
		for _, n := range names[1:] {
			proj = proj.AddNames(expression.Name(n))
		}
		e, err := expression.NewBuilder().WithProjection(proj).Build()
		if err != nil {
			return nil, fmt.Errorf("building the projection of %s: %w", what, err)
		}
		in.ProjectionExpression, in.ExpressionAttributeNames = e.Projection(), e.Names()
	}
	var item map[string]types.AttributeValue
	err := r.do(what, func(ctx context.Context) error {
		out, err := x.api.GetItem(ctx, in)
		if out != nil {
			r.consumed(false, out.ConsumedCapacity)
			item = out.Item
		}
		return err
	})
	return item, err
}

// written records a single-item write's consumed capacity. A failed condition still costs
// a write (DynamoDB charges it), counted as one unit since the error carries no figure.
func (r *run) written(g Guard, out any, err error) {
	switch o := out.(type) {
	case *dynamodb.PutItemOutput:
		if o != nil {
			r.consumed(true, o.ConsumedCapacity)
			return
		}
	case *dynamodb.UpdateItemOutput:
		if o != nil {
			r.consumed(true, o.ConsumedCapacity)
			return
		}
	case *dynamodb.DeleteItemOutput:
		if o != nil {
			r.consumed(true, o.ConsumedCapacity)
			return
		}
	}
	if _, ok := retry.CondFailed(err); ok {
		one := 1.0
		r.consumed(true, &types.ConsumedCapacity{CapacityUnits: &one})
		r.count(func(s *Stats) { s.Refused[g]++ })
	}
}

// mirrorWrite creates or updates a mirror item with UpdateItem rather than PutItem, so
// attributes other rules keep on the same item (a name copied into a member item) survive.
func (r *run) mirrorWrite(w *plan.Write) error {
	x := r.x
	spec := x.set.Table
	var ub expression.UpdateBuilder
	for k, v := range w.Item {
		if k != spec.PartitionKey && k != spec.SortKey {
			ub = ub.Set(expression.Name(k), val(v))
		}
	}
	for _, a := range w.Rule.Mirror.Attributes {
		if _, ok := w.Item[a]; !ok {
			ub = ub.Remove(expression.Name(a))
		}
	}
	ub = ub.Set(expression.Name(w.Rule.VersionAttr), num(w.Version))
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(newer(w.Rule.VersionAttr, w.Version)).Build()
	if err != nil {
		return fmt.Errorf("building mirror write: %w", err)
	}
	return r.updateItem("writing mirror "+w.Target.PK+" "+w.Target.SK, x.key(w.Target), e, GuardVersion)
}
