package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/denorm/denorm/infra/denormcdk"
	"github.com/denorm/denorm/internal/rules"
)

const fixtureRules = "testdata/rules.yaml"

// One app, built once: the production defaults, the dev override, and Denorm attached to
// tables it does not create (existing_test.go), all checked by cdk-nag (nag_test.go). A CDK
// synth starts Node.js and loads aws-cdk-lib, which is most of the cost; the templates are
// then queried by every test.
var (
	app       awscdk.App
	stacks    []awscdk.Stack // every stack of app, for cdk-nag's annotations
	prod, dev assertions.Template
	// fixture is what the rules compiler makes of fixtureRules, read here independently of
	// the construct, to compare against.
	fixture compiledFixture
	// codeDirForTests holds the dummy bootstrap.
	codeDirForTests string
)

type compiledFixture struct {
	FilterPatterns []string
	QueriedIndexes []string
}

func loadFixture(path string) (compiledFixture, error) {
	set, err := rules.LoadSet(path)
	if err != nil {
		return compiledFixture{}, err
	}
	patterns, err := set.FilterPatterns()
	return compiledFixture{FilterPatterns: patterns, QueriedIndexes: set.QueriedIndexes()}, err
}

func TestMain(m *testing.M) {
	// The machine's Node.js 20 is past jsii's support window; the warning is not the test's
	// business and would bury its output.
	if os.Getenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION") == "" {
		os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	}
	code, err := setup()
	codeDirForTests = code
	if err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		jsii.Close()
		os.Exit(1)
	}
	status := m.Run()
	jsii.Close()
	os.RemoveAll(code)
	os.Exit(status)
}

// setup synthesizes every stack. The function code is a dummy bootstrap in a temporary
// directory (and a zip of it), so the tests run before (and without) `make build`.
func setup() (codeDir string, err error) {
	codeDir, err = os.MkdirTemp("", "denorm-infra-test-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(codeDir, "bootstrap"), []byte(dummyBootstrap), 0o755); err != nil {
		return codeDir, err
	}
	if fixture, err = loadFixture(fixtureRules); err != nil {
		return codeDir, err
	}
	ctx, err := cdkJSONContext()
	if err != nil {
		return codeDir, err
	}
	app = awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	prodStack, _, err := NewDenormStack(app, "Prod", StackConfig{RulesFile: fixtureRules, Code: codeDir}, nil)
	if err != nil {
		return codeDir, err
	}
	devCfg := StackConfig{RulesFile: fixtureRules, Code: codeDir, Dev: true, Architecture: "x86_64"}
	devStack, _, err := NewDenormStack(app, "Dev", devCfg, nil)
	if err != nil {
		return codeDir, err
	}
	stacks = append(stacks, prodStack, devStack)
	existingStacks, err := addExistingTableStacks(app, codeDir)
	if err != nil {
		return codeDir, err
	}
	stacks = append(stacks, existingStacks...)
	applyNagChecks(app)
	// One synth for all (Template_FromStack would synthesize the app once per stack).
	assembly := app.Synth(nil)
	template := func(stack string) assertions.Template {
		b, _ := json.Marshal(assembly.GetStackByName(jsii.String(stack)).Template())
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return assertions.Template_FromJSON(&m, nil)
	}
	prod, dev = template("Prod"), template("Dev")
	existing, tables, attached = template(existingStackName), template(tablesStackName), template(attachedStackName)
	return codeDir, nil
}

const dummyBootstrap = "#!/bin/sh\nexit 1\n"

// cdkJSONContext is the "context" of cdk.json (the feature flags), so that the tests
// synthesize what `cdk synth` does.
func cdkJSONContext() (map[string]any, error) {
	data, err := os.ReadFile("cdk.json")
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("cdk.json: %w", err)
	}
	return cfg.Context, nil
}

// obj and arr keep the expected-template literals short.
type obj = map[string]any
type arr = []any

// assert runs a CDK assertion, which panics (a JavaScript exception) when it fails, and
// reports the failure on t instead, so that one mismatch does not end the whole run.
func assert(t *testing.T, check func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%v", r)
		}
	}()
	check()
}

func getAtt(logicalID, attr string) obj { return obj{"Fn::GetAtt": arr{logicalID, attr}} }

// logicalID returns the only resource of type typ in t.
func logicalID(t *testing.T, tmpl assertions.Template, typ string) string {
	t.Helper()
	found := *tmpl.FindResources(jsii.String(typ), nil)
	if len(found) != 1 {
		t.Fatalf("%d resources of type %s, want 1", len(found), typ)
	}
	for id := range found {
		return id
	}
	return ""
}

// resources returns every resource of type typ in t as plain JSON values.
func resources(tmpl assertions.Template, typ string) map[string]obj {
	out := map[string]obj{}
	for id, r := range *tmpl.FindResources(jsii.String(typ), nil) {
		b, _ := json.Marshal(r)
		var v obj
		_ = json.Unmarshal(b, &v)
		out[id] = v
	}
	return out
}

func TestResourceCounts(t *testing.T) {
	for typ, n := range map[string]float64{
		"AWS::DynamoDB::Table":            1,
		"AWS::Lambda::Function":           1,
		"AWS::Lambda::EventSourceMapping": 1,
		"AWS::SQS::Queue":                 1,
		"AWS::CloudWatch::Alarm":          4,
		"AWS::IAM::Role":                  1,
		"AWS::IAM::Policy":                1,
		"AWS::Logs::LogGroup":             1,
	} {
		assert(t, func() {
			prod.ResourceCountIs(jsii.String(typ), jsii.Number(n))
		})
	}
}

func TestTable(t *testing.T) {
	assert(t, func() {
		prod.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), obj{
			"KeySchema": arr{
				obj{"AttributeName": "pk", "KeyType": "HASH"},
				obj{"AttributeName": "sk", "KeyType": "RANGE"},
			},
			"BillingMode":                      "PAY_PER_REQUEST",
			"StreamSpecification":              obj{"StreamViewType": "NEW_AND_OLD_IMAGES"},
			"TimeToLiveSpecification":          obj{"AttributeName": "ttl", "Enabled": true},
			"PointInTimeRecoverySpecification": obj{"PointInTimeRecoveryEnabled": true},
			"DeletionProtectionEnabled":        true,
			"LocalSecondaryIndexes": arr{
				obj{"IndexName": "lsi0", "KeySchema": arr{
					obj{"AttributeName": "pk", "KeyType": "HASH"}, obj{"AttributeName": "lsi0_sk", "KeyType": "RANGE"},
				}, "Projection": obj{"ProjectionType": "ALL"}},
				obj{"IndexName": "lsi1", "KeySchema": arr{
					obj{"AttributeName": "pk", "KeyType": "HASH"}, obj{"AttributeName": "lsi1_sk", "KeyType": "RANGE"},
				}, "Projection": obj{"ProjectionType": "KEYS_ONLY"}},
			},
			"GlobalSecondaryIndexes": arr{
				obj{"IndexName": "gsi1", "KeySchema": arr{
					obj{"AttributeName": "gsi1pk", "KeyType": "HASH"}, obj{"AttributeName": "gsi1sk", "KeyType": "RANGE"},
				}, "Projection": obj{"ProjectionType": "ALL"}},
				obj{"IndexName": "gsi2", "KeySchema": arr{
					obj{"AttributeName": "gsi2pk", "KeyType": "HASH"}, obj{"AttributeName": "gsi2sk", "KeyType": "RANGE"},
				}, "Projection": obj{"ProjectionType": "INCLUDE", "NonKeyAttributes": arr{"name", "status"}}},
			},
		})
	})
	// Every key attribute is declared once, as a string, and nothing else is.
	table := resources(prod, "AWS::DynamoDB::Table")[logicalID(t, prod, "AWS::DynamoDB::Table")]
	var got []string
	for _, d := range table["Properties"].(obj)["AttributeDefinitions"].(arr) {
		d := d.(obj)
		if d["AttributeType"] != "S" {
			t.Errorf("attribute %v has type %v, want S", d["AttributeName"], d["AttributeType"])
		}
		got = append(got, d["AttributeName"].(string))
	}
	want := []string{"pk", "sk", "lsi0_sk", "lsi1_sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attribute definitions %v, want %v", got, want)
	}
	if table["DeletionPolicy"] != "Retain" || table["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("table deletion/update-replace policy %v/%v, want Retain", table["DeletionPolicy"], table["UpdateReplacePolicy"])
	}
}

func TestDevOverride(t *testing.T) {
	assert(t, func() {
		dev.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), obj{"DeletionProtectionEnabled": false})
	})
	for _, typ := range []string{"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup"} {
		for id, r := range resources(dev, typ) {
			if r["DeletionPolicy"] != "Delete" {
				t.Errorf("dev %s %s: DeletionPolicy %v, want Delete", typ, id, r["DeletionPolicy"])
			}
		}
		for id, r := range resources(prod, typ) {
			if r["DeletionPolicy"] != "Retain" {
				t.Errorf("prod %s %s: DeletionPolicy %v, want Retain", typ, id, r["DeletionPolicy"])
			}
		}
	}
	assert(t, func() {
		dev.HasResourceProperties(jsii.String("AWS::Lambda::Function"), obj{"Architectures": arr{"x86_64"}})
	})
}

func TestFunction(t *testing.T) {
	tableID := logicalID(t, prod, "AWS::DynamoDB::Table")
	logsID := logicalID(t, prod, "AWS::Logs::LogGroup")
	roleID := logicalID(t, prod, "AWS::IAM::Role")
	assert(t, func() {
		prod.HasResourceProperties(jsii.String("AWS::Lambda::Function"), obj{
			"Runtime":       "provided.al2023",
			"Architectures": arr{"arm64"},
			"Handler":       "bootstrap",
			"MemorySize":    denormcdk.DefaultMemoryMB,
			"Timeout":       denormcdk.DefaultTimeout.Seconds(),
			"Role":          getAtt(roleID, "Arn"),
			"Environment": obj{"Variables": obj{
				"DENORM_TABLE": obj{"Ref": tableID},
				"DENORM_RULES": "rules.yaml",
			}},
			"LoggingConfig": obj{"LogFormat": "JSON", "LogGroup": obj{"Ref": logsID}},
		})
	})
	assert(t, func() {
		prod.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), obj{"RetentionInDays": 30})
	})
	// The role has no managed policies: AWSLambdaBasicExecutionRole would grant logs on "*".
	assert(t, func() {
		prod.HasResourceProperties(jsii.String("AWS::IAM::Role"), obj{
			"ManagedPolicyArns": assertions.Match_Absent(),
			"AssumeRolePolicyDocument": obj{"Statement": arr{obj{
				"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": obj{"Service": "lambda.amazonaws.com"},
			}}},
		})
	})
}

// TestFunctionAsset checks the code the function deploys: the rules file as rules.yaml, byte
// for byte, in the function's own code, and bootstrap, executable, in its runtime layer.
func TestFunctionAsset(t *testing.T) {
	checkAsset(t, prod)
}

func checkAsset(t *testing.T, tmpl assertions.Template) {
	t.Helper()
	fn := resources(tmpl, "AWS::Lambda::Function")[logicalID(t, tmpl, "AWS::Lambda::Function")]
	props := fn["Properties"].(obj)
	dir := assetDir(t, props["Code"].(obj)["S3Key"])
	if names := dirNames(t, dir); !reflect.DeepEqual(names, []string{"rules.yaml"}) {
		t.Errorf("function asset holds %v, want [rules.yaml]", names)
	}
	got, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(fixtureRules)
	if string(got) != string(want) {
		t.Errorf("packaged rules.yaml differs from %s", fixtureRules)
	}
	layers, _ := props["Layers"].([]any)
	if len(layers) != 1 {
		t.Fatalf("function layers %v, want the runtime layer", props["Layers"])
	}
	ref, _ := layers[0].(obj)["Ref"].(string)
	layer, ok := resources(tmpl, "AWS::Lambda::LayerVersion")[ref]
	if !ok {
		t.Fatalf("function layer %v is not a layer of the stack", layers[0])
	}
	checkBootstrap(t, assetDir(t, layer["Properties"].(obj)["Content"].(obj)["S3Key"]))
}

// checkBootstrap checks that dir holds only the built bootstrap, executable.
func checkBootstrap(t *testing.T, dir string) {
	t.Helper()
	if names := dirNames(t, dir); !reflect.DeepEqual(names, []string{"bootstrap"}) {
		t.Errorf("runtime asset holds %v, want [bootstrap]", names)
	}
	if st, err := os.Stat(filepath.Join(dir, "bootstrap")); err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Errorf("bootstrap is not executable: %v %v", st.Mode(), err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "bootstrap")); err != nil || string(got) != dummyBootstrap {
		t.Errorf("bootstrap is not the built one: %q %v", got, err)
	}
}

// assetDir is the staged directory of the asset whose S3 key is key, in the tests' app.
func assetDir(t *testing.T, key any) string {
	t.Helper()
	return assetDirIn(t, *app.Outdir(), key)
}

// assetDirIn is assetDir for the app whose output directory is outdir.
func assetDirIn(t *testing.T, outdir string, key any) string {
	t.Helper()
	s, _ := key.(string)
	hash := strings.TrimSuffix(s, ".zip")
	if hash == "" || hash == s {
		t.Fatalf("S3Key %v is not an asset zip", key)
	}
	return filepath.Join(outdir, "asset."+hash)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestMapping(t *testing.T) {
	tableID := logicalID(t, prod, "AWS::DynamoDB::Table")
	queueID := logicalID(t, prod, "AWS::SQS::Queue")
	fnID := logicalID(t, prod, "AWS::Lambda::Function")
	filters := expectedFilters(t)
	assert(t, func() {
		prod.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj{
			"EventSourceArn":                 getAtt(tableID, "StreamArn"),
			"FunctionName":                   obj{"Ref": fnID},
			"StartingPosition":               "TRIM_HORIZON",
			"BatchSize":                      denormcdk.DefaultBatchSize,
			"MaximumBatchingWindowInSeconds": denormcdk.DefaultMaxBatchingWindow.Seconds(),
			"BisectBatchOnFunctionError":     true,
			"MaximumRetryAttempts":           denormcdk.DefaultRetryAttempts,
			"MaximumRecordAgeInSeconds":      denormcdk.DefaultMaxRecordAge.Seconds(),
			"FunctionResponseTypes":          arr{"ReportBatchItemFailures"},
			"ParallelizationFactor":          1,
			"DestinationConfig":              obj{"OnFailure": obj{"Destination": getAtt(queueID, "Arn")}},
			"FilterCriteria":                 filters,
		})
	})
	// Lambda checks the role's stream permissions when it creates the mapping.
	policyID := logicalID(t, prod, "AWS::IAM::Policy")
	assert(t, func() {
		prod.HasResource(jsii.String("AWS::Lambda::EventSourceMapping"), obj{
			"DependsOn": assertions.Match_ArrayWith(&arr{policyID}),
		})
	})
}

func TestDeadLetterQueue(t *testing.T) {
	assert(t, func() {
		prod.HasResourceProperties(jsii.String("AWS::SQS::Queue"), obj{
			"SqsManagedSseEnabled":   true,
			"MessageRetentionPeriod": 14 * 24 * 3600,
		})
	})
}

func TestAlarms(t *testing.T) {
	fnID := logicalID(t, prod, "AWS::Lambda::Function")
	queueID := logicalID(t, prod, "AWS::SQS::Queue")
	fnDim := arr{obj{"Name": "FunctionName", "Value": obj{"Ref": fnID}}}
	for _, want := range []obj{
		{"Namespace": "AWS/Lambda", "MetricName": "IteratorAge", "Dimensions": fnDim, "Statistic": "Maximum",
			"Period": 60, "EvaluationPeriods": 5, "DatapointsToAlarm": 5, "Threshold": 60000},
		{"Namespace": "AWS/Lambda", "MetricName": "Errors", "Dimensions": fnDim, "Statistic": "Sum",
			"Threshold": 0, "EvaluationPeriods": 1},
		{"Namespace": "Denorm", "MetricName": "RecordsOfOtherStreams", "Statistic": "Sum",
			"Dimensions": arr{obj{"Name": "Function", "Value": obj{"Ref": fnID}}}, "Threshold": 0, "EvaluationPeriods": 1},
		{"Namespace": "AWS/SQS", "MetricName": "ApproximateNumberOfMessagesVisible",
			"Dimensions": arr{obj{"Name": "QueueName", "Value": getAtt(queueID, "QueueName")}},
			"Threshold":  0, "EvaluationPeriods": 1},
	} {
		want["ComparisonOperator"] = "GreaterThanThreshold"
		want["TreatMissingData"] = "notBreaching"
		assert(t, func() {
			prod.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), want)
		})
	}
}

func TestOutputs(t *testing.T) {
	tableID := logicalID(t, prod, "AWS::DynamoDB::Table")
	for name, value := range map[string]any{
		"TableName":          obj{"Ref": tableID},
		"StreamArn":          getAtt(tableID, "StreamArn"),
		"FunctionName":       obj{"Ref": logicalID(t, prod, "AWS::Lambda::Function")},
		"DeadLetterQueueUrl": obj{"Ref": logicalID(t, prod, "AWS::SQS::Queue")},
	} {
		assert(t, func() {
			prod.HasOutput(jsii.String(name), obj{"Value": value})
		})
	}
}

// TestPolicies walks every IAM policy of the whole template: no wildcard action, no "*"
// or "/index/*" resource, and exactly the statements the processor needs.
func TestPolicies(t *testing.T) {
	tableArn := "{GetAtt " + logicalID(t, prod, "AWS::DynamoDB::Table") + ".Arn}"
	queried := []string{tableArn}
	for _, ix := range fixture.QueriedIndexes {
		queried = append(queried, tableArn+"/index/"+ix)
	}
	checkPolicies(t, prod, map[string]wantStatement{
		denormcdk.SidReadStream: {denormcdk.StreamReadActions, []string{"{GetAtt " + logicalID(t, prod, "AWS::DynamoDB::Table") + ".StreamArn}"}},
		denormcdk.SidWriteItems: {denormcdk.ItemActions, []string{tableArn}},
		denormcdk.SidQuery:      {[]string{"dynamodb:Query"}, queried},
		denormcdk.SidDeadLetters: {[]string{"sqs:SendMessage"},
			[]string{"{GetAtt " + logicalID(t, prod, "AWS::SQS::Queue") + ".Arn}"}},
		denormcdk.SidLogs: {[]string{"logs:CreateLogStream", "logs:PutLogEvents"},
			[]string{"{GetAtt " + logicalID(t, prod, "AWS::Logs::LogGroup") + ".Arn}"}},
	})
}

type statement struct {
	Sid      string
	Effect   string
	Action   any
	Resource any
}

type wantStatement struct{ actions, resources []string }

// checkPolicies compares the statements of every policy in tmpl with want, by Sid.
func checkPolicies(t *testing.T, tmpl assertions.Template, want map[string]wantStatement) {
	t.Helper()
	got := policyStatements(t, tmpl)
	if len(got) != len(want) {
		t.Errorf("statements %v, want exactly %d", slices.Sorted(maps.Keys(got)), len(want))
	}
	for sid, w := range want {
		s, ok := got[sid]
		if !ok {
			t.Errorf("no statement %s", sid)
			continue
		}
		// Order does not matter to IAM (and the minimizePolicies flag sorts them).
		if a, w := sorted(strs(s.Action)), sorted(w.actions); !reflect.DeepEqual(a, w) {
			t.Errorf("%s: actions %v, want %v", sid, a, w)
		}
		if r, w := sorted(flatten(s.Resource)), sorted(w.resources); !reflect.DeepEqual(r, w) {
			t.Errorf("%s: resources %v, want %v", sid, r, w)
		}
	}
}

// policyStatements returns the statements of every IAM policy in tmpl by Sid, and fails the
// test on any wildcard action, "*" or "/*" resource, or Deny.
func policyStatements(t *testing.T, tmpl assertions.Template) map[string]statement {
	t.Helper()
	b, _ := json.Marshal(tmpl.ToJSON())
	var doc struct {
		Resources map[string]struct {
			Type       string
			Properties json.RawMessage
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]statement{}
	for id, r := range doc.Resources {
		if r.Type != "AWS::IAM::Policy" && r.Type != "AWS::IAM::ManagedPolicy" {
			continue
		}
		var props struct {
			PolicyDocument struct{ Statement []statement }
		}
		if err := json.Unmarshal(r.Properties, &props); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for _, s := range props.PolicyDocument.Statement {
			for _, a := range strs(s.Action) {
				if strings.Contains(a, "*") {
					t.Errorf("%s %s: wildcard action %q", id, s.Sid, a)
				}
			}
			for _, res := range flatten(s.Resource) {
				if res == "*" || strings.HasSuffix(res, "/*") {
					t.Errorf("%s %s: wildcard resource %q", id, s.Sid, res)
				}
			}
			if s.Effect != "Allow" {
				t.Errorf("%s %s: effect %s", id, s.Sid, s.Effect)
			}
			got[s.Sid] = s
		}
	}
	return got
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// strs returns an IAM Action value (a string or a list) as a list.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// flatten renders an IAM Resource value (a string, an intrinsic or a list of them) as
// strings, with {Fn::Join} concatenated and {Fn::GetAtt} as "{GetAtt id.attr}".
func flatten(v any) []string {
	var render func(v any) string
	render = func(v any) string {
		switch v := v.(type) {
		case string:
			return v
		case map[string]any:
			if j, ok := v["Fn::Join"].([]any); ok && len(j) == 2 {
				var parts []string
				for _, p := range j[1].([]any) {
					parts = append(parts, render(p))
				}
				return strings.Join(parts, j[0].(string))
			}
			if g, ok := v["Fn::GetAtt"].([]any); ok && len(g) == 2 {
				return fmt.Sprintf("{GetAtt %v.%v}", g[0], g[1])
			}
			if r, ok := v["Ref"]; ok {
				return fmt.Sprintf("{Ref %v}", r)
			}
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	if list, ok := v.([]any); ok {
		var out []string
		for _, e := range list {
			out = append(out, render(e))
		}
		return out
	}
	return []string{render(v)}
}

// TestStackErrors: a stack that cannot be right fails the synth with the reason, before
// anything is deployed.
func TestStackErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  StackConfig
		want string
	}{
		{"no bootstrap", StackConfig{RulesFile: fixtureRules, Code: t.TempDir()}, "no bootstrap in"},
		{"no code", StackConfig{RulesFile: fixtureRules, Code: "testdata/missing"}, "leave Code empty and the construct builds the function"},
		{"code not a zip", StackConfig{RulesFile: fixtureRules, Code: fixtureRules}, "not a directory or a zip file"},
		{"no rules file", StackConfig{RulesFile: "testdata/missing.yaml", Code: t.TempDir()}, "reading rules file"},
		{"invalid rules", StackConfig{RulesFile: "testdata/invalid.yaml", Code: t.TempDir()}, "testdata/invalid.yaml:"},
		{"bad architecture", StackConfig{RulesFile: fixtureRules, Code: t.TempDir(), Architecture: "mips"}, "want arm64 or x86_64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := awscdk.NewApp(nil)
			_, _, err := NewDenormStack(a, "Broken", tc.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTooManyFiltersFailsSynth: rules that need more filters than the account's quota
// (Props.MaxFilters) stop the construct with the reason, and nothing is added to the tree.
func TestTooManyFiltersFailsSynth(t *testing.T) {
	// One filter holds 4,096 characters of key prefixes: 40 entities with 120-character
	// prefixes need two.
	var b strings.Builder
	b.WriteString("version: 1\nentities:\n")
	for i := range 40 {
		prefix := fmt.Sprintf("E%02d%s", i, strings.Repeat("x", 117))
		fmt.Fprintf(&b, "  Parent%d: {pk: \"%s#{id}\", sk: META, attributes: [n]}\n", i, prefix)
		fmt.Fprintf(&b, "  Child%d: {pk: \"%s#{id}\", sk: \"C#{cid}\"}\n", i, prefix)
	}
	b.WriteString("rules:\n")
	for i := range 40 {
		fmt.Fprintf(&b, "  - {name: count-%d, count: {of: Child%d, into: Parent%d, attribute: n}}\n", i, i, i)
	}
	rulesFile := filepath.Join(t.TempDir(), "many-prefixes.yaml")
	if err := os.WriteFile(rulesFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	many, err := loadFixture(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(many.FilterPatterns) != 2 {
		t.Fatalf("the generated rules compile to %d filters, want 2", len(many.FilterPatterns))
	}

	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Filters"), nil)
	_, err = denormcdk.New(stack, "Denorm", denormcdk.Props{RulesFile: rulesFile, Code: codeDirForTests, MaxFilters: 1})
	if !errors.Is(err, denormcdk.ErrTooManyFilters) {
		t.Fatalf("error %v, want ErrTooManyFilters", err)
	}
	if !strings.Contains(err.Error(), "need 2 event filters") {
		t.Errorf("error %q does not say how many filters the rules need", err)
	}
	if n := len(*stack.Node().Children()); n != 0 {
		t.Errorf("%d constructs added to the stack despite the error", n)
	}
}

func TestConfigFromContext(t *testing.T) {
	a := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"dev": "true", "stack": "Denorm-dev", "arch": "x86_64", "runtimeLayer": "false"}})
	cfg, name, err := configFromContext(a)
	if err != nil {
		t.Fatal(err)
	}
	want := StackConfig{RulesFile: "../rules/social.yaml", Dev: true, Architecture: "x86_64", NoRuntimeLayer: true}
	if cfg != want || name != "Denorm-dev" {
		t.Errorf("got %+v %q, want %+v %q", cfg, name, want, "Denorm-dev")
	}
	bad := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"dev": "maybe"}})
	if _, _, err := configFromContext(bad); err == nil {
		t.Error("dev=maybe accepted")
	}
}

// TestFiltersFromRules checks what the compiled filters let through, by evaluating them the
// way Lambda does for the partition key: rule entities pass, reserved items do not, except
// the fan-out job items whose records continue a paged fan-out and the probes the
// function answers.
func TestFiltersFromRules(t *testing.T) {
	if len(fixture.FilterPatterns) == 0 {
		t.Fatal("the fixture's rules compile to no event filters: every record would reach the function")
	}
	for pk, want := range map[string]bool{
		"USER#u1":             true, // User: source of comment-author
		"POST#p1":             true, // Post and Comment
		"_dn#job#123":         true, // fan-out continuation
		"_dn#probe#123":       true, // a backfill's probe, answered by the function
		"_dn#marker#evt-1":    false,
		"_dn#wm#POST#p1":      false,
		"GROUP#g1":            false, // no rule reads it in the fixture
		"user#u1":             false, // prefixes are case-sensitive
		"":                    false,
		"_dn#jobless-but-not": false,
	} {
		got := false
		for _, p := range fixture.FilterPatterns {
			if matchesPK(t, p, "pk", pk) {
				got = true
			}
		}
		if got != want {
			t.Errorf("pk %q passes the filters: %v, want %v (filters %q)", pk, got, want, fixture.FilterPatterns)
		}
	}
}

// matchesPK evaluates pattern against a record whose only field is dynamodb.Keys.<attr>.S
// = value. It understands what the rules compiler emits (literals, prefix, anything-but
// with values) and fails the test on anything else.
func matchesPK(t *testing.T, pattern, attr, value string) bool {
	t.Helper()
	var p struct {
		Dynamodb struct {
			Keys map[string]struct{ S []any }
		}
	}
	if err := json.Unmarshal([]byte(pattern), &p); err != nil {
		t.Fatalf("pattern %s: %v", pattern, err)
	}
	key, ok := p.Dynamodb.Keys[attr]
	if !ok || len(p.Dynamodb.Keys) != 1 {
		t.Fatalf("pattern %s does not filter on dynamodb.Keys.%s alone", pattern, attr)
	}
	for _, v := range key.S {
		switch v := v.(type) {
		case string:
			if v == value {
				return true
			}
		case map[string]any:
			if pre, ok := v["prefix"].(string); ok && len(v) == 1 {
				if strings.HasPrefix(value, pre) {
					return true
				}
				continue
			}
			if list, ok := v["anything-but"].([]any); ok && len(v) == 1 {
				if !slices.Contains(list, any(value)) {
					return true
				}
				continue
			}
			t.Fatalf("pattern %s: operator %v not understood by this test", pattern, v)
		}
	}
	return false
}
