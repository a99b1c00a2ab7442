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
	e.checkNames(t, 10, "Ann")
}

// Comments inserted with a stale author name and deleted by the application before their
// records are processed: each record's pull would be refused (the item is gone). Reading
// the target first spares those writes; the pulls of comments that still exist land.
func TestPullReadsSpareRefusedWrites(t *testing.T) {
	// batch writes comments with a stale name, deletes the first gone of them without
	// processing the deletes, and applies the inserts' records; it returns the writes and
	// reads the batch made.
	batch := func(t *testing.T, e *env, from, n, gone int) (writes int, gets int64) {
		for i := from; i < from+n; i++ {
			c := fmt.Sprintf("c%03d", i)
			e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#" + c, "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#" + c, "userName": "?"})
		}
		b := e.records()
		for i := from; i < from+gone; i++ {
			e.del("POST#p1", fmt.Sprintf("COMMENT#c%03d", i))
		}
		w0, g0 := e.api.writes, e.api.gets.Load()
		if got := e.invoke(b); got != len(b) {
			t.Fatalf("record %d of %d failed", got, len(b))
		}
		return e.api.writes - w0, e.api.gets.Load() - g0
	}
	setup := func(t *testing.T, p apply.PullReads) *env {
		e := newEnv(t, apply.Options{PullReads: p})
		e.api.failAfter = -1
		e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
		e.invoke(e.records())
		return e
	}
	t.Run("never", func(t *testing.T) {
		e := setup(t, apply.PullReadsNever)
		if w, g := batch(t, e, 0, 12, 12); w != 12 || g != 2 {
			t.Errorf("%d writes and %d reads for 12 pulls of deleted comments, want 12 (all refused) and 2", w, g)
		}
	})
	t.Run("always", func(t *testing.T) {
		e := setup(t, apply.PullReadsAlways)
		if w, g := batch(t, e, 0, 12, 12); w != 0 || g != 2+12 {
			t.Errorf("%d writes and %d reads for 12 pulls of deleted comments, want 0 and 14 (one per target)", w, g)
		}
		if w, _ := batch(t, e, 12, 12, 4); w != 8 {
			t.Errorf("%d writes for 8 pulls of live comments and 4 of deleted ones, want 8", w)
		}
		e.checkNames(t, 8, "Ann")
	})
	t.Run("auto", func(t *testing.T) {
		e := setup(t, apply.PullReadsAuto)
		if w, g := batch(t, e, 0, 12, 12); w != 12 || g != 2 {
			t.Errorf("first batch: %d writes, %d reads, want 12 and 2 (nothing learned yet: write blind)", w, g)
		}
		if w, g := batch(t, e, 12, 12, 12); w != 0 || g != 2+12 {
			t.Errorf("after a batch of refused pulls: %d writes, %d reads, want 0 and 14 (read first)", w, g)
		}
		if w, _ := batch(t, e, 24, 12, 0); w != 12 {
			t.Errorf("%d writes for 12 pulls of live comments, want 12", w)
		}
		e.checkNames(t, 12, "Ann")
	})
}

// checkNames fails unless POST#p1 holds want comments, each with userName name.
func (e *env) checkNames(t *testing.T, want int, name string) {
	t.Helper()
	out, err := e.db.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(e.table),
		KeyConditionExpression:    aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "POST#p1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != want {
		t.Fatalf("%d comments, want %d", len(out.Items), want)
	}
	for _, it := range out.Items {
		if got := s(it["userName"]); got != name {
			t.Errorf("%s: userName %q, want %s", s(it["sk"]), got, name)
		}
	}
}
