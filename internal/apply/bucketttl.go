package apply

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
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
// Parks are not bucket items: call it for the target's key only.
func withBucketTTL(ub expression.UpdateBuilder, spec table.Spec, key map[string]types.AttributeValue, attrs []plan.AttrAmount) expression.UpdateBuilder {
	if spec.TTLAttribute == "" {
		return ub
	}
	pk, _ := key[spec.PartitionKey].(*types.AttributeValueMemberS)
	if pk == nil {
		return ub
	}
	sk := ""
	if v, ok := key[spec.SortKey].(*types.AttributeValueMemberS); ok {
		sk = v.Value
	}
	for _, a := range attrs {
		if a.Rule == nil {
			continue
		}
		if exp, ok := a.Rule.Expiry(pk.Value, sk); ok {
			name := expression.Name(spec.TTLAttribute)
			return ub.Set(name, expression.IfNotExists(name, num(strconv.FormatInt(exp.Unix(), 10))))
		}
	}
	return ub
}
