// Package counter is the pure core of counts and sums: where a target's exact values live
// (its state item, which only Denorm writes), how a batch's deltas update it exactly once,
// and what the application's target item shows of it (a copy, version-guarded). It builds
// expressions and compares items; the executor (internal/apply) sends them.
//
// The state item of target T is StatePrefix + T's partition key, with T's sort key. It
// holds each aggregate attribute under T's attribute name, the watermarks of the two
// partitions whose records reach it in order (T's own, for sources in T's partition, and
// the relay partition, for sources elsewhere), and a version that every write raises by
// one. T carries the aggregate attributes and rules.CopyVersionAttr: the state version
// they were copied from.
package counter

import (
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/exprval"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
)

// StateKey is the key of target t's state item. A distinct rule's reference item
// (plan.DistinctRef), the target of its sources' deltas, is its own state item.
func StateKey(t plan.Key) plan.Key {
	if plan.IsDistinctRef(t) {
		return t
	}
	return plan.Key{PK: rules.StatePrefix + t.PK, SK: t.SK}
}

// TargetOf is the key of the target whose state item or state part is at k, and false
// when k is neither.
func TargetOf(k plan.Key) (plan.Key, bool) {
	if plan.IsDistinctRef(k) {
		return k, true // its own state item (StateKey)
	}
	if t, ok := plan.PartTarget(k); ok {
		return t, true // a part of its split state
	}
	pk, ok := strings.CutPrefix(k.PK, rules.StatePrefix)
	return plan.Key{PK: pk, SK: k.SK}, ok
}

// Watermarked is the update of a state item by one group of deltas from one partition's
// records (plan.TargetDeltas): ADD each amount, SET the watermark to maxSeq and raise the
// version, on condition that the watermark is absent or below minSeq. A redelivered record
// is at or below the watermark; the write is refused and its failure returns the state,
// whose watermark says which records to leave out. The write is made even when the
// amounts sum to zero, so that the watermark moves past them: a batch can come again from
// a record between the two.
func Watermarked(wmAttr string, attrs []plan.AttrAmount, minSeq, maxSeq string) (expression.UpdateBuilder, expression.ConditionBuilder) {
	ub := Add(attrs).Set(expression.Name(wmAttr), exprval.Num(record.NormSeq(maxSeq)))
	cond := expression.AttributeNotExists(expression.Name(wmAttr)).
		Or(expression.Name(wmAttr).LessThan(exprval.Num(record.NormSeq(minSeq))))
	return ub, cond
}

// Add is the update of a state item that adds attrs and raises the version: the state's
// part of a marker transaction, whose markers make it exactly once.
func Add(attrs []plan.AttrAmount) expression.UpdateBuilder {
	var ub expression.UpdateBuilder
	for _, a := range attrs {
		if !a.Amount.IsZero() {
			ub = ub.Add(expression.Name(a.Attribute), exprval.Num(a.Amount.String()))
		}
	}
	return ub.Add(expression.Name(rules.StateVersionAttr), exprval.Num("1"))
}

// Version is a state item's version, or a target's copy version: 0 when absent.
func Version(v types.AttributeValue) uint64 {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		if x, err := strconv.ParseUint(n.Value, 10, 64); err == nil {
			return x
		}
	}
	return 0
}

// Values are the attributes a copy of state writes: also (which the state may lack: they
// are then 0), then the state's other aggregate attributes, every attribute but its keys,
// the table's TTL attribute and Denorm's own.
func Values(spec table.Spec, state record.Item, also ...string) []string {
	out := append([]string(nil), also...)
	for name := range state {
		if name == spec.PartitionKey || name == spec.SortKey || name == spec.TTLAttribute || strings.HasPrefix(name, rules.ReservedPrefix) ||
			slices.Contains(also, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// Copy is what a target shows of state (nil for none yet): attrs with the state's values
// (0 for an attribute the state lacks) and rules.CopyVersionAttr with its version.
func Copy(state record.Item, attrs []string) []plan.AttrValue {
	out := make([]plan.AttrValue, 0, len(attrs)+1)
	for _, a := range attrs {
		out = append(out, plan.AttrValue{Name: a, Value: &types.AttributeValueMemberN{Value: value.NumberOf(state[a]).String()}})
	}
	v := strconv.FormatUint(Version(state[rules.StateVersionAttr]), 10)
	return append(out, plan.AttrValue{Name: rules.CopyVersionAttr, Value: &types.AttributeValueMemberN{Value: v}})
}

// Differs reports whether a target as seen does not show state's values of attrs: an
// attribute is missing where the state holds a value other than zero, holds another number,
// or holds something that is not a number. An attribute absent from both is zero in both.
func Differs(state, seen record.Item, attrs []string) bool {
	for _, a := range attrs {
		v, ok := seen[a]
		if !ok {
			if !value.NumberOf(state[a]).IsZero() {
				return true
			}
			continue
		}
		n, isN := v.(*types.AttributeValueMemberN)
		if !isN {
			return true
		}
		got, err := value.ParseNumber(n.Value)
		if err != nil || !got.Sub(value.NumberOf(state[a])).IsZero() {
			return true
		}
	}
	return false
}

// CopyWrite is the update that writes copy (from Copy) onto a target: SET every attribute,
// on condition that the target's copy version is absent or not above the copy's, so that
// it never goes backwards (a copy of the same version writes the same values again). With
// create false the target must exist: a count target the application has not written yet,
// or deleted, gets its copy when it is inserted.
func CopyWrite(pkAttr string, copy []plan.AttrValue, create bool) (expression.UpdateBuilder, expression.ConditionBuilder) {
	var ub expression.UpdateBuilder
	var version types.AttributeValue
	for _, a := range copy {
		ub = ub.Set(expression.Name(a.Name), exprval.Of(a.Value))
		if a.Name == rules.CopyVersionAttr {
			version = a.Value
		}
	}
	cond := expression.AttributeNotExists(expression.Name(rules.CopyVersionAttr)).
		Or(expression.Name(rules.CopyVersionAttr).LessThanEqual(exprval.Of(version)))
	if !create {
		cond = expression.AttributeExists(expression.Name(pkAttr)).And(cond)
	}
	return ub, cond
}

// Foreign returns the copy version a target as seen holds when it is above its state's:
// no copy of this target's state ever had it, so the application wrote it (an item copied
// whole from another target, a version made up). nil when the target's version is the
// state's or below.
func Foreign(state, seen record.Item) types.AttributeValue {
	v, ok := seen[rules.CopyVersionAttr]
	if !ok {
		return nil
	}
	if n, isN := v.(*types.AttributeValueMemberN); isN {
		if x, err := strconv.ParseUint(n.Value, 10, 64); err == nil && x <= Version(state[rules.StateVersionAttr]) {
			return nil
		}
	}
	return v
}

// CopyOver is the update that writes copy onto a target whose copy version is foreign
// (Foreign): on condition that the target exists and still holds that version.
func CopyOver(pkAttr string, copy []plan.AttrValue, foreign types.AttributeValue) (expression.UpdateBuilder, expression.ConditionBuilder) {
	ub, _ := CopyWrite(pkAttr, copy, false)
	cond := expression.AttributeExists(expression.Name(pkAttr)).And(expression.Name(rules.CopyVersionAttr).Equal(exprval.Of(foreign)))
	return ub, cond
}
