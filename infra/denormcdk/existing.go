package denormcdk

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
)

// checkStream reports why an existing table's stream cannot feed the processor: there is
// none, or, for a table defined in this app, its records lack the old or the new image
// (copies compare both, counters need the old item on REMOVE). An imported table's view
// type is not known at synth; `denorm check-table` reads it from the deployed table.
func checkStream(t awsdynamodb.ITable) error {
	name := *t.Node().Path()
	if t.TableStreamArn() == nil {
		return fmt.Errorf("table %s has no stream: enable it with NEW_AND_OLD_IMAGES, and import the table "+
			"with awsdynamodb.Table_FromTableAttributes giving TableStreamArn", name)
	}
	if view := streamViewType(t); view != "" && view != string(awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES) {
		return fmt.Errorf("table %s streams %s: Denorm needs NEW_AND_OLD_IMAGES", name, view)
	}
	// A stream ARN is arn:PARTITION:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL. Both given
	// as literals, a mix-up of tables (or of a table's name with another's ARN) shows here
	// instead of as a function that reads one table's stream and writes another.
	arn, table := t.TableStreamArn(), t.TableName()
	if table != nil && literal(arn) && literal(table) && !strings.Contains(*arn, ":table/"+*table+"/stream/") {
		return fmt.Errorf("table %s: stream ARN %s is not the stream of table %s", name, *arn, *table)
	}
	return nil
}

// literal is true for a string known at synth, not a token resolved at deployment.
func literal(s *string) bool {
	return !*awscdk.Token_IsUnresolved(s)
}

// streamViewType is the stream view type of a table defined in this app (its L1 resource is
// in the construct tree), or "" when it is not known: an imported table, or a token.
func streamViewType(t constructs.IConstruct) string {
	// Through the L1 resource's properties, not its StreamSpecification accessor: the jsii
	// runtime refuses to read a stream specification whose view type is not set (a TableV2
	// with a stream of keys only), where the properties carry it as absent.
	res, ok := t.Node().DefaultChild().(interface{ CfnProperties() *map[string]any })
	if !ok {
		return ""
	}
	props := res.CfnProperties()
	if props == nil || (*props)["streamSpecification"] == nil {
		return ""
	}
	resolved, _ := awscdk.Stack_Of(t).Resolve((*props)["streamSpecification"]).(map[string]any)
	view, _ := resolved["streamViewType"].(string)
	return view
}
