package main

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/denorm/denorm/infra/denormcdk"
)

// Context keys the app reads (`cdk synth -c key=value`, or "context" in cdk.json).
const (
	ctxRules = "rules" // rules file, relative to infra/
	ctxCode  = "code"  // directory with a built bootstrap, or a zip of it; default: built at synth
	ctxDev   = "dev"   // "true": disposable stack (DESTROY, no deletion protection)
	ctxArch  = "arch"  // "arm64" (default) or "x86_64", the function's architecture
	ctxStack = "stack" // stack name
	// "false": bootstrap in the function's own code, not a layer (LocalStack's community
	// image accepts layers but does not apply them)
	ctxLayer = "runtimeLayer"
)

// StackConfig is what one Denorm stack is built from.
type StackConfig struct {
	RulesFile string
	// Code is a directory holding a built bootstrap or a zip file of it; empty: the
	// construct builds the function (denormcdk.Props.Code).
	Code string
	Dev  bool
	// Architecture is "arm64" or "x86_64".
	Architecture string
	// NoRuntimeLayer: denormcdk.Props.NoRuntimeLayer.
	NoRuntimeLayer bool
}

// configFromContext reads the StackConfig and stack name from the app's context.
func configFromContext(app constructs.Construct) (StackConfig, string, error) {
	str := func(key, def string) string {
		v := app.Node().TryGetContext(jsii.String(key))
		if v == nil {
			return def
		}
		return fmt.Sprint(v)
	}
	cfg := StackConfig{
		RulesFile:    str(ctxRules, "../rules/social.yaml"),
		Code:         str(ctxCode, ""),
		Architecture: str(ctxArch, "arm64"),
	}
	dev, err := strconv.ParseBool(str(ctxDev, "false"))
	if err != nil {
		return cfg, "", fmt.Errorf("context %s=%q: want true or false", ctxDev, str(ctxDev, ""))
	}
	cfg.Dev = dev
	layer, err := strconv.ParseBool(str(ctxLayer, "true"))
	if err != nil {
		return cfg, "", fmt.Errorf("context %s=%q: want true or false", ctxLayer, str(ctxLayer, ""))
	}
	cfg.NoRuntimeLayer = !layer
	return cfg, str(ctxStack, "Denorm"), nil
}

// NewDenormStack defines a stack holding one Denorm construct built from cfg, with the
// outputs an operator or a test harness needs to find its resources.
func NewDenormStack(scope constructs.Construct, id string, cfg StackConfig, props *awscdk.StackProps) (awscdk.Stack, *denormcdk.Denorm, error) {
	var arch awslambda.Architecture
	switch cfg.Architecture {
	case "arm64", "":
		arch = awslambda.Architecture_ARM_64()
	case "x86_64", "amd64":
		arch = awslambda.Architecture_X86_64()
	default:
		return nil, nil, fmt.Errorf("architecture %q: want arm64 or x86_64", cfg.Architecture)
	}
	if props == nil {
		props = &awscdk.StackProps{}
	}
	if props.Description == nil {
		props.Description = jsii.String("Denorm: a DynamoDB table and the stream processor that keeps its denormalized data correct")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), props)
	d, err := denormcdk.New(stack, "Denorm", denormcdk.Props{
		RulesFile:      cfg.RulesFile,
		Code:           cfg.Code,
		Dev:            cfg.Dev,
		Architecture:   arch,
		NoRuntimeLayer: cfg.NoRuntimeLayer,
	})
	if err != nil {
		return nil, nil, err
	}
	awscdk.Tags_Of(stack).Add(jsii.String("project"), jsii.String("denorm"), nil)
	output := func(name, desc string, value *string) {
		awscdk.NewCfnOutput(stack, jsii.String(name), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	output("TableName", "The table Denorm manages", d.Table.TableName())
	output("StreamArn", "The table's stream (NEW_AND_OLD_IMAGES)", d.Table.TableStreamArn())
	output("FunctionName", "The stream processor function", d.Function.FunctionName())
	output("DeadLetterQueueUrl", "Failed stream batches (shard and sequence numbers) to replay", d.DeadLetterQueue.QueueUrl())
	return stack, d, nil
}
