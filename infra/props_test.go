package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/denorm/denorm/infra/denormcdk"
)

// synthProps defines one stack with a table of the fixture's layout and a Denorm construct
// on it configured by props (RulesFile and Code filled in when empty), and returns its
// template.
func synthProps(t *testing.T, props denormcdk.Props) (assertions.Template, awscdk.Stack) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String("Props"), nil)
	props = withFixture(props)
	props.Table = newAppTable(stack, "AppTable", awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES)
	if _, err := denormcdk.New(stack, "Denorm", props); err != nil {
		t.Fatal(err)
	}
	return assertions.Template_FromStack(stack, nil), stack
}

// propsError is the error New gives for props on a fresh stack.
func propsError(t *testing.T, props denormcdk.Props) error {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	_, err := denormcdk.New(awscdk.NewStack(app, jsii.String("Props"), nil), "Denorm", withFixture(props))
	return err
}

// withFixture fills in the fixture's rules file and the tests' code where props has none.
func withFixture(props denormcdk.Props) denormcdk.Props {
	if props.RulesFile == "" && props.Rules == nil {
		props.RulesFile = fixtureRules
	}
	if props.Code == "" {
		props.Code = codeDirForTests
	}
	return props
}

// TestRuntimeLayerShared: two constructs in one stack and one in another, built from the same
// code, deploy bootstrap once: one layer per stack, one runtime asset for the app, and each
// function's own code holds only its rules.
func TestRuntimeLayerShared(t *testing.T) {
	outdir := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir)})
	one := awscdk.NewStack(app, jsii.String("One"), nil)
	two := awscdk.NewStack(app, jsii.String("Two"), nil)
	for i, stack := range []awscdk.Stack{one, one, two} {
		id := []string{"Orders", "Users", "Orders"}[i]
		table := newAppTable(stack, id+"Table", awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES)
		if _, err := denormcdk.New(stack, id, denormcdk.Props{RulesFile: fixtureRules, Code: codeDirForTests, Table: table}); err != nil {
			t.Fatal(err)
		}
	}
	layerKeys := map[string]bool{}
	for _, stack := range []awscdk.Stack{one, two} {
		tmpl := assertions.Template_FromStack(stack, nil)
		layers := resources(tmpl, "AWS::Lambda::LayerVersion")
		if len(layers) != 1 {
			t.Fatalf("%s: %d layers, want 1 shared by its functions", *stack.StackName(), len(layers))
		}
		for id, l := range layers {
			layerKeys[l["Properties"].(obj)["Content"].(obj)["S3Key"].(string)] = true
			for fid, fn := range resources(tmpl, "AWS::Lambda::Function") {
				got := fn["Properties"].(obj)["Layers"]
				if want := (arr{obj{"Ref": id}}); !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s: layers %v, want %v", *stack.StackName(), fid, got, want)
				}
			}
		}
	}
	if len(layerKeys) != 1 {
		t.Errorf("runtime assets %v, want one for the whole app", layerKeys)
	}
	app.Synth(nil)
	var bootstraps int
	_ = filepath.WalkDir(outdir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "bootstrap" && strings.HasPrefix(filepath.Base(filepath.Dir(path)), "asset.") {
			bootstraps++
		}
		return nil
	})
	if bootstraps != 1 {
		t.Errorf("%d assets in the cloud assembly hold bootstrap, want 1", bootstraps)
	}
}

// TestNoRuntimeLayer: bootstrap and the rules in the function's own code, no layer.
func TestNoRuntimeLayer(t *testing.T) {
	tmpl, stack := synthProps(t, denormcdk.Props{NoRuntimeLayer: true})
	tmpl.ResourceCountIs(jsii.String("AWS::Lambda::LayerVersion"), jsii.Number(0))
	fn := resources(tmpl, "AWS::Lambda::Function")[logicalID(t, tmpl, "AWS::Lambda::Function")]
	dir := assetDirIn(t, *awscdk.Stage_Of(stack).AssetOutdir(), fn["Properties"].(obj)["Code"].(obj)["S3Key"])
	if names := dirNames(t, dir); !reflect.DeepEqual(names, []string{"bootstrap", "rules.yaml"}) {
		t.Errorf("function asset holds %v, want [bootstrap rules.yaml]", names)
	}
}

// TestRulesAsValue: rules given as bytes (as //go:embed gives them) are packaged byte for
// byte, and a mistake in them is reported under RulesName with its line and column.
func TestRulesAsValue(t *testing.T) {
	data, err := os.ReadFile(fixtureRules)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "# embedded\n"...) // not the bytes of any other test's asset
	tmpl, stack := synthProps(t, denormcdk.Props{Rules: data})
	fn := resources(tmpl, "AWS::Lambda::Function")[logicalID(t, tmpl, "AWS::Lambda::Function")]
	dir := assetDirIn(t, *awscdk.Stage_Of(stack).AssetOutdir(), fn["Properties"].(obj)["Code"].(obj)["S3Key"])
	got, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil || string(got) != string(data) {
		t.Errorf("packaged rules differ from the value given (%v)", err)
	}

	err = propsError(t, denormcdk.Props{Rules: []byte("version: 1\nentities:\n  User: {pk: \"USER#{id}\", sk: PROFILE}\nrules:\n  - {name: c, count: {of: Nope, into: User, attribute: n}}\n"), RulesName: "embedded/rules.yaml"})
	if err == nil || !strings.Contains(err.Error(), "embedded/rules.yaml:5:") {
		t.Errorf("error %v, want one at embedded/rules.yaml:5:col", err)
	}
	if err := propsError(t, denormcdk.Props{RulesFile: fixtureRules, Rules: data}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("error %v, want RulesFile and Rules refused together", err)
	}
}

// TestDeliveryProps: durations as awscdk.Duration, the starting position and reserved
// concurrency reach the function and the mapping; values Lambda would refuse stop the synth.
func TestDeliveryProps(t *testing.T) {
	tmpl, _ := synthProps(t, denormcdk.Props{
		Timeout:             awscdk.Duration_Minutes(jsii.Number(2)),
		MaxBatchingWindow:   awscdk.Duration_Seconds(jsii.Number(3)),
		MaxRecordAge:        awscdk.Duration_Hours(jsii.Number(6)),
		StartingPosition:    awslambda.StartingPosition_LATEST,
		ReservedConcurrency: 4,
	})
	assert(t, func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), obj{"Timeout": 120, "ReservedConcurrentExecutions": 4})
	})
	assert(t, func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj{
			"StartingPosition": "LATEST", "MaximumBatchingWindowInSeconds": 3, "MaximumRecordAgeInSeconds": 21600,
		})
	})

	for _, tc := range []struct {
		name  string
		props denormcdk.Props
		want  string
	}{
		{"window not whole seconds", denormcdk.Props{MaxBatchingWindow: awscdk.Duration_Millis(jsii.Number(1500))}, "MaxBatchingWindow 1.5s must be whole seconds"},
		{"timeout too long", denormcdk.Props{Timeout: awscdk.Duration_Minutes(jsii.Number(20))}, "Timeout 20m0s must be whole seconds between 1s and 15m"},
		{"record age too short", denormcdk.Props{MaxRecordAge: awscdk.Duration_Seconds(jsii.Number(30))}, "MaxRecordAge 30s"},
		{"at timestamp", denormcdk.Props{StartingPosition: awslambda.StartingPosition_AT_TIMESTAMP}, "TRIM_HORIZON or LATEST"},
		{"negative reservation", denormcdk.Props{ReservedConcurrency: -1}, "ReservedConcurrency -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := propsError(t, tc.props); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestAppFailureQueue: the app's own KMS-encrypted queue is the mapping's failure
// destination; the construct creates none, grants exactly send and the key's use, and
// alarms on the app's queue.
func TestAppFailureQueue(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String("Props"), nil)
	key := awskms.NewKey(stack, jsii.String("QueueKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	queue := awssqs.NewQueue(stack, jsii.String("AppFailures"), &awssqs.QueueProps{
		Encryption: awssqs.QueueEncryption_KMS, EncryptionMasterKey: key,
	})
	table := newAppTable(stack, "AppTable", awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES)
	d, err := denormcdk.New(stack, "Denorm", denormcdk.Props{RulesFile: fixtureRules, Code: codeDirForTests, Table: table, FailureQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	if d.DeadLetterQueue != nil {
		t.Error("the construct created a queue beside the app's")
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	queueID := logicalID(t, tmpl, "AWS::SQS::Queue")
	assert(t, func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj{
			"DestinationConfig": obj{"OnFailure": obj{"Destination": getAtt(queueID, "Arn")}},
		})
	})
	got := policyStatements(t, tmpl)
	if s := got[denormcdk.SidDeadLetters]; !reflect.DeepEqual(strs(s.Action), []string{"sqs:SendMessage"}) ||
		!reflect.DeepEqual(flatten(s.Resource), []string{"{GetAtt " + queueID + ".Arn}"}) {
		t.Errorf("%s: %v on %v, want sqs:SendMessage on the app's queue", denormcdk.SidDeadLetters, s.Action, s.Resource)
	}
	if s := got[denormcdk.SidFailureKey]; !reflect.DeepEqual(sorted(strs(s.Action)), sorted(denormcdk.FailureKeyActions)) ||
		!reflect.DeepEqual(flatten(s.Resource), []string{"{GetAtt " + logicalID(t, tmpl, "AWS::KMS::Key") + ".Arn}"}) {
		t.Errorf("%s: %v on %v, want %v on the queue's key", denormcdk.SidFailureKey, s.Action, s.Resource, denormcdk.FailureKeyActions)
	}
	if d.Alarms.DeadLetters == nil {
		t.Error("no alarm on the app's failure queue")
	}
}

// TestAppFailureTopicAndAlarms: an SNS topic as the failure destination gets sns:Publish and no
// queue alarm; NoAlarms defines none at all, and OKActions reach every alarm.
func TestAppFailureTopicAndAlarms(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String("Props"), nil)
	topic := awssns.NewTopic(stack, jsii.String("AppFailures"), nil)
	table := newAppTable(stack, "AppTable", awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES)
	ops := awssns.NewTopic(stack, jsii.String("Ops"), nil)
	d, err := denormcdk.New(stack, "Denorm", denormcdk.Props{RulesFile: fixtureRules, Code: codeDirForTests, Table: table,
		FailureTopic: topic, OKActions: []awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(ops)}})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(0))
	tmpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(3))
	if d.Alarms.DeadLetters != nil {
		t.Error("a queue alarm with a topic as the destination")
	}
	if s := policyStatements(t, tmpl)[denormcdk.SidDeadLetters]; !reflect.DeepEqual(strs(s.Action), []string{"sns:Publish"}) {
		t.Errorf("%s: %v, want sns:Publish", denormcdk.SidDeadLetters, s.Action)
	}
	assert(t, func() {
		tmpl.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), obj{"OKActions": arr{obj{"Ref": *stack.GetLogicalId(ops.Node().DefaultChild().(awscdk.CfnElement))}}})
	})

	quiet, _ := synthProps(t, denormcdk.Props{NoAlarms: true})
	quiet.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(0))

	if err := propsError(t, denormcdk.Props{FailureQueue: awssqs.Queue_FromQueueArn(stack, jsii.String("Q"), jsii.String("arn:aws:sqs:eu-west-1:111122223333:q")), FailureTopic: topic}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("error %v, want FailureQueue and FailureTopic refused together", err)
	}
	fifo := awssqs.Queue_FromQueueArn(stack, jsii.String("F"), jsii.String("arn:aws:sqs:eu-west-1:111122223333:failures.fifo"))
	if err := propsError(t, denormcdk.Props{FailureQueue: fifo}); err == nil || !strings.Contains(err.Error(), "FIFO queue") {
		t.Errorf("error %v, want a FIFO failure queue refused", err)
	}
}
