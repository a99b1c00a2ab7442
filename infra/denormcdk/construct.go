package denormcdk

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Denorm is the stream processor that keeps a table's denormalized data correct, and the
// table when the construct created it.
type Denorm struct {
	constructs.Construct
	// Table is Props.Table, or the table the construct created from the rules file.
	Table awsdynamodb.ITable
	// CreatedTable is the table the construct created; nil when it was given Props.Table.
	CreatedTable    awsdynamodb.Table
	Function        awslambda.Function
	Role            awsiam.Role
	Policy          awsiam.Policy
	LogGroup        awslogs.LogGroup
	DeadLetterQueue awssqs.Queue
	Mapping         awslambda.CfnEventSourceMapping
	Alarms          Alarms
	// FilterPatterns are the mapping's event filters, compiled from the rules: only records
	// of entities a rule reads, and fan-out job items, invoke the function. Empty: every
	// record does (some entity's partition key starts with a variable).
	FilterPatterns []string
	// QueriedIndexes are the secondary indexes the rules query, which the function may query.
	QueriedIndexes []string
}

// New defines a Denorm construct under scope. It reads the rules file, and validates it and
// the other props first: every problem is returned at once, and nothing is added to scope
// when there is one. Without Props.Code it then builds the function (FunctionPackage) with
// the go command, in the app's module.
func New(scope constructs.Construct, id string, props Props) (*Denorm, error) {
	p := props.withDefaults()
	compiled, err := p.validate()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	code := p.Code
	if code == "" {
		// Before anything is added to scope: a failed build leaves no half-built construct.
		if code, err = buildCode(scope, p.Architecture); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	codePath, err := stageCode(c, code, p.RulesFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	d := &Denorm{Construct: c, Table: p.Table, FilterPatterns: compiled.filterPatterns, QueriedIndexes: compiled.queriedIndexes}
	if d.Table == nil {
		d.CreatedTable = newTable(c, compiled.table, p.Dev)
		d.Table = d.CreatedTable
	}
	d.DeadLetterQueue = newDeadLetterQueue(c, p.Dev)
	d.Function, d.Role, d.LogGroup = newFunction(c, p, codePath, d.Table.TableName(), p.Dev)
	d.Policy = grantProcessor(c, d.Role, d.Table, d.QueriedIndexes, p.ExtraReadActions, d.DeadLetterQueue, d.LogGroup)
	// Lambda checks the role's stream permissions when the mapping is created, and the
	// function must be able to write its logs from the first invocation.
	d.Function.Node().AddDependency(d.Policy)
	d.Mapping = newMapping(c, p, d.Function, d.Table.TableStreamArn(), d.FilterPatterns, d.DeadLetterQueue)
	d.Mapping.Node().AddDependency(d.Policy)
	d.Alarms = newAlarms(c, p, d.Function, d.DeadLetterQueue)
	return d, nil
}
