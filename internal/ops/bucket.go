package ops

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
)

// Time buckets in verify and backfill. The expected totals come from the planner like every
// count's, with the scan's time as the records' time, so a source in a bucket whose ttl has
// passed adds to nothing, as in the stream processor. Such a bucket item, if DynamoDB has not
// deleted it yet (TTL deletes within days of expiry), is neither checked nor repaired, and a
// bucket item a repair creates gets its TTL as the stream processor writes it.

// expiredBucket reports whether k is a bucket item of count or sum rule r whose ttl has
// passed: DynamoDB deletes it, so nothing is expected of it.
func (ev *Evaluator) expiredBucket(r *rules.CompiledRule, k plan.Key) bool {
	exp, ok := r.Expiry(k.PK, k.SK)
	return ok && !exp.After(ev.now())
}

// withBucketTTL adds the TTL of a bucket item to a repair's update: the end of its bucket
// plus its rule's ttl, in the table's TTL attribute unless the item has one (an item the
// repair creates, or one whose TTL was lost).
func withBucketTTL(ub expression.UpdateBuilder, spec table.Spec, r *rules.CompiledRule, k plan.Key) expression.UpdateBuilder {
	exp, ok := r.Expiry(k.PK, k.SK)
	if !ok || spec.TTLAttribute == "" {
		return ub
	}
	name := expression.Name(spec.TTLAttribute)
	return ub.Set(name, expression.IfNotExists(name, expression.Value(numberAV(value.Int(exp.Unix())))))
}

// keyVars returns the variables of a target's key templates, each with the finest form the
// target's key holds it in: 0 for the value itself, else the bucket width.
func keyVars(ts ...*keys.Template) map[string]keys.Width {
	out := map[string]keys.Width{}
	for _, t := range ts {
		if t == nil {
			continue
		}
		for _, p := range t.Parts() {
			if p.Var == "" {
				continue
			}
			if w, seen := out[p.Var]; !seen || p.Bucket < w {
				out[p.Var] = p.Bucket
			}
		}
	}
	return out
}

// rendersFrom reports whether template t renders from values a target's key holds (vars,
// from keyVars): a variable held as itself renders anything, one held only as a bucket
// renders only a bucket as coarse or coarser (a day gives its month, not its hour or the
// time itself).
func rendersFrom(t *keys.Template, vars map[string]keys.Width) bool {
	for _, p := range t.Parts() {
		if p.Var == "" {
			continue
		}
		w, ok := vars[p.Var]
		if !ok || (w != 0 && (p.Bucket == 0 || p.Bucket < w)) {
			return false
		}
	}
	return true
}
