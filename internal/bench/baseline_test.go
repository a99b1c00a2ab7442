package bench

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/workload"
)

// The baseline must be correct for the comparison to be like for like. An application that
// writes a membership again with PutItem drops its copied groupName; the hand-written handler
// pulls it again from the group (the full-size social-mix benchmark drifted here before).
func TestBaselineRefillsAReplacedCopy(t *testing.T) {
	f, _, err := ruleSubset("../../rules/social.yaml", []string{"membership-group-name"}, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	db, streams := ddbtest.Clients(t)
	name, desc := ddbtest.NewTable(t, db, f.Table)
	ctx := context.Background()
	membership := func(extra ...string) workload.Op {
		return put(append([]string{"pk", "USER#u1", "sk", "GROUP#g1", "gsi2pk", "GROUP#g1", "gsi2sk", "USER#u1", "role", "member"}, extra...)...)
	}
	arn := aws.ToString(desc.LatestStreamArn)
	stream := ddbtest.NewStreamReader(t, streams, arn)
	b := &Baseline{DB: db, Table: name, Rules: map[string]bool{"membership-group-name": true}}
	// Each write is handled before the next, as a handler keeping up with the application.
	for _, op := range []workload.Op{
		put("pk", "GROUP#g1", "sk", "METADATA", "name", "Chess"),
		membership(),
		membership("note", "replaced by the application"),
	} {
		if err := workload.Apply(ctx, db, name, op); err != nil {
			t.Fatal(err)
		}
		var raw []json.RawMessage
		for _, r := range stream.Read(1) {
			m, err := record.EncodeStreamRecord(r, arn, "us-east-1")
			if err != nil {
				t.Fatal(err)
			}
			raw = append(raw, m)
		}
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(record.EncodeEvent(raw), &ev); err != nil {
			t.Fatal(err)
		}
		resp, err := b.Handle(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("baseline: %v, failures %v", err, resp.BatchItemFailures)
		}
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: key("USER#u1", "GROUP#g1"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got := str(out.Item["groupName"]); got != "Chess" {
		t.Errorf("membership groupName %q after the application replaced it, want the group's name %q", got, "Chess")
	}
}
