package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// applyNagChecks runs cdk-nag's AWS Solutions rules on every stack of app when it is
// synthesized. A finding becomes an error or warning annotation on the resource; a
// suppression (metadata on the resource, with a reason) silences it.
func applyNagChecks(app awscdk.App) {
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
		Reports: jsii.Bool(false), // the CSV reports would land in the test's cloud assembly
		Verbose: jsii.Bool(true),  // the rule's explanation in the message, for the failure below
	}), nil)
}

// TestNag fails on every cdk-nag finding, error or warning, that is not suppressed, in every
// stack: the production and dev stacks and Denorm on existing tables.
func TestNag(t *testing.T) {
	all := assertions.Match_StringLikeRegexp(jsii.String(".*"))
	for _, stack := range stacks {
		annotations := assertions.Annotations_FromStack(stack)
		for _, found := range [][]message{
			messages(annotations.FindError(jsii.String("*"), all)),
			messages(annotations.FindWarning(jsii.String("*"), all)),
		} {
			for _, m := range found {
				t.Errorf("%s: %s %s: %s", *stack.StackName(), m.level, m.path, m.text)
			}
		}
	}
}

// nagSuppressions are the cdk-nag rules the construct suppresses, each on one resource type.
// A new suppression must be added here, next to its reason in the construct's code.
var nagSuppressions = map[string]string{
	// The on-failure destination is the dead-letter queue (see newDeadLetterQueue).
	"AwsSolutions-SQS3": "AWS::SQS::Queue",
}

// TestNagSuppressions: every suppression in every template is one of nagSuppressions, on
// its resource type, with a reason.
func TestNagSuppressions(t *testing.T) {
	found := map[string]int{}
	for name, tmpl := range map[string]assertions.Template{
		"Prod": prod, "Dev": dev, existingStackName: existing, tablesStackName: tables, attachedStackName: attached,
	} {
		b, _ := json.Marshal(tmpl.ToJSON())
		var doc struct {
			Resources map[string]struct {
				Type     string
				Metadata struct {
					CdkNag struct {
						RulesToSuppress []struct{ ID, Reason string } `json:"rules_to_suppress"`
					} `json:"cdk_nag"`
				}
			}
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for id, r := range doc.Resources {
			for _, s := range r.Metadata.CdkNag.RulesToSuppress {
				found[s.ID]++
				if typ, ok := nagSuppressions[s.ID]; !ok || typ != r.Type {
					t.Errorf("%s %s (%s): %s is suppressed (%q); want only %v", name, id, r.Type, s.ID, s.Reason, nagSuppressions)
				}
				if len(s.Reason) < 40 {
					t.Errorf("%s %s: suppression of %s gives no real reason: %q", name, id, s.ID, s.Reason)
				}
			}
		}
	}
	// One failure queue per Denorm construct: Prod, Dev, Existing and Attached.
	if found["AwsSolutions-SQS3"] != 4 {
		t.Errorf("AwsSolutions-SQS3 suppressed %d times, want 4 (one per failure queue)", found["AwsSolutions-SQS3"])
	}
}

type message struct{ level, path, text string }

func messages(found *[]*cxapi.SynthesisMessage) []message {
	var out []message
	if found == nil {
		return nil
	}
	for _, m := range *found {
		text := fmt.Sprint(m.Entry.Data)
		if s, ok := m.Entry.Data.(string); ok {
			text = s
		}
		out = append(out, message{level: string(m.Level), path: *m.Id, text: text})
	}
	return out
}
