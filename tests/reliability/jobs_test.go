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
	deliver := func(holdJobs bool) {
		t.Helper()
		for round := 0; round < 50; round++ {
			recs := r.reader.Read(0)
			if len(recs) == 0 {
				return
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
		t.Fatal("the stream did not go quiet")
	}
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
