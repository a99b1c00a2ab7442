// Command existingtable is an example CDK app that adds Denorm to a DynamoDB table it does
// not create: a table the account already has, which an application writes, imported by
// name and stream ARN. It is its own Go module and uses the construct as any other app
// would, through github.com/denorm/denorm/infra/denormcdk, which builds the function at synth.
//
//	cdk synth -c tableName=Orders -c streamArn=arn:aws:dynamodb:REGION:ACCOUNT:table/Orders/stream/LABEL
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/denorm/denorm/infra/denormcdk"
)

// Context keys (`cdk synth -c key=value`); paths are relative to this directory.
const (
	ctxTableName = "tableName" // the existing table's name
	ctxStreamArn = "streamArn" // its stream: aws dynamodb describe-table --query Table.LatestStreamArn
	ctxRules     = "rules"     // the rules file, default rules.yaml
	ctxCode      = "code"      // a built function (bootstrap's directory or a zip); default: built at synth
)

func main() {
	err := run(awscdk.NewApp(nil))
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "existingtable:", err)
		os.Exit(1)
	}
}

func run(app awscdk.App) error {
	cfg, err := configFromContext(app)
	if err != nil {
		return err
	}
	if _, err := NewOrdersDenormStack(app, "OrdersDenorm", cfg, nil); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}

// Config is the existing table and what Denorm is built from.
type Config struct {
	TableName string
	StreamArn string
	RulesFile string
	Code      string
}

func configFromContext(app constructs.Construct) (Config, error) {
	str := func(key, def string) string {
		if v := app.Node().TryGetContext(jsii.String(key)); v != nil {
			return fmt.Sprint(v)
		}
		return def
	}
	cfg := Config{
		TableName: str(ctxTableName, ""),
		StreamArn: str(ctxStreamArn, ""),
		RulesFile: str(ctxRules, "rules.yaml"),
		Code:      str(ctxCode, ""),
	}
	if cfg.TableName == "" || cfg.StreamArn == "" {
		return cfg, errors.New("name the existing table: -c tableName=NAME -c streamArn=ARN " +
			"(aws dynamodb describe-table --table-name NAME --query Table.LatestStreamArn)")
	}
	return cfg, nil
}

// NewOrdersDenormStack defines a stack that attaches Denorm to the existing table of cfg:
// the stream processor, its permissions on that table, the event source mapping on its
// stream with the filters compiled from the rules, the failure queue and the alarms. The
// table itself is neither created nor changed.
func NewOrdersDenormStack(scope constructs.Construct, id string, cfg Config, props *awscdk.StackProps) (awscdk.Stack, error) {
	stack := awscdk.NewStack(scope, jsii.String(id), props)
	table := awsdynamodb.Table_FromTableAttributes(stack, jsii.String("Orders"), &awsdynamodb.TableAttributes{
		TableName:      jsii.String(cfg.TableName),
		TableStreamArn: jsii.String(cfg.StreamArn),
		// EncryptionKey: awskms.Key_FromKeyArn(...), when a customer managed key encrypts it.
	})
	d, err := denormcdk.New(stack, "Denorm", denormcdk.Props{
		RulesFile: cfg.RulesFile,
		Code:      cfg.Code,
		Table:     table,
	})
	if err != nil {
		return nil, err
	}
	awscdk.NewCfnOutput(stack, jsii.String("FunctionName"), &awscdk.CfnOutputProps{Value: d.Function.FunctionName()})
	awscdk.NewCfnOutput(stack, jsii.String("DeadLetterQueueUrl"), &awscdk.CfnOutputProps{Value: d.DeadLetterQueue.QueueUrl()})
	return stack, nil
}
