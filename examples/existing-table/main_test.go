package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

const streamArn = "arn:aws:dynamodb:eu-west-1:111122223333:table/Orders/stream/2026-01-01T00:00:00.000"

func TestMain(m *testing.M) {
	status := m.Run()
	jsii.Close()
	os.Exit(status)
}

// TestSynth runs the app as `cdk synth` does, with a stand-in bootstrap, and checks that
// Denorm is attached to the existing table's stream without creating a table.
func TestSynth(t *testing.T) {
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "bootstrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{
		Outdir:  jsii.String(t.TempDir()),
		Context: &map[string]any{ctxTableName: "Orders", ctxStreamArn: streamArn, ctxCode: code},
	})
	if err := run(app); err != nil {
		t.Fatal(err)
	}
	stack := awscdk.Stack_Of(app.Node().FindChild(jsii.String("OrdersDenorm")))
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(0))
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"EventSourceArn": streamArn,
		"FilterCriteria": map[string]any{"Filters": assertions.Match_AnyValue()},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": map[string]any{"DENORM_TABLE": "Orders"}},
	})
}

func TestTableRequired(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{ctxTableName: "Orders"}})
	if err := run(app); err == nil || !strings.Contains(err.Error(), "-c streamArn=ARN") {
		t.Fatalf("error %v, want one naming the missing context", err)
	}
}
