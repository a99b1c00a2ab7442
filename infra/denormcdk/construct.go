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
	CreatedTable awsdynamodb.Table
	Function     awslambda.Function
	Role         awsiam.Role
	Policy       awsiam.Policy
	LogGroup     awslogs.LogGroup
	// DeadLetterQueue is the on-failure queue the construct created; nil when the app gave
	// Props.FailureQueue or Props.FailureTopic.
	DeadLetterQueue awssqs.Queue
	// Runtime is the layer holding bootstrap, shared by the constructs of the stack built from
	// the same code; nil with Props.NoRuntimeLayer.
	Runtime awslambda.ILayerVersion
	Mapping awslambda.CfnEventSourceMapping
	// Alarms are zero with Props.NoAlarms; Alarms.DeadLetters is nil with Props.FailureTopic.
	Alarms Alarms
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
	// Everything is staged before anything is added to scope, as above.
	var runtimeDir, digest string
	if !p.NoRuntimeLayer {
		if runtimeDir, digest, err = stageRuntime(scope, code); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
	}
	codePath, err := stageCode(scope, *scope.Node().Path()+"/"+id, code, compiled.data, p.NoRuntimeLayer)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	var runtime awslambda.ILayerVersion
	if runtimeDir != "" {
		runtime = runtimeLayer(scope, runtimeDir, digest, p.Architecture)
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	d := &Denorm{Construct: c, Table: p.Table, Runtime: runtime, FilterPatterns: compiled.filterPatterns, QueriedIndexes: compiled.queriedIndexes}
	if d.Table == nil {
		d.CreatedTable = newTable(c, compiled.table, p.Dev)
		d.Table = d.CreatedTable
	}
	dest := failureDestination{queue: p.FailureQueue, topic: p.FailureTopic}
	if dest.queue == nil && dest.topic == nil {
		d.DeadLetterQueue = newDeadLetterQueue(c, p.Dev)
		dest.queue = d.DeadLetterQueue
	}
	d.Function, d.Role, d.LogGroup = newFunction(c, p, codePath, runtime, d.Table.TableName())
	d.Policy = grantProcessor(c, d.Role, d.Table, d.QueriedIndexes, p.ExtraReadActions, dest, d.LogGroup)
	// Lambda checks the role's stream permissions when the mapping is created, and the
	// function must be able to write its logs from the first invocation.
	d.Function.Node().AddDependency(d.Policy)
	d.Mapping = newMapping(c, p, d.Function, d.Table.TableStreamArn(), d.FilterPatterns, dest.arn())
	d.Mapping.Node().AddDependency(d.Policy)
	if !p.NoAlarms {
		d.Alarms = newAlarms(c, p, d.Function, dest.queue)
	}
	return d, nil
}
