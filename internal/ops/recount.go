package ops

import (
	"context"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
)

// sourceQuery reads the sources of a count or sum target from the target's key.
type sourceQuery struct {
	index      string         // "" for the table
	pkAttr     string         // the queried partition key
	pk         *keys.Template // the source's template on it: rendered from the target's key
	skAttr     string
	skPrefix   string // the source's literal prefix on the sort key ("" for none)
	consistent bool
}

// Recountable reports whether the backfill recounts rule r's targets from a query of their
// sources (exact while the stream runs, docs/operations.md) rather than from a scan's total.
func Recountable(spec table.Spec, r *rules.CompiledRule) bool { return sourceQueryOf(spec, r) != nil }

// sourceQueryOf returns how the sources of count or sum rule r are queried from one of its
// targets, or nil when only a scan finds them. Every variable of the queried partition key
// must be a variable of the target's key templates: a source adding to a target has the
// target's values for them, so it is in the partition the target renders.
func sourceQueryOf(spec table.Spec, r *rules.CompiledRule) *sourceQuery {
	if r.Kind != rules.KindCount && r.Kind != rules.KindSum {
		// A distinct's reference items are decided from the scan alone: one moved during
		// the run is left for the next (recounting one value would read every source).
		return nil
	}
	// A target's key may hold a variable only as a time bucket ({createdAt:day}), which
	// renders a partition holding the same bucket, not one holding the time itself.
	vars := keyVars(r.Target.PK, r.Target.SK)
	covered := func(t *keys.Template) bool { return rendersFrom(t, vars) }
	if covered(r.Source.PK) {
		q := &sourceQuery{pkAttr: spec.PartitionKey, pk: r.Source.PK, skAttr: spec.SortKey, consistent: true}
		if r.Source.SK != nil {
			q.skPrefix = r.Source.SK.Prefix()
		}
		return q
	}
	for _, g := range spec.GlobalIndexes {
		idx, _ := spec.Index(g.Name)
		if idx.Projection != table.ProjectAll {
			continue // the planner needs every attribute a rule reads
		}
		pk, sk := keyTemplate(r.Source, idx.PartitionKey), keyTemplate(r.Source, idx.SortKey)
		// A source without the index's keys is not in the index: they must be on every source.
		if pk == nil || pk.Sparse || !covered(pk.T) || idx.SortKey != "" && (sk == nil || sk.Sparse) {
			continue
		}
		q := &sourceQuery{index: g.Name, pkAttr: idx.PartitionKey, pk: pk.T, skAttr: idx.SortKey}
		if sk != nil {
			q.skPrefix = sk.T.Prefix()
		}
		return q
	}
	return nil
}

func keyTemplate(e *rules.EntityType, attr string) *rules.KeyTemplate {
	for i := range e.Keys {
		if e.Keys[i].Attr == attr {
			return &e.Keys[i]
		}
	}
	return nil
}

// recountTotal reads the sources of rule i's target k and returns their count or sum.
func (rp *repairer) recountTotal(ctx context.Context, i int, k plan.Key) (value.Number, error) {
	rs := rp.w.ev.rules[i]
	r, q := rs.r, rs.query
	vals, ok := r.Target.PK.Match(k.PK, nil)
	if ok && r.Target.SK != nil {
		vals, ok = r.Target.SK.Match(k.SK, vals)
	}
	total := value.Int(0)
	if !ok {
		return total, nil // not a target of the rule: nothing adds to it
	}
	pk, err := q.pk.Render(func(name string) (string, bool) {
		for j := 0; j+1 < len(vals); j += 2 {
			if vals[j] == name {
				return vals[j+1], true
			}
		}
		return "", false
	})
	if err != nil {
		return total, err
	}
	items, err := rp.db.query(ctx, q.index, q.pkAttr, pk, q.skAttr, q.skPrefix, q.consistent)
	if err != nil {
		return total, err
	}
	for _, it := range items {
		if rp.w.entity(it) != r.Source.Name {
			continue
		}
		// An item the rule cannot evaluate adds nothing, as in the scan (it is reported there).
		p, err := rp.w.insert(i, it)
		if err != nil {
			continue
		}
		for _, d := range p.Deltas {
			if d.Target == k {
				total = total.Add(d.Amount)
			}
		}
	}
	return total, nil
}
