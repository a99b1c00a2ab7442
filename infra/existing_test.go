package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/denorm/denorm/infra/denormcdk"
)

// Denorm on tables it does not create, built the way another app would build it.
const (
	existingStackName = "Existing" // a table of the account, imported by name and stream ARN
	tablesStackName   = "Tables"   // a table another stack of the app defines ...
	attachedStackName = "Attached" // ... and Denorm attached to it
	existingTableName = "Orders"
	existingStreamArn = "arn:aws:dynamodb:eu-west-1:111122223333:table/Orders/stream/2026-01-01T00:00:00.000"
	existingKeyArn    = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
)

var existing, tables, attached assertions.Template

// addExistingTableStacks adds the stacks of Denorm on existing tables to app. "Existing"
// imports a table encrypted with a customer managed key; "Attached" takes the function code
// as a zip, as `make build` also writes it.
func addExistingTableStacks(app awscdk.App, codeDir string) ([]awscdk.Stack, error) {
	existingStack := awscdk.NewStack(app, jsii.String(existingStackName), nil)
	imported := awsdynamodb.Table_FromTableAttributes(existingStack, jsii.String("Orders"), &awsdynamodb.TableAttributes{
		TableName:      jsii.String(existingTableName),
		TableStreamArn: jsii.String(existingStreamArn),
		EncryptionKey:  awskms.Key_FromKeyArn(existingStack, jsii.String("OrdersKey"), jsii.String(existingKeyArn)),
	})
	if _, err := denormcdk.New(existingStack, "Denorm", denormcdk.Props{RulesFile: fixtureRules, Code: codeDir, Table: imported}); err != nil {
		return nil, err
	}

	tablesStack := awscdk.NewStack(app, jsii.String(tablesStackName), nil)
	table := newAppTable(tablesStack, "AppTable", awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES)
	attachedStack := awscdk.NewStack(app, jsii.String(attachedStackName), nil)
	zipPath := filepath.Join(codeDir, "streamproc.zip")
	if err := zipBootstrap(zipPath, filepath.Join(codeDir, "bootstrap")); err != nil {
		return nil, err
	}
	if _, err := denormcdk.New(attachedStack, "Denorm", denormcdk.Props{RulesFile: fixtureRules, Code: zipPath, Table: table}); err != nil {
		return nil, err
	}
	return []awscdk.Stack{existingStack, tablesStack, attachedStack}, nil
}

// newAppTable is a table of the fixture's layout as an application defines it; stream ""
// leaves its stream off.
func newAppTable(scope awscdk.Stack, id string, stream awsdynamodb.StreamViewType) awsdynamodb.Table {
	str := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	props := &awsdynamodb.TableProps{
		PartitionKey:        str("pk"),
		SortKey:             str("sk"),
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("ttl"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
	}
	if stream != "" {
		props.Stream = stream
	}
	t := awsdynamodb.NewTable(scope, jsii.String(id), props)
	t.AddLocalSecondaryIndex(&awsdynamodb.LocalSecondaryIndexProps{IndexName: jsii.String("lsi0"), SortKey: str("lsi0_sk")})
	t.AddLocalSecondaryIndex(&awsdynamodb.LocalSecondaryIndexProps{IndexName: jsii.String("lsi1"), SortKey: str("lsi1_sk"),
		ProjectionType: awsdynamodb.ProjectionType_KEYS_ONLY})
	t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName: jsii.String("gsi1"), PartitionKey: str("gsi1pk"), SortKey: str("gsi1sk"),
	})
	t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName: jsii.String("gsi2"), PartitionKey: str("gsi2pk"), SortKey: str("gsi2sk"),
		ProjectionType: awsdynamodb.ProjectionType_INCLUDE, NonKeyAttributes: jsii.Strings("name", "status"),
	})
	return t
}

// zipBootstrap writes the zip `make build` writes: bootstrap, executable, at the root.
func zipBootstrap(zipPath, bootstrap string) error {
	data, err := os.ReadFile(bootstrap)
	if err != nil {
		return err
	}
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func TestExistingTableResources(t *testing.T) {
	for name, tmpl := range map[string]assertions.Template{existingStackName: existing, attachedStackName: attached} {
		t.Run(name, func(t *testing.T) {
			for typ, n := range map[string]float64{
				"AWS::DynamoDB::Table":            0, // neither created nor changed
				"AWS::Lambda::Function":           1,
				"AWS::Lambda::EventSourceMapping": 1,
				"AWS::SQS::Queue":                 1,
				"AWS::CloudWatch::Alarm":          4,
				"AWS::IAM::Role":                  1,
				"AWS::IAM::Policy":                1,
				"AWS::Logs::LogGroup":             1,
			} {
				assert(t, func() { tmpl.ResourceCountIs(jsii.String(typ), jsii.Number(n)) })
			}
		})
	}
	assert(t, func() { tables.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1)) })
}

// TestExistingTableMapping: the mapping reads the given stream with the rules' filters, and
// the function is told the given table.
func TestExistingTableMapping(t *testing.T) {
	queueID := logicalID(t, existing, "AWS::SQS::Queue")
	assert(t, func() {
		existing.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj{
			"EventSourceArn":             existingStreamArn,
			"FunctionName":               obj{"Ref": logicalID(t, existing, "AWS::Lambda::Function")},
			"StartingPosition":           "TRIM_HORIZON",
			"BisectBatchOnFunctionError": true,
			"FunctionResponseTypes":      arr{"ReportBatchItemFailures"},
			"ParallelizationFactor":      1,
			"DestinationConfig":          obj{"OnFailure": obj{"Destination": getAtt(queueID, "Arn")}},
			"FilterCriteria":             expectedFilters(t),
		})
	})
	assert(t, func() {
		existing.HasResourceProperties(jsii.String("AWS::Lambda::Function"), obj{
			"Environment": obj{"Variables": obj{"DENORM_TABLE": existingTableName, "DENORM_RULES": "rules.yaml"}},
		})
	})
	// A table of another stack of the app arrives through that stack's exports.
	importValue := obj{"Fn::ImportValue": assertions.Match_AnyValue()}
	assert(t, func() {
		attached.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj{
			"EventSourceArn": importValue,
			"FilterCriteria": expectedFilters(t),
		})
	})
	assert(t, func() {
		attached.HasResourceProperties(jsii.String("AWS::Lambda::Function"), obj{
			"Environment": obj{"Variables": obj{"DENORM_TABLE": importValue}},
		})
	})
	assert(t, func() {
		tables.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), obj{
			"StreamSpecification": obj{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		})
	})
}

// expectedFilters is the mapping's FilterCriteria for the fixture's rules.
func expectedFilters(t *testing.T) any {
	t.Helper()
	if len(fixture.FilterPatterns) == 0 {
		t.Fatal("the fixture's rules compile to no event filters")
	}
	var fs arr
	for _, p := range fixture.FilterPatterns {
		fs = append(fs, obj{"Pattern": p})
	}
	return obj{"Filters": fs}
}

// TestExistingTablePolicies: the imported table's stream, items and queried index by ARN,
// and its customer managed key.
func TestExistingTablePolicies(t *testing.T) {
	tableArn := "arn:{Ref AWS::Partition}:dynamodb:{Ref AWS::Region}:{Ref AWS::AccountId}:table/" + existingTableName
	queried := []string{tableArn}
	for _, ix := range fixture.QueriedIndexes {
		queried = append(queried, tableArn+"/index/"+ix)
	}
	checkPolicies(t, existing, map[string]wantStatement{
		denormcdk.SidReadStream: {denormcdk.StreamReadActions, []string{existingStreamArn}},
		denormcdk.SidWriteItems: {denormcdk.ItemActions, []string{tableArn}},
		denormcdk.SidQuery:      {[]string{"dynamodb:Query"}, queried},
		denormcdk.SidDeadLetters: {[]string{"sqs:SendMessage"},
			[]string{"{GetAtt " + logicalID(t, existing, "AWS::SQS::Queue") + ".Arn}"}},
		denormcdk.SidLogs: {[]string{"logs:CreateLogStream", "logs:PutLogEvents"},
			[]string{"{GetAtt " + logicalID(t, existing, "AWS::Logs::LogGroup") + ".Arn}"}},
		denormcdk.SidTableKey: {denormcdk.TableKeyActions, []string{existingKeyArn}},
	})
}

// TestAttachedTablePolicies: the same statements on another stack's table, by its exports.
func TestAttachedTablePolicies(t *testing.T) {
	stmts := policyStatements(t, attached)
	for _, sid := range []string{denormcdk.SidReadStream, denormcdk.SidWriteItems, denormcdk.SidQuery} {
		s, ok := stmts[sid]
		if !ok {
			t.Errorf("no statement %s", sid)
			continue
		}
		for _, r := range flatten(s.Resource) {
			if !strings.Contains(r, "Fn::ImportValue") {
				t.Errorf("%s: resource %s is not the other stack's table", sid, r)
			}
		}
	}
	if len(stmts) != 5 {
		t.Errorf("%d statements, want 5 (no key statement: the table uses an AWS owned key)", len(stmts))
	}
}

func TestAttachedTableAssetFromZip(t *testing.T) {
	checkAsset(t, attached)
}

// TestExistingTableErrors: a table whose stream cannot feed the processor stops the
// construct with the reason, and Denorm adds nothing.
func TestExistingTableErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table func(awscdk.Stack) awsdynamodb.ITable
		want  string
	}{
		{"no stream", func(s awscdk.Stack) awsdynamodb.ITable { return newAppTable(s, "T", "") }, "has no stream"},
		{"new image only", func(s awscdk.Stack) awsdynamodb.ITable {
			return newAppTable(s, "T", awsdynamodb.StreamViewType_NEW_IMAGE)
		}, "streams NEW_IMAGE: Denorm needs NEW_AND_OLD_IMAGES"},
		{"imported without stream ARN", func(s awscdk.Stack) awsdynamodb.ITable {
			return awsdynamodb.Table_FromTableName(s, jsii.String("T"), jsii.String(existingTableName))
		}, "giving TableStreamArn"},
		{"keys, an index and the TTL attribute other than the rules say", func(s awscdk.Stack) awsdynamodb.ITable {
			str := func(name string) *awsdynamodb.Attribute {
				return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
			}
			t := awsdynamodb.NewTable(s, jsii.String("T"), &awsdynamodb.TableProps{PartitionKey: str("PK"), SortKey: str("SK"),
				TimeToLiveAttribute: jsii.String("expiresAt"), Stream: awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES})
			t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{IndexName: jsii.String("gsi1"), PartitionKey: str("gsi1pk")})
			return t
		}, "table Broken/T: partition key is PK, the rules say pk"},
		{"another table's stream", func(s awscdk.Stack) awsdynamodb.ITable {
			return awsdynamodb.Table_FromTableAttributes(s, jsii.String("T"), &awsdynamodb.TableAttributes{
				TableName: jsii.String("Invoices"), TableStreamArn: jsii.String(existingStreamArn),
			})
		}, "is not the stream of table Invoices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Broken"), nil)
			_, err := denormcdk.New(stack, "Denorm", denormcdk.Props{RulesFile: fixtureRules, Code: codeDirForTests, Table: tc.table(stack)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			t.Logf("%v", err)
			if stack.Node().TryFindChild(jsii.String("Denorm")) != nil {
				t.Error("Denorm added to the stack despite the error")
			}
		})
	}
}

// TestGlobalTable: Denorm on a TableV2 with replicas in two more Regions is deployed in the
// stack's Region alone, on that replica's stream, with the same filters, alarms and failure
// destination as on a table of one Region; nothing is added in the replicas' Regions
// (docs/processor.md, "Global tables").
func TestGlobalTable(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Global"), &awscdk.StackProps{Env: &awscdk.Environment{Region: jsii.String("us-east-1")}})
	str := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	table := awsdynamodb.NewTableV2(stack, jsii.String("AppTable"), &awsdynamodb.TablePropsV2{
		PartitionKey: str("pk"), SortKey: str("sk"), TimeToLiveAttribute: jsii.String("ttl"),
		DynamoStream: awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		LocalSecondaryIndexes: &[]*awsdynamodb.LocalSecondaryIndexProps{
			{IndexName: jsii.String("lsi0"), SortKey: str("lsi0_sk")},
			{IndexName: jsii.String("lsi1"), SortKey: str("lsi1_sk"), ProjectionType: awsdynamodb.ProjectionType_KEYS_ONLY},
		},
		GlobalSecondaryIndexes: &[]*awsdynamodb.GlobalSecondaryIndexPropsV2{
			{IndexName: jsii.String("gsi1"), PartitionKey: str("gsi1pk"), SortKey: str("gsi1sk")},
			{IndexName: jsii.String("gsi2"), PartitionKey: str("gsi2pk"), SortKey: str("gsi2sk"),
				ProjectionType: awsdynamodb.ProjectionType_INCLUDE, NonKeyAttributes: jsii.Strings("name", "status")},
		},
		Replicas: &[]*awsdynamodb.ReplicaTableProps{{Region: jsii.String("eu-west-1")}, {Region: jsii.String("ap-southeast-2")}},
	})
	d, err := denormcdk.New(stack, "Denorm", denormcdk.Props{RulesFile: fixtureRules, Code: codeDirForTests, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if d.Mapping == nil {
		t.Fatal("no mapping")
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	for typ, n := range map[string]float64{
		"AWS::DynamoDB::GlobalTable":      1,
		"AWS::Lambda::Function":           1,
		"AWS::Lambda::EventSourceMapping": 1,
		"AWS::SQS::Queue":                 1,
		"AWS::CloudWatch::Alarm":          4,
	} {
		assert(t, func() { tmpl.ResourceCountIs(jsii.String(typ), jsii.Number(n)) })
	}
	tableID := logicalID(t, tmpl, "AWS::DynamoDB::GlobalTable")
	assert(t, func() {
		tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::GlobalTable"), obj{
			"Replicas": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&obj{"Region": "eu-west-1"}),
				assertions.Match_ObjectLike(&obj{"Region": "ap-southeast-2"}), assertions.Match_ObjectLike(&obj{"Region": "us-east-1"})}),
		})
	})
	assert(t, func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj{
			"EventSourceArn":        getAtt(tableID, "StreamArn"),
			"ParallelizationFactor": 1,
			"FilterCriteria":        expectedFilters(t),
		})
	})
	// One stack, in the table's own Region: no stack was added for the replicas' Regions.
	stacks := 0
	for _, c := range *app.Node().Children() {
		if *awscdk.Stack_IsStack(c) {
			stacks++
		}
	}
	if stacks != 1 {
		t.Errorf("the app has %d stacks, want the table's one", stacks)
	}
}

// TestGlobalTableRefusesKeepingExpiredItems: on a table with replicas, a rule that keeps
// expired items counted is refused at synth, with the rule's position: another Region's TTL
// delete reaches the processing Region as an ordinary delete.
func TestGlobalTableRefusesKeepingExpiredItems(t *testing.T) {
	const rulesText = `version: 1
table: {partitionKey: pk, sortKey: sk, ttlAttribute: ttl}
entities:
  Post:    {pk: "POST#{postId}", sk: METADATA, attributes: [commentCount]}
  Comment: {pk: "POST#{postId}", sk: "COMMENT#{commentId}"}
rules:
  - name: post-comment-count
    count: {of: Comment, into: Post, attribute: commentCount, onExpiry: ignore}
`
	str := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	for _, replicas := range []bool{true, false} {
		stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Global"), &awscdk.StackProps{Env: &awscdk.Environment{Region: jsii.String("us-east-1")}})
		props := &awsdynamodb.TablePropsV2{PartitionKey: str("pk"), SortKey: str("sk"), TimeToLiveAttribute: jsii.String("ttl"),
			DynamoStream: awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES}
		if replicas {
			props.Replicas = &[]*awsdynamodb.ReplicaTableProps{{Region: jsii.String("eu-west-1")}}
		}
		table := awsdynamodb.NewTableV2(stack, jsii.String("AppTable"), props)
		_, err := denormcdk.New(stack, "Denorm", denormcdk.Props{Rules: []byte(rulesText), RulesName: "rules.yaml", Code: codeDirForTests, Table: table})
		want := "rules.yaml:7:5: rule post-comment-count keeps expired items counted (onExpiry: ignore)"
		switch {
		case replicas && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("with replicas: error %v, want one containing %q", err, want)
		case !replicas && err != nil:
			t.Errorf("without replicas: %v", err)
		}
	}
}
