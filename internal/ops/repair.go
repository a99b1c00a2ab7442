package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// Outcome is what a repair did.
type Outcome int

// Outcomes of a repair.
const (
	// Repaired: the target now holds what its rule says.
	Repaired Outcome = iota
	// Resolved: read again, the target was right after all (something wrote it since the scan).
	Resolved
	// Conflict: the target kept changing under the repair; left alone, verify again.
	Conflict
	// Failed: DynamoDB refused the write for another reason (see the error).
	Failed
)

// maxAttempts bounds a copy or mirror repair's re-read-and-retry loop.
const maxAttempts = 3

// repairer fixes drift with conditional writes that are safe while the stream processor
// runs: each write is conditional on the target still being as last read, and copies and
// mirrors are recomputed from a consistent read of their source whenever the scanned
// source could be older than what the target holds.
type repairer struct {
	db *db
	w  *Worker
}

func (rp *repairer) repair(ctx context.Context, d *Drift) (Outcome, error) {
	switch rp.w.ev.rules[d.Rule].r.Kind {
	case rules.KindCopy:
		return rp.copy(ctx, d)
	case rules.KindMirror:
		return rp.mirror(ctx, d)
	case rules.KindCount, rules.KindSum:
		return Failed, errors.New("counts and sums are decided per target (runner.counters), not repaired one by one")
	case rules.KindDistinct:
		return Failed, errors.New("distinct targets are decided with their reference items (runner.decideDistinct), not repaired one by one")
	case rules.KindMax, rules.KindMin:
		return rp.extreme(ctx, d)
	case rules.KindLatest:
		return rp.latest(ctx, d)
	case rules.KindTop:
		return rp.top(ctx, d)
	default:
		return Failed, fmt.Errorf("%w %q", ErrUnhandledKind, rp.w.ev.rules[d.Rule].r.Kind)
	}
}

// fresh reports whether a copy target never received a copy: none of the rule's attributes
// and no version. Writing the scanned source's values is then safe without re-reading it:
// if the source changed since, its push has not landed (the version would be there) and
// will land after this write, which leaves the version alone.
func fresh(r *rules.CompiledRule, target record.Item) bool {
	if target[r.VersionAttr] != nil {
		return false
	}
	for _, t := range r.Copy.SetOrder {
		if target[t] != nil {
			return false
		}
	}
	return true
}

// copy sets or removes a copy target's attributes, or deletes it (onSourceDelete: delete),
// on condition that its version, copied attributes and links to its source are as read.
// The version attribute is not advanced, so a later push from the stream still lands.
func (rp *repairer) copy(ctx context.Context, d *Drift) (Outcome, error) {
	r := rp.w.ev.rules[d.Rule].r
	pk := rp.db.spec.PartitionKey
	target, source := d.Got, d.Source
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if target == nil {
			return Resolved, nil // deleted since
		}
		vals, found := d.Values, d.SourceFound
		if attempt > 0 {
			// Read again, the target may have been re-linked to another source.
			var err error
			if source, err = rp.w.copySource(d.Rule, target); err != nil {
				return Failed, err
			}
		}
		if attempt > 0 || !found || !fresh(r, target) {
			src, err := rp.db.get(ctx, source)
			if err != nil {
				return Failed, err
			}
			if vals, found, err = rp.w.copyValues(d.Rule, src); err != nil {
				return Failed, err
			}
		}
		attrs, del := copyDiff(r, target, vals, found)
		if len(attrs) == 0 && !del {
			return Resolved, nil
		}
		cond := expression.AttributeExists(expression.Name(pk)).And(unchanged(r.VersionAttr, target[r.VersionAttr]))
		for _, t := range r.Copy.SetOrder {
			cond = cond.And(unchanged(t, target[t]))
		}
		// The attributes that tie the target to its source: re-linked to another source
		// since it was read, the target is that source's business (its pull fills it).
		for _, a := range r.TargetLinks {
			if a != pk && a != rp.db.spec.SortKey {
				cond = cond.And(unchanged(a, target[a]))
			}
		}
		var err error
		if del {
			err = rp.db.remove(ctx, d.Key, cond)
		} else {
			err = rp.db.update(ctx, d.Key, setRemove(attrs), cond)
		}
		if err == nil {
			return Repaired, nil
		}
		if !retry.Refused(err) {
			return Failed, err
		}
		if target, err = rp.db.get(ctx, d.Key); err != nil {
			return Failed, err
		}
	}
	return Conflict, nil
}

// mirror creates, updates or deletes a mirror from a consistent read of its source, with
// UpdateItem like the stream processor (attributes other rules copied onto the mirror stay)
// and without advancing its version.
func (rp *repairer) mirror(ctx context.Context, d *Drift) (Outcome, error) {
	r := rp.w.ev.rules[d.Rule].r
	spec := rp.db.spec
	target := d.Got
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var want record.Item
		if d.HasSource {
			src, err := rp.db.get(ctx, d.Source)
			if err != nil {
				return Failed, err
			}
			k, item, ok, err := rp.w.mirrorOf(d.Rule, src)
			if err != nil {
				return Failed, err
			}
			if ok && k == d.Key {
				want = item
			}
		}
		var err error
		switch {
		case target == nil && want == nil:
			return Resolved, nil
		case want == nil:
			cond := expression.AttributeExists(expression.Name(spec.PartitionKey)).And(unchanged(r.VersionAttr, target[r.VersionAttr]))
			err = rp.db.remove(ctx, d.Key, cond)
		case target == nil:
			var ub expression.UpdateBuilder
			for _, k := range sortedAttrs(want) {
				if k != spec.PartitionKey && k != spec.SortKey {
					ub = ub.Set(expression.Name(k), val(want[k]))
				}
			}
			err = rp.db.update(ctx, d.Key, ub, expression.AttributeNotExists(expression.Name(spec.PartitionKey)))
		default:
			attrs := mirrorDiff(spec, r, target, want)
			if len(attrs) == 0 {
				return Resolved, nil
			}
			cond := expression.AttributeExists(expression.Name(spec.PartitionKey)).And(unchanged(r.VersionAttr, target[r.VersionAttr]))
			for _, a := range attrs {
				cond = cond.And(unchanged(a.Name, a.Got))
			}
			err = rp.db.update(ctx, d.Key, setRemove(attrs), cond)
		}
		if err == nil {
			return Repaired, nil
		}
		if !retry.Refused(err) {
			return Failed, err
		}
		if target, err = rp.db.get(ctx, d.Key); err != nil {
			return Failed, err
		}
	}
	return Conflict, nil
}

// setRemove sets each attribute to its wanted value, or removes it when it should be absent.
func setRemove(attrs []AttrDiff) expression.UpdateBuilder {
	var ub expression.UpdateBuilder
	for _, a := range attrs {
		if a.Want == nil {
			ub = ub.Remove(expression.Name(a.Name))
		} else {
			ub = ub.Set(expression.Name(a.Name), val(a.Want))
		}
	}
	return ub
}

// extreme recomputes a max or min target from one query of its sources, as the stream
// processor does, and writes the result on condition that the target's attribute is still
// as scanned: a raise that landed since is not overwritten (the drift is then re-checked).
func (rp *repairer) extreme(ctx context.Context, d *Drift) (Outcome, error) {
	r := rp.w.ev.rules[d.Rule].r
	attr := r.Agg.Attribute
	src, err := rp.bestSource(ctx, d)
	if err != nil {
		return Failed, err
	}
	var best types.AttributeValue
	if src != nil {
		best = value.ExtremeValue(r, src)
	}
	got := d.Got[attr]
	if sameExtreme(got, best) {
		return Resolved, nil
	}
	ub := expression.Remove(expression.Name(attr))
	if best != nil {
		ub = expression.Set(expression.Name(attr), val(best))
	}
	// Raised like the processor's writes, so that the processor does not take the repair's
	// record for an application's write of the target and recompute it again.
	ub = ub.Add(expression.Name(r.ExtremeVersion), expression.Value(1))
	cond := expression.AttributeExists(expression.Name(rp.db.spec.PartitionKey)).And(unchanged(attr, got))
	if d.Got == nil { // a bucket item its sources create
		if best == nil {
			return Resolved, nil
		}
		cond = unchanged(attr, nil)
		ub = withBucketTTL(ub, rp.db.spec, r, d.Key)
	}
	if err := rp.db.update(ctx, d.Key, ub, cond); err == nil {
		return Repaired, nil
	} else if !retry.Refused(err) {
		return Failed, err
	}
	return Conflict, nil
}

// bestSource finds, with one query as the stream processor does, the source of drifted
// target d that holds its rule's extreme (nil: none).
func (rp *repairer) bestSource(ctx context.Context, d *Drift) (map[string]types.AttributeValue, error) {
	var best map[string]types.AttributeValue
	err := rp.querySources(ctx, d, func(r *rules.CompiledRule, pk string, seen func(*dynamodb.QueryOutput, error) error, do func(string, func(context.Context) error) error) (err error) {
		best, err = apply.RecomputeBest(ctx, rp.db.api, rp.db.table, r, d.Key, pk, seen, do)
		return err
	})
	return best, err
}

// querySources renders the query of the drifted target's sources and runs q with it, its
// capacity counted and its calls retried.
func (rp *repairer) querySources(ctx context.Context, d *Drift, q func(r *rules.CompiledRule, pk string, seen func(*dynamodb.QueryOutput, error) error, do func(string, func(context.Context) error) error) error) error {
	r := rp.w.ev.rules[d.Rule].r
	got := d.Got
	if got == nil { // a missing bucket item: its key renders the query
		got = record.Item{rp.db.spec.PartitionKey: &types.AttributeValueMemberS{Value: d.Key.PK}}
		if rp.db.spec.SortKey != "" {
			got[rp.db.spec.SortKey] = &types.AttributeValueMemberS{Value: d.Key.SK}
		}
	}
	b, ok := r.Target.Match(got, nil)
	if !ok {
		return fmt.Errorf("%s %s is not a %s", d.Key.PK, d.Key.SK, r.Target.Name)
	}
	pk, err := b.Render(r.Extreme.PK)
	if err != nil {
		return fmt.Errorf("rendering the query of %s %s's sources: %w", d.Key.PK, d.Key.SK, err)
	}
	return q(r, pk,
		func(out *dynamodb.QueryOutput, err error) error {
			if out != nil {
				rp.db.consumed(false, out.ConsumedCapacity)
			}
			return err
		},
		func(what string, op func(context.Context) error) error { return withRetry(ctx, what, op) })
}

// top recomputes a top list with one query and writes it on condition that the list's
// version is still the one scanned.
func (rp *repairer) top(ctx context.Context, d *Drift) (Outcome, error) {
	var next []value.TopEntry
	err := rp.querySources(ctx, d, func(r *rules.CompiledRule, pk string, seen func(*dynamodb.QueryOutput, error) error, do func(string, func(context.Context) error) error) (err error) {
		next, err = apply.RecomputeTop(ctx, rp.db.api, rp.db.table, r, d.Key, pk, seen, do)
		return err
	})
	if err != nil {
		return Failed, err
	}
	r := rp.w.ev.rules[d.Rule].r
	if d.Got == nil && len(next) == 0 {
		return Resolved, nil // a bucket item no source creates
	}
	e, err := apply.TopWrite(rp.db.spec, r, d.Key, d.Got, next)
	if err != nil {
		return Failed, err
	}
	return rp.conditional(ctx, d, e)
}

// latest recomputes a latest target like extreme does a max: the source it should copy is
// found with one query, and written on condition that the target still holds the by value
// and key it was scanned with.
func (rp *repairer) latest(ctx context.Context, d *Drift) (Outcome, error) {
	r := rp.w.ev.rules[d.Rule].r
	best, err := rp.bestSource(ctx, d)
	if err != nil {
		return Failed, err
	}
	if d.Got == nil && best == nil {
		return Resolved, nil // a bucket item no source creates
	}
	e, err := apply.LatestWrite(rp.db.spec, r, d.Key, d.Got, best)
	if err != nil {
		return Failed, err
	}
	return rp.conditional(ctx, d, e)
}

// conditional writes e's update to the drifted target: Repaired, or Conflict when its
// condition (the target as scanned) no longer holds.
func (rp *repairer) conditional(ctx context.Context, d *Drift, e expression.Expression) (Outcome, error) {
	err := rp.db.write(ctx, "repairing "+d.Key.PK+" "+d.Key.SK, func(ctx context.Context) (*types.ConsumedCapacity, error) {
		out, err := rp.db.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(rp.db.table), Key: rp.db.key(d.Key),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if out != nil {
			return out.ConsumedCapacity, err
		}
		return nil, err
	})
	if err == nil {
		return Repaired, nil
	}
	if retry.Refused(err) {
		return Conflict, nil
	}
	return Failed, err
}
