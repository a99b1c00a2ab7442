package opstest

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/rules"
)

// Counts and sums keep their exact values in a state item per target (docs/rules.md, "What
// Denorm writes"): partition key rules.StatePrefix + the target's, the target's sort key,
// each aggregate under the target's attribute name, the watermarks of the records applied
// and a version (rules.StateVersionAttr) every write raises. The target shows a copy: the
// aggregate attributes and the version copied (rules.CopyVersionAttr).

// StateKey is the key of the state item of the target at pk, sk.
func StateKey(pk, sk string) [2]string { return [2]string{rules.StatePrefix + pk, sk} }

// StateOf returns the state item the stream processor leaves for counter target it: the
// aggregate attributes attrs with it's values, version, and the extra attributes given as
// name, value pairs (a watermark, the ttl of a bucket). It sets it's copy version to
// version, as the processor's copy does.
func StateOf(it Item, version int, attrs []string, extra ...any) Item {
	st := Item{"pk": s(rules.StatePrefix + str(it["pk"])), "sk": it["sk"], rules.StateVersionAttr: n(version)}
	for _, a := range attrs {
		if v, ok := it[a]; ok {
			st[a] = v
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		st[extra[i].(string)] = extra[i+1].(types.AttributeValue)
	}
	it[rules.CopyVersionAttr] = n(version)
	return st
}

// API is the part of the DynamoDB client Delta uses.
type API interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Delta applies amount to attr of the counter target at pk, sk as the stream processor
// does: ADD it to the target's state item, raise the state's version and SET the watermark
// wmAttr (rules.WatermarkAttr for records of the target's own partition,
// rules.RelayWatermarkAttr for relay items' records) to seq; then copy the state onto the
// target: every aggregate attribute and the version, on condition that the target exists
// and its copy is not newer. It returns the state it left.
func Delta(ctx context.Context, db API, table, pk, sk, attr string, amount int, wmAttr string, seq int) (Item, error) {
	sk2 := StateKey(pk, sk)
	out, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:                       Item{"pk": s(sk2[0]), "sk": s(sk2[1])},
		UpdateExpression:          aws.String("ADD #a :d, #v :one SET #wm = :wm"),
		ExpressionAttributeNames:  map[string]string{"#a": attr, "#v": rules.StateVersionAttr, "#wm": wmAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": n(amount), ":one": n(1), ":wm": n(seq)},
		ReturnValues:              types.ReturnValueAllNew})
	if err != nil {
		return nil, err
	}
	return out.Attributes, CopyState(ctx, db, table, pk, sk, out.Attributes)
}

// CopyState writes state's aggregate attributes and version onto the target at pk, sk, on
// condition that it exists and its copy version is not above the state's (a refused copy is
// not an error).
func CopyState(ctx context.Context, db API, table, pk, sk string, state Item) error {
	names := map[string]string{"#cv": rules.CopyVersionAttr}
	vals := map[string]types.AttributeValue{":cv": state[rules.StateVersionAttr]}
	sets := []string{"#cv = :cv"}
	var attrs []string
	for a := range state {
		if a != "pk" && a != "sk" && a != "ttl" && !strings.HasPrefix(a, rules.ReservedPrefix) {
			attrs = append(attrs, a)
		}
	}
	sort.Strings(attrs)
	for i, a := range attrs {
		p := string(rune('a' + i))
		names["#"+p], vals[":"+p] = a, state[a]
		sets = append(sets, "#"+p+" = :"+p)
	}
	_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:                       Item{"pk": s(pk), "sk": s(sk)},
		UpdateExpression:          aws.String("SET " + strings.Join(sets, ", ")),
		ConditionExpression:       aws.String("attribute_exists(pk) AND (attribute_not_exists(#cv) OR #cv <= :cv)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return nil
	}
	return err
}
