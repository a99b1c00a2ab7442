package reliability

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/rules"
)

// A fan-out job item lives in its own partition (_dn#job#...), so on DynamoDB its stream
// records are in another shard than the source's and the targets', read in parallel with
// them. Here the job's shard lags: a rename's job (version 1) is still to run when a newer
// rename (version 2) finishes its fan-out inline and a new comment pulls the newest name.
// The job's late page must not overwrite the pulled name (it once did: a pull wrote no
// version, so the guard let the older value through; found by a 20,000-operation soak).
func TestLaggingJobShardDoesNotOverwritePulledCopy(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, apply.Options{PageSize: 3, InlinePages: 1})
	db, table := r.db, r.table

	var held []json.RawMessage // the job shard's records, not read yet
	deliver := func(holdJobs bool) { t.Helper(); held = r.deliverHoldingJobs(holdJobs, held) }
	write := func(in any) {
		t.Helper()
		var err error
		switch in := in.(type) {
		case *dynamodb.PutItemInput:
			in.TableName = aws.String(table)
			_, err = db.PutItem(ctx, in)
		case *dynamodb.DeleteItemInput:
			in.TableName = aws.String(table)
			_, err = db.DeleteItem(ctx, in)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	user := func(name string) *dynamodb.PutItemInput {
		return &dynamodb.PutItemInput{Item: map[string]types.AttributeValue{"pk": s("USER#u0"), "sk": s("PROFILE"), "name": s(name), "avatar": s("a.png")}}
	}
	comment := func(ts string) *dynamodb.PutItemInput {
		return &dynamodb.PutItemInput{Item: map[string]types.AttributeValue{"pk": s("POST#p1"), "sk": s("COMMENT#" + ts + "#c" + ts),
			"gsi1pk": s("USER#u0"), "gsi1sk": s("COMMENT#" + ts), "text": s("hi"), "userName": s("?")}}
	}
	remove := func(ts string) *dynamodb.DeleteItemInput {
		return &dynamodb.DeleteItemInput{Key: map[string]types.AttributeValue{"pk": s("POST#p1"), "sk": s("COMMENT#" + ts + "#c" + ts)}}
	}

	write(user("Ann"))
	for _, ts := range []string{"01", "03", "04", "05"} {
		write(comment(ts))
	}
	deliver(false)
	write(user("One")) // 4 comments, pages of 3: the inline page and a job for the rest
	deliver(true)
	if len(held) == 0 {
		t.Fatal("the rename started no job")
	}
	write(remove("04"))
	write(remove("05"))
	write(user("Two")) // 2 comments: done inline, no job
	deliver(true)
	write(comment("06")) // after the old job's cursor; its insert pulls "Two"
	deliver(true)
	for _, raw := range held { // the job's shard catches up
		r.invoke(raw)
	}
	held = nil
	deliver(false)

	for _, ts := range []string{"01", "03", "06"} {
		c := getItemDB(t, db, table, "POST#p1", "COMMENT#"+ts+"#c"+ts)
		if got := attrS(c, "userName"); got != "Two" {
			t.Errorf("comment %s: userName %q, want %q", ts, got, "Two")
		}
	}
}

func streamS(v any) string {
	if x, ok := v.(*stypes.AttributeValueMemberS); ok {
		return x.Value
	}
	return ""
}

// A rename's job (version 1) is superseded by a newer rename (version 2) whose inline page
// ends past the place a comment is then inserted at. The old job's record still runs its
// pages (it stops only when it saves its cursor) and writes the new comment with version 1
// before the comment's insert is processed. The insert's pull must still bring the newest
// name: it once required the version its record saw (none), found version 1 and gave up,
// so the comment kept the older name for good (TestApplicationUnderRedelivery, seed 5).
func TestSupersededJobBeforeInsertPull(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, apply.Options{PageSize: 3, InlinePages: 1})
	db, table := r.db, r.table

	var held []json.RawMessage // the job items' records, not delivered yet
	deliver := func(holdJobs bool) { t.Helper(); held = r.deliverHoldingJobs(holdJobs, held) }
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	user := func(name string) {
		put(map[string]types.AttributeValue{"pk": s("USER#u0"), "sk": s("PROFILE"), "name": s(name), "avatar": s("a.png")})
	}
	commentKey := func(ts string) (string, string) { return "POST#p1", "COMMENT#" + ts + "#c" + ts }
	comment := func(ts string) {
		pk, sk := commentKey(ts)
		put(map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk), "gsi1pk": s("USER#u0"), "gsi1sk": s("COMMENT#" + ts),
			"text": s("hi"), "userName": s("?")})
	}
	remove := func(ts string) {
		t.Helper()
		pk, sk := commentKey(ts)
		if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk)}}); err != nil {
			t.Fatal(err)
		}
	}

	user("Ann")
	for _, ts := range []string{"01", "03", "04", "05", "07"} {
		comment(ts)
	}
	deliver(false)
	user("One") // inline page 01, 03, 04; its job resumes after 04
	deliver(true)
	if len(held) == 0 {
		t.Fatal("the rename started no job")
	}
	remove("01")
	remove("03")
	user("Two") // inline page 04, 05, 07; its job (which replaces One's) resumes after 07
	deliver(true)
	comment("06")              // behind Two's cursor, ahead of One's
	for _, raw := range held { // the job records run before the insert's record
		r.invoke(raw)
	}
	held = nil
	deliver(false)

	for _, ts := range []string{"04", "05", "06", "07"} {
		pk, sk := commentKey(ts)
		if got := attrS(getItemDB(t, db, table, pk, sk), "userName"); got != "Two" {
			t.Errorf("comment %s: userName %q, want %q", ts, got, "Two")
		}
	}
}

// deliverHoldingJobs invokes the handler with each stream record until the stream is quiet;
// with holdJobs, fan-out job items' records are appended to held instead (a lagging job
// shard), and the grown slice is returned.
func (r *rig) deliverHoldingJobs(holdJobs bool, held []json.RawMessage) []json.RawMessage {
	r.t.Helper()
	for round := 0; round < 50; round++ {
		recs := r.reader.Read(0)
		if len(recs) == 0 {
			return held
		}
		for _, rec := range recs {
			raw := r.encode(rec)
			if pk := rec.Dynamodb.Keys["pk"]; holdJobs && pk != nil && strings.HasPrefix(streamS(pk), rules.JobPrefix) {
				held = append(held, raw)
				continue
			}
			r.invoke(raw)
		}
	}
	r.t.Fatal("the stream did not go quiet")
	return held
}
