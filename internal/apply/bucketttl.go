package apply

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
)

// withBucketTTL adds to ub, a counter update of the target at key, the expiry of a time
// bucket item: SET <ttlAttribute> = if_not_exists(<ttlAttribute>, <expiry>), when a rule of
// attrs has a ttl (rules.CompiledRule.Expiry: the ttl after the bucket ends). The item gets
// it from the write that creates it; an existing item keeps the one it has (the
// application may have changed it), and one without gets it from its next delta. The
// expiry is a function of the rule and the target's key, so a redelivered or split batch
// writes the same value: no guard needed beyond the update's own.
//
// Call it with the key of the target whose state is written.
func withBucketTTL(ub expression.UpdateBuilder, spec table.Spec, key map[string]types.AttributeValue, attrs []plan.AttrAmount) expression.UpdateBuilder {
	pk, _ := key[spec.PartitionKey].(*types.AttributeValueMemberS)
	if pk == nil {
		return ub
	}
	k := plan.Key{PK: pk.Value}
	if v, ok := key[spec.SortKey].(*types.AttributeValueMemberS); ok {
		k.SK = v.Value
	}
	for _, a := range attrs {
		if a.Rule != nil {
			if out, ok := expiryOf(ub, spec, a.Rule, k); ok {
				return out
			}
		}
	}
	return ub
}

// withExpiry adds to ub the expiry of rule r's bucket item at k (none when r has no ttl or
// the table no TTL attribute), unless the item has one: for max and min, whose first raise
// creates the item.
func withExpiry(ub expression.UpdateBuilder, spec table.Spec, r *rules.CompiledRule, k plan.Key) expression.UpdateBuilder {
	out, _ := expiryOf(ub, spec, r, k)
	return out
}

// expiryOf is withExpiry that also reports whether r gives k an expiry (the key is one of
// r's bucket items and r has a ttl), working the expiry out once.
func expiryOf(ub expression.UpdateBuilder, spec table.Spec, r *rules.CompiledRule, k plan.Key) (expression.UpdateBuilder, bool) {
	exp, ok := r.Expiry(k.PK, k.SK)
	if !ok {
		return ub, false
	}
	if spec.TTLAttribute == "" {
		return ub, true
	}
	name := expression.Name(spec.TTLAttribute)
	return ub.Set(name, expression.IfNotExists(name, num(strconv.FormatInt(exp.Unix(), 10)))), true
}
