package denormcdk

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Environment variables the function reads (functions/streamproc).
const (
	EnvTable = "DENORM_TABLE" // the table's name
	EnvRules = "DENORM_RULES" // the rules file, relative to /var/task
	// EnvPullReads, optional: when a pull reads its target first, auto (the default),
	// always or never (docs/processor.md). Set it with the function's AddEnvironment.
	EnvPullReads = "DENORM_PULL_READS"
)

// newFunction defines the stream processor with its own role and log group. The role starts
// empty: CDK's default role would attach AWSLambdaBasicExecutionRole, whose logs actions
// apply to every log group ("*"); with an explicit log group the function can be granted
// writes to that group only (see grantProcessor).
func newFunction(scope constructs.Construct, p settings, codePath string, runtime awslambda.ILayerVersion, tableName *string) (awslambda.Function, awsiam.Role, awslogs.LogGroup) {
	role := awsiam.NewRole(scope, jsii.String("ProcessorRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Denorm stream processor: reads the table's stream, writes copies and counters"),
	})
	logs := awslogs.NewLogGroup(scope, jsii.String("ProcessorLogs"), &awslogs.LogGroupProps{
		Retention:     p.LogRetention,
		RemovalPolicy: removalPolicy(p.Dev),
	})
	props := &awslambda.FunctionProps{
		Description: jsii.String("Denorm: keeps copies, mirrors and counters of the table correct from its stream"),
		Runtime:     awslambda.Runtime_PROVIDED_AL2023(),
		// A Go binary; arm64 (Graviton) is about 20% cheaper per GB-second than x86_64.
		Architecture: p.Architecture,
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(codePath), nil),
		// CPU scales with memory; the work is mostly waiting on DynamoDB (see DefaultMemoryMB).
		MemorySize: jsii.Number(float64(p.MemoryMB)),
		// One batch's budget; the handler stops new work ~5 s before the deadline (see DefaultTimeout).
		Timeout: awscdk.Duration_Seconds(jsii.Number(p.timeout.Seconds())),
		Role:    role,
		Environment: &map[string]*string{
			EnvTable: tableName,
			EnvRules: jsii.String(RulesFileName),
		},
		// JSON logs: slog's attributes become fields Logs Insights can query, and Lambda
		// drops records below the configured level before they are billed.
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		LogGroup:              logs,
		// No X-Ray tracing: xray:PutTraceSegments has no resource-level permissions and
		// would need Resource "*"; the JSON logs carry the request id and timings instead.
	}
	if runtime != nil {
		// Without bootstrap in the function's code, Lambda runs the one in its layers.
		props.Layers = &[]awslambda.ILayerVersion{runtime}
	}
	if p.ReservedConcurrency > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(float64(p.ReservedConcurrency))
	}
	// CloudFormation updates a function's configuration (its layers) before its code. Moving
	// bootstrap from the layer into the code in place would leave the function without one
	// between the two updates, and its invocations failing: with NoRuntimeLayer the function
	// is another resource, which CloudFormation creates before the mapping moves to it.
	id := "Processor"
	if p.NoRuntimeLayer {
		id = "ProcessorBundled"
	}
	fn := awslambda.NewFunction(scope, jsii.String(id), props)
	return fn, role, logs
}

// runtimeLayer is the layer holding bootstrap (stageRuntime's dir), one per stack for each
// build of the function: the constructs of a stack built from the same code share it, and
// the stacks of an app share its asset.
func runtimeLayer(scope constructs.Construct, dir, digest string, arch awslambda.Architecture) awslambda.ILayerVersion {
	stack := awscdk.Stack_Of(scope)
	id := "DenormRuntime" + digest + *arch.Name()
	if existing, ok := stack.Node().TryFindChild(jsii.String(id)).(awslambda.ILayerVersion); ok {
		return existing
	}
	return awslambda.NewLayerVersion(stack, jsii.String(id), &awslambda.LayerVersionProps{
		Description:             jsii.String("Denorm stream processor runtime (bootstrap) " + digest),
		Code:                    awslambda.Code_FromAsset(jsii.String(dir), nil),
		CompatibleRuntimes:      &[]awslambda.Runtime{awslambda.Runtime_PROVIDED_AL2023()},
		CompatibleArchitectures: &[]awslambda.Architecture{arch},
	})
}
