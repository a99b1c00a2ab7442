// Package exprval passes SDK attribute values through the expression builder unchanged.
// expression.Value marshals its argument with attributevalue, which would encode a
// *types.AttributeValueMemberS as a map of its Go fields.
package exprval

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type raw struct{ v types.AttributeValue }

func (r raw) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) { return r.v, nil }

// Of returns an expression operand for v as it is.
func Of(v types.AttributeValue) expression.ValueBuilder { return expression.Value(raw{v}) }

// Num returns an expression operand for the number s.
func Num(s string) expression.ValueBuilder { return Of(&types.AttributeValueMemberN{Value: s}) }

// Str returns an expression operand for the string s.
func Str(s string) expression.ValueBuilder { return Of(&types.AttributeValueMemberS{Value: s}) }
