package denormcdk

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/denorm/denorm/internal/table"
)

// newTable defines the table of spec. It is an AWS::DynamoDB::Table (awsdynamodb.Table)
// rather than a TableV2: LocalStack deploys AWS::DynamoDB::Table faithfully. A team that
// wants a global table defines its TableV2 with replicas and gives it as Props.Table.
func newTable(scope constructs.Construct, spec table.Spec, dev bool) awsdynamodb.Table {
	str := func(name string) *awsdynamodb.Attribute {
		if name == "" {
			return nil
		}
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	props := &awsdynamodb.TableProps{
		PartitionKey: str(spec.PartitionKey),
		SortKey:      str(spec.SortKey),
		// On demand: stream-driven writes arrive in bursts (a fan-out touches thousands of
		// items at once), which provisioned capacity would throttle or pay for while idle.
		BillingMode: awsdynamodb.BillingMode_PAY_PER_REQUEST,
		// The processor needs both images: copies compare old and new watched attributes,
		// counters need the old item on REMOVE and on a MODIFY that leaves a `where`.
		Stream: awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(!dev),
		RemovalPolicy:      removalPolicy(dev),
	}
	if spec.TTLAttribute != "" {
		props.TimeToLiveAttribute = jsii.String(spec.TTLAttribute)
	}
	t := awsdynamodb.NewTable(scope, jsii.String("Table"), props)
	for _, l := range spec.LocalIndexes {
		t.AddLocalSecondaryIndex(&awsdynamodb.LocalSecondaryIndexProps{
			IndexName:        jsii.String(l.Name),
			SortKey:          str(l.SortKey),
			ProjectionType:   projectionType(l.Projection),
			NonKeyAttributes: nonKey(l.Projection, l.Include),
		})
	}
	for _, g := range spec.GlobalIndexes {
		t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:        jsii.String(g.Name),
			PartitionKey:     str(g.PartitionKey),
			SortKey:          str(g.SortKey),
			ProjectionType:   projectionType(g.Projection),
			NonKeyAttributes: nonKey(g.Projection, g.Include),
		})
	}
	return t
}

func projectionType(p table.Projection) awsdynamodb.ProjectionType {
	switch p {
	case table.ProjectKeysOnly:
		return awsdynamodb.ProjectionType_KEYS_ONLY
	case table.ProjectInclude:
		return awsdynamodb.ProjectionType_INCLUDE
	default: // "" means ALL, as in table.Spec
		return awsdynamodb.ProjectionType_ALL
	}
}

func nonKey(p table.Projection, include []string) *[]*string {
	if p != table.ProjectInclude {
		return nil
	}
	return jsii.Strings(include...)
}

// removalPolicy keeps stateful resources when the stack is deleted, except in dev stacks.
func removalPolicy(dev bool) awscdk.RemovalPolicy {
	if dev {
		return awscdk.RemovalPolicy_DESTROY
	}
	return awscdk.RemovalPolicy_RETAIN
}
