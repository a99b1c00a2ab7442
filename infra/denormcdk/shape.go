package denormcdk

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/tablecheck"
)

// checkShape compares a table defined in this app with the rules' table section, with the
// differences `denorm check-table` prints for a deployed one (keys and their types, local
// and global indexes, TTL; the stream is checkStream's). A global table (a TableV2 with
// replicas) is processed in the stack's Region alone: that replica's stream carries every
// write, local and replicated (docs/processor.md, "Global tables"). An imported table is not
// known at synth: check-table reads it once deployed.
func checkShape(t awsdynamodb.ITable, spec table.Spec) error {
	desc, ttl, ok := describeDefined(t)
	if !ok {
		return nil
	}
	name := *t.Node().Path()
	var errs []error
	for _, d := range tablecheck.Compare(spec, desc, ttl) {
		if d.Subject == "stream" {
			continue // checkStream's, with the construct's wording
		}
		errs = append(errs, fmt.Errorf("table %s: %s", name, d))
	}
	return errors.Join(errs...)
}

// checkReplicas refuses rules that keep expired items counted (onExpiry: ignore) on a table
// of this app with replicas: DynamoDB marks a TTL delete only in the stream of the Region
// whose TTL process made it, so the processing Region sees another Region's expiry as a
// delete ("Working with expired items", DynamoDB developer guide).
func checkReplicas(t awsdynamodb.ITable, keepExpired []string) error {
	g, ok := t.Node().DefaultChild().(awsdynamodb.CfnGlobalTable)
	if !ok || len(keepExpired) == 0 {
		return nil
	}
	if reps := list(awscdk.Stack_Of(t).Resolve(g.Replicas())); len(reps) < 2 {
		return nil
	}
	return fmt.Errorf("table %s has replicas in other Regions, and %s keeps expired items counted (onExpiry: ignore): "+
		"a TTL delete made in another Region reaches this Region's stream as an ordinary delete, so it would leave the count; "+
		"use onExpiry: remove, or a table without replicas", *t.Node().Path(), strings.Join(keepExpired, ", "))
}

// describeDefined builds, from the L1 resource of a table defined in this app, what
// DescribeTable and DescribeTimeToLive would say of it once deployed. ok is false for an
// imported table or one whose shape is not known at synth.
func describeDefined(t awsdynamodb.ITable) (desc *types.TableDescription, ttl *types.TimeToLiveDescription, ok bool) {
	stack := awscdk.Stack_Of(t)
	resolve := func(v any) any {
		if v == nil {
			return nil
		}
		return stack.Resolve(v)
	}
	var keys, attrs, lsis, gsis, ttlSpec any
	switch res := t.Node().DefaultChild().(type) {
	case awsdynamodb.CfnTable:
		keys, attrs, lsis, gsis, ttlSpec = res.KeySchema(), res.AttributeDefinitions(), res.LocalSecondaryIndexes(), res.GlobalSecondaryIndexes(), res.TimeToLiveSpecification()
	case awsdynamodb.CfnGlobalTable:
		keys, attrs, lsis, gsis, ttlSpec = res.KeySchema(), res.AttributeDefinitions(), res.LocalSecondaryIndexes(), res.GlobalSecondaryIndexes(), res.TimeToLiveSpecification()
	default:
		return nil, nil, false
	}
	desc = &types.TableDescription{TableName: t.TableName(), KeySchema: keySchema(resolve(keys))}
	if !literal(desc.TableName) {
		desc.TableName = nil // check-table's commands then say TABLE
	}
	for _, a := range list(resolve(attrs)) {
		desc.AttributeDefinitions = append(desc.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: str(m(a)["attributeName"]), AttributeType: types.ScalarAttributeType(deref(str(m(a)["attributeType"])))})
	}
	for _, l := range list(resolve(lsis)) {
		desc.LocalSecondaryIndexes = append(desc.LocalSecondaryIndexes, types.LocalSecondaryIndexDescription{
			IndexName: str(m(l)["indexName"]), KeySchema: keySchema(m(l)["keySchema"]), Projection: projection(m(l)["projection"])})
	}
	for _, g := range list(resolve(gsis)) {
		desc.GlobalSecondaryIndexes = append(desc.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName: str(m(g)["indexName"]), KeySchema: keySchema(m(g)["keySchema"]), Projection: projection(m(g)["projection"])})
	}
	if s := m(resolve(ttlSpec)); s != nil && s["enabled"] == true {
		ttl = &types.TimeToLiveDescription{AttributeName: str(s["attributeName"]), TimeToLiveStatus: types.TimeToLiveStatusEnabled}
	}
	return desc, ttl, true
}

func keySchema(v any) []types.KeySchemaElement {
	var out []types.KeySchemaElement
	for _, k := range list(v) {
		out = append(out, types.KeySchemaElement{AttributeName: str(m(k)["attributeName"]), KeyType: types.KeyType(deref(str(m(k)["keyType"])))})
	}
	return out
}

func projection(v any) *types.Projection {
	p := m(v)
	if p == nil {
		return &types.Projection{ProjectionType: types.ProjectionTypeAll} // CDK's default
	}
	out := &types.Projection{ProjectionType: types.ProjectionType(deref(str(p["projectionType"])))}
	if out.ProjectionType == "" {
		out.ProjectionType = types.ProjectionTypeAll // what CDK's constructs write when none is given
	}
	for _, a := range list(p["nonKeyAttributes"]) {
		if s, ok := a.(string); ok {
			out.NonKeyAttributes = append(out.NonKeyAttributes, s)
		}
	}
	return out
}

func list(v any) []any       { l, _ := v.([]any); return l }
func m(v any) map[string]any { x, _ := v.(map[string]any); return x }
func str(v any) *string {
	if s, ok := v.(string); ok {
		return aws.String(s)
	}
	return nil
}
func deref(s *string) string { return aws.ToString(s) }
