// Package value holds the values Denorm compares, adds and stores: DynamoDB attribute
// values compared as DynamoDB compares them (Equal, Compare), exact decimal numbers for
// counts and sums (Number), the value a source gives a max, min or latest rule
// (ExtremeValue, LatestKey), and top lists as stored on a target (TopEntry, DecodeTop,
// TopNext). It is pure: no I/O. The planner, the processor and the operations engine share
// it.
package value

import (
	"bytes"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Equal reports whether two attribute values are the same DynamoDB value (nil = absent).
// Numbers compare by value ("1.0" equals "1"); sets compare as sets.
func Equal(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		return ok && SameNumber(x.Value, y.Value)
	case *types.AttributeValueMemberBOOL:
		y, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberB:
		y, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberL:
		y, ok := b.(*types.AttributeValueMemberL)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for i := range x.Value {
			if !Equal(x.Value[i], y.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for k, v := range x.Value {
			if !Equal(v, y.Value[k]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberSS:
		y, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(x.Value, y.Value, func(p, q string) bool { return p == q })
	case *types.AttributeValueMemberNS:
		y, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(x.Value, y.Value, SameNumber)
	case *types.AttributeValueMemberBS:
		y, ok := b.(*types.AttributeValueMemberBS)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for _, p := range x.Value {
			found := false
			for _, q := range y.Value {
				if bytes.Equal(p, q) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return false
}

func sameSet(x, y []string, eq func(a, b string) bool) bool {
	if len(x) != len(y) {
		return false
	}
	for _, p := range x {
		found := false
		for _, q := range y {
			if eq(p, q) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// SameNumber reports whether two DynamoDB numbers are the same value ("1.0" and "1").
func SameNumber(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := ParseNumber(a)
	y, err2 := ParseNumber(b)
	return err1 == nil && err2 == nil && x.Sub(y).IsZero()
}

// TypeName is how messages name v's DynamoDB type ("string", "number set").
func TypeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "string"
	case *types.AttributeValueMemberN:
		return "number"
	case *types.AttributeValueMemberB:
		return "binary"
	case *types.AttributeValueMemberBOOL:
		return "boolean"
	case *types.AttributeValueMemberNULL:
		return "null"
	case *types.AttributeValueMemberL:
		return "list"
	case *types.AttributeValueMemberM:
		return "map"
	case *types.AttributeValueMemberSS:
		return "string set"
	case *types.AttributeValueMemberNS:
		return "number set"
	case *types.AttributeValueMemberBS:
		return "binary set"
	}
	return fmt.Sprintf("%T", v)
}

// Brief renders a value for a message: strings quoted, numbers and booleans bare, null,
// other types named in angle brackets.
func Brief(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("%q", x.Value)
	case *types.AttributeValueMemberN:
		return x.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint(x.Value)
	case *types.AttributeValueMemberNULL:
		return "null"
	}
	return "<" + TypeName(v) + ">"
}
