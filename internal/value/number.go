package value

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Number is an exact decimal delta. Counts and integral sums stay in an int64 (no
// allocation); anything else (fractions, values beyond int64) uses big.Rat.
type Number struct {
	i int64
	r *big.Rat
}

// Int returns n as a Number.
func Int(n int64) Number { return Number{i: n} }

// ParseNumber parses a DynamoDB number ("12", "-1.5", "1e3").
func ParseNumber(s string) (Number, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Number{i: i}, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return Number{}, fmt.Errorf("%q is not a number", s)
	}
	return Number{r: r}, nil
}

func (n Number) rat() *big.Rat {
	if n.r != nil {
		return n.r
	}
	return new(big.Rat).SetInt64(n.i)
}

// Add returns n+m.
func (n Number) Add(m Number) Number {
	if n.r == nil && m.r == nil {
		s := n.i + m.i
		// Overflow: signs of operands equal and differ from the result's.
		if (n.i >= 0) == (m.i >= 0) && (s >= 0) != (n.i >= 0) {
			return Number{r: new(big.Rat).Add(n.rat(), m.rat())}
		}
		return Number{i: s}
	}
	return norm(new(big.Rat).Add(n.rat(), m.rat()))
}

// Neg returns -n.
func (n Number) Neg() Number {
	if n.r == nil && (n.i == 0 || n.i != -n.i) {
		return Number{i: -n.i}
	}
	return norm(new(big.Rat).Neg(n.rat()))
}

// Sub returns n-m.
func (n Number) Sub(m Number) Number { return n.Add(m.Neg()) }

// Sign is -1, 0 or +1 as n is negative, zero or positive.
func (n Number) Sign() int {
	if n.r != nil {
		return n.r.Sign()
	}
	switch {
	case n.i < 0:
		return -1
	case n.i > 0:
		return 1
	}
	return 0
}

// Cmp is -1, 0 or +1 as n is less than, equal to or greater than m.
func (n Number) Cmp(m Number) int { return n.rat().Cmp(m.rat()) }

// IsZero reports whether n is 0.
func (n Number) IsZero() bool {
	if n.r != nil {
		return n.r.Sign() == 0
	}
	return n.i == 0
}

func norm(r *big.Rat) Number {
	if r.IsInt() && r.Num().IsInt64() {
		return Number{i: r.Num().Int64()}
	}
	return Number{r: r}
}

// String formats n as a DynamoDB number: exact, no exponent.
func (n Number) String() string {
	if n.r == nil {
		return strconv.FormatInt(n.i, 10)
	}
	if n.r.IsInt() {
		return n.r.Num().String()
	}
	// Sums of decimals are decimals: 38 fractional digits are exact for DynamoDB's
	// precision; trailing zeros are trimmed.
	s := n.r.FloatString(38)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// NumberOf is an aggregate attribute's value: 0 when absent or not a number.
func NumberOf(v types.AttributeValue) Number {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		if x, err := ParseNumber(n.Value); err == nil {
			return x
		}
	}
	return Int(0)
}
