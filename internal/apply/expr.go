package apply

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/denorm/denorm/internal/exprval"
)

var (
	val = exprval.Of
	num = exprval.Num
)

// newer is the version guard: no version yet, or an older one.
func newer(attr, version string) expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(attr)).Or(expression.Name(attr).LessThan(num(version)))
}

func exists(attr string) expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name(attr))
}
