package value

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// SortAttr is the attribute a max or min compares, or the one latest orders by.
func SortAttr(r *rules.CompiledRule) string {
	if r.Kind == rules.KindLatest || r.Kind == rules.KindTop {
		return r.Agg.By
	}
	return r.Agg.Value
}

// LatestKey is the tie-break of latest: the source's primary key, pk and sk joined by a
// NUL, which sorts before every other character, so the pair compares as (pk, sk).
func LatestKey(r *rules.CompiledRule, item record.Item) string {
	k := ""
	if v, ok := item[r.Source.Keys[0].Attr].(*types.AttributeValueMemberS); ok {
		k = v.Value
	}
	if r.Source.SK != nil {
		if v, ok := item[r.Source.Keys[1].Attr].(*types.AttributeValueMemberS); ok {
			k += "\x00" + v.Value
		}
	}
	return k
}

// LatestBetter reports whether (a, ak) comes after (b, bk): by value, then by key. nil
// values come first.
func LatestBetter(a types.AttributeValue, ak string, b types.AttributeValue, bk string) bool {
	if a == nil {
		return false
	}
	if b == nil {
		return true
	}
	if c := Compare(a, b); c != 0 {
		return c > 0
	}
	return ak > bk
}

// ExtremeValue returns the value item contributes to a max or min rule: its value attribute
// when that is a number or a string, nil otherwise (the item is then left out, like an item
// that links to no target).
func ExtremeValue(r *rules.CompiledRule, item record.Item) types.AttributeValue {
	switch v := item[SortAttr(r)].(type) {
	case *types.AttributeValueMemberS:
		return v
	case *types.AttributeValueMemberN:
		if _, err := ParseNumber(v.Value); err == nil {
			return v
		}
	}
	return nil
}

// Compare orders the values of max and min rules: numbers by value, strings byte by
// byte (as DynamoDB compares them), and every number before every string. Other types and
// nil come first. It returns -1, 0 or +1.
func Compare(a, b types.AttributeValue) int {
	ra, rb := rank(a), rank(b)
	if ra != rb {
		if ra < rb {
			return -1
		}
		return 1
	}
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		na, _ := ParseNumber(x.Value)
		nb, _ := ParseNumber(b.(*types.AttributeValueMemberN).Value)
		return na.Cmp(nb)
	case *types.AttributeValueMemberS:
		return strings.Compare(x.Value, b.(*types.AttributeValueMemberS).Value)
	}
	return 0
}

// Comparable reports whether v is a value max and min compare: a number or a string.
func Comparable(v types.AttributeValue) bool { return rank(v) > 0 }

func rank(v types.AttributeValue) int {
	switch v.(type) {
	case *types.AttributeValueMemberN:
		return 1
	case *types.AttributeValueMemberS:
		return 2
	}
	return 0
}

// Better reports whether a beats b under rule kind k (greater for max, less for min). A
// value beats nil; equal values do not beat each other.
func Better(k rules.Kind, a, b types.AttributeValue) bool {
	if a == nil {
		return false
	}
	if b == nil {
		return true
	}
	c := Compare(a, b)
	if k == rules.KindMin {
		return c < 0
	}
	return c > 0 // max; latest orders like max (its ties are broken by LatestBetter)
}
