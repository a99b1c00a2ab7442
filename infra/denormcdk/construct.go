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

// Denorm is a table and the stream processor that keeps its denormalized data correct.
type Denorm struct {
	constructs.Construct
	Table           awsdynamodb.Table
	Function        awslambda.Function
	Role            awsiam.Role
	Policy          awsiam.Policy
	LogGroup        awslogs.LogGroup
	DeadLetterQueue awssqs.Queue
	Mapping         awslambda.CfnEventSourceMapping
	Alarms          Alarms
}

// New defines a Denorm construct under scope. Props are validated first and every problem
// is returned at once; nothing is added to scope when they are invalid.
func New(scope constructs.Construct, id string, props Props) (*Denorm, error) {
	p := props.withDefaults()
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	codePath, err := stageCode(c, p.CodeDir, p.RulesFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	d := &Denorm{Construct: c}
	d.Table = newTable(c, p.Table, p.Dev)
	d.DeadLetterQueue = newDeadLetterQueue(c, p.Dev)
	d.Function, d.Role, d.LogGroup = newFunction(c, p, codePath, d.Table.TableName(), p.Dev)
	d.Policy = grantProcessor(c, d.Role, d.Table, p.QueriedIndexes, p.ExtraReadActions, d.DeadLetterQueue, d.LogGroup)
	// Lambda checks the role's stream permissions when the mapping is created, and the
	// function must be able to write its logs from the first invocation.
	d.Function.Node().AddDependency(d.Policy)
	d.Mapping = newMapping(c, p, d.Function, d.Table.TableStreamArn(), d.DeadLetterQueue)
	d.Mapping.Node().AddDependency(d.Policy)
	d.Alarms = newAlarms(c, p, d.Function, d.DeadLetterQueue)
	return d, nil
}
