package handler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
)

// Ten comments inserted with a stale author name in one batch each pull the author's name.
// The pulls share one read of the user and one of its version registry item, and every
// comment ends with the name.
func TestPullsOfABatchShareTheirReads(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.invoke(e.records())
	for i := range 10 {
		c := fmt.Sprintf("c%02d", i)
		e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#" + c, "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#" + c, "userName": "?"})
	}
	batch := e.records()
	before := e.api.gets.Load()
	if n := e.invoke(batch); n != len(batch) {
		t.Fatalf("record %d of %d failed", n, len(batch))
	}
	if got := e.api.gets.Load() - before; got != 2 {
		t.Errorf("%d GetItem calls for 10 pulls from one user, want 2 (the user and its version registry item)", got)
	}
	out, err := e.db.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(e.table),
		KeyConditionExpression:    aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "POST#p1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 10 {
		t.Fatalf("%d comments, want 10", len(out.Items))
	}
	for _, it := range out.Items {
		if got := s(it["userName"]); got != "Ann" {
			t.Errorf("%s: userName %q, want Ann", s(it["sk"]), got)
		}
	}
}
