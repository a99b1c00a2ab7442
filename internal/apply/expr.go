package apply

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// raw passes an SDK attribute value through the expression builder unchanged (the builder
// would otherwise marshal the Go struct itself).
type raw struct{ v types.AttributeValue }

func (r raw) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) { return r.v, nil }

func val(v types.AttributeValue) expression.ValueBuilder { return expression.Value(raw{v}) }

func num(s string) expression.ValueBuilder { return val(&types.AttributeValueMemberN{Value: s}) }

func str(s string) expression.ValueBuilder { return val(&types.AttributeValueMemberS{Value: s}) }

// newer is the version guard: no version yet, or an older one.
func newer(attr, version string) expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(attr)).Or(expression.Name(attr).LessThan(num(version)))
}

func exists(attr string) expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name(attr))
}
