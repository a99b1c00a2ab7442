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
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// A fan-out's later pages run from a job item whose stream records live in another
// partition, so on DynamoDB they can lag behind a newer version of the same source that
// finished inline. A copy a pull wrote meanwhile must then carry a version, or the older
// job's guard would let its value through. The version registry item of (rule, source)
// records the newest version a push started with and its values: a pull stamps that
// version when the source still holds those values.

// RegistryPrefix starts the partition key of version registry items. They are not job
// items, so the event filter keeps their stream records from the function.
const RegistryPrefix = rules.RegistryPrefix

func registryKey(rule, srcPK, srcSK string) plan.Key {
	return plan.Key{PK: RegistryPrefix + rule + "#" + srcPK + "#" + srcSK, SK: RegistryPrefix}
}

// register records f's version and values before its pages are written; an older version
// never replaces a newer one.
func (r *run) register(f *plan.FanOut) error {
	x := r.x
	item := x.key(registryKey(f.Rule.Name, f.Source.PK, f.Source.SK))
	item[jobVersion] = &types.AttributeValueMemberN{Value: f.Version}
	set := map[string]types.AttributeValue{}
	for _, a := range f.Set {
		set[a.Name] = a.Value
	}
	item[jobSet] = &types.AttributeValueMemberM{Value: set}
	cond := expression.AttributeNotExists(expression.Name(x.set.Table.PartitionKey)).
		Or(expression.Name(jobVersion).LessThan(num(f.Version)))
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return err
	}
	err = r.do("registering version of "+f.Source.PK, func(ctx context.Context) error {
		out, err := x.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(x.table), Item: item,
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardRegistry, out, err)
		return err
	})
	if _, ok := retry.CondFailed(err); ok {
		return nil // a newer version registered already (a replay)
	}
	return err
}

// registeredVersion returns the version to stamp on a pulled copy: the newest version a
// push started with, if the source's current values are that push's values ("" otherwise).
func (r *run) registeredVersion(p *plan.Pull, src map[string]types.AttributeValue) (string, error) {
	reg, err := r.readRegistry(p)
	if err != nil || reg == nil {
		return "", err
	}
	v, _ := reg[jobVersion].(*types.AttributeValueMemberN)
	set, _ := reg[jobSet].(*types.AttributeValueMemberM)
	if v == nil || set == nil {
		return "", fmt.Errorf("version registry of %s for rule %q is malformed", p.Source.PK, p.Rule.Name)
	}
	c := p.Rule.Copy
	for _, t := range c.SetOrder {
		if !value.Equal(set.Value[t], src[c.Set[t]]) {
			return "", nil // the source changed since: that push is still to come and will win
		}
	}
	return v.Value, nil
}

// readRegistry reads p's source's version registry (once per batch, shared as readOnce is).
func (r *run) readRegistry(p *plan.Pull) (map[string]types.AttributeValue, error) {
	return r.readOnce("reading version of "+p.Source.PK, registryKey(p.Rule.Name, p.Source.PK, p.Source.SK), nil, nil)
}
