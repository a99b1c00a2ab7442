// Command infra is the CDK app that deploys Denorm: a DynamoDB table laid out by a rules file
// and the Lambda function that keeps its denormalized data correct. Run it through the CDK
// CLI (`make synth`, `make deploy`); context values choose the rules file, the function code
// and a disposable dev stack (see README.md).
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/aws/jsii-runtime-go"
)

func main() {
	err := run()
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "denorm infra:", err)
		os.Exit(1)
	}
}

func run() error {
	app := awscdk.NewApp(nil)
	cfg, stackName, err := configFromContext(app)
	if err != nil {
		return err
	}
	if _, _, err := NewDenormStack(app, stackName, cfg, nil); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}
