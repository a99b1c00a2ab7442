package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/streams"
)

// A second stream takes over the table's Denorm state: the processing Region of a global
// table moved, each Region's replica having a stream of its own whose sequence numbers mean
// nothing against the first's. Before `denorm takeover` its batches are skipped. Here the
// second stream's numbers are far below the first's, the worst case: without epochs its
// copy, its same-partition count (watermark) and its relayed count (relay watermark) would
// all be refused as older. The first stream, read again afterwards, is retired: its batch
// is skipped and writes nothing.
func TestStreamTakesOver(t *testing.T) {
	e := newEnv(t, apply.Options{StreamCheck: time.Nanosecond})
	e.api.failAfter = -1
	first, second := e.arn, e.arn+"-second-region"
	high := new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil)
	next := int64(0)
	renumber := map[string]func(string) string{
		first: func(seq string) string { // the first stream's numbers: 10^30 above DynamoDB Local's
			n, _ := new(big.Int).SetString(seq, 10)
			return n.Add(n, high).String()
		},
		second: func(string) string { next++; return fmt.Sprint(next) },
	}
	drainAs := func(arn string) {
		t.Helper()
		for round := 0; round < 50; round++ {
			recs := e.recordsAs(arn, renumber[arn])
			if len(recs) == 0 {
				return
			}
			e.lambdaLike(recs)
		}
		t.Fatal("stream did not go quiet")
	}

	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#c1", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c1", "status": "visible", "likes": "2"})
	drainAs(first)
	e.want("first stream", "Ann", 1, 2, 1)

	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Bea", "postCount": "1"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#c2", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c2", "status": "visible", "likes": "3"})
	e.put(map[string]string{"pk": "POST#p2", "sk": "METADATA", "userId": "u1"})
	// A stream the registry does not know writes nothing until it takes over.
	recs := e.reader.Read(0)
	e.skipped("the second stream before the takeover", recs, second, renumber[second])
	e.want("the second stream before the takeover", "Ann", 1, 2, 1)
	if _, epoch, err := streams.TakeOver(context.Background(), e.db, e.table, e.set.Table, second); err != nil || epoch != 1 {
		t.Fatalf("takeover: epoch %d, %v; want 1", epoch, err)
	}
	e.lambdaLike(e.encodeAs(recs, second, renumber[second]))
	drainAs(second)
	e.want("second stream", "Bea", 2, 5, 2)
	st, err := streams.Parse(e.get(rules.StreamRegistryPK, rules.StreamRegistryPK))
	if err != nil || st.Current != second || st.Epoch != 1 || !slices.Equal(st.Retired, []string{first}) {
		t.Fatalf("stream registry %+v (%v), want %s current at epoch 1 and %s retired", st, err, second, first)
	}

	// The first stream's processor comes back (its Region returns): it writes nothing.
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Cid", "postCount": "2"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "COMMENT#c3", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c3", "status": "visible", "likes": "4"})
	recs = e.reader.Read(0)
	e.skipped("the first stream read again", recs, first, renumber[first])
	e.want("the first stream read again", "Bea", 2, 5, 2)
	e.lambdaLike(e.encodeAs(recs, second, renumber[second])) // the same writes as the second stream carries them
	drainAs(second)
	e.want("second stream again", "Cid", 3, 9, 2)
}

// skipped delivers recs as records of the stream arn and fails unless the whole batch is
// skipped, with nothing written.
func (e *env) skipped(when string, recs []stypes.Record, arn string, seq func(string) string) {
	e.t.Helper()
	out, err := e.h.Process(context.Background(), record.EncodeEvent(e.encodeAs(recs, arn, seq)))
	if err != nil || !out.Skipped || out.Stats.Requests != 0 || out.Failed != "" {
		e.t.Fatalf("%s: %+v, %v; want the batch skipped, nothing written", when, out, err)
	}
}

// recordsAs reads the stream records written since the last call as records of the stream
// arn, with the sequence numbers seq gives.
func (e *env) recordsAs(arn string, seq func(string) string) []json.RawMessage {
	e.t.Helper()
	return e.encodeAs(e.reader.Read(0), arn, seq)
}

// encodeAs encodes recs as records of the stream arn, with the sequence numbers seq gives.
func (e *env) encodeAs(recs []stypes.Record, arn string, seq func(string) string) []json.RawMessage {
	e.t.Helper()
	var out []json.RawMessage
	for _, r := range recs {
		r.Dynamodb.SequenceNumber = aws.String(seq(aws.ToString(r.Dynamodb.SequenceNumber)))
		raw, err := record.EncodeStreamRecord(r, arn, "us-east-1")
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// want checks u1's name on comment c1, p1's comment count and like total, and u1's post
// count.
func (e *env) want(when, name string, comments, likes, posts int) {
	e.t.Helper()
	post := e.get("POST#p1", "METADATA")
	got := fmt.Sprintf("%s %d %d %d", s(e.get("POST#p1", "COMMENT#c1")["userName"]), n(post["commentCount"]), n(post["likeTotal"]),
		n(e.get("USER#u1", "PROFILE")["postCount"]))
	want := fmt.Sprintf("%s %d %d %d", name, comments, likes, posts)
	if got != want {
		e.t.Fatalf("%s: userName, commentCount, likeTotal, postCount = %s, want %s", when, got, want)
	}
}
