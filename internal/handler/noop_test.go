package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/record"
)

// A REMOVE without OldImage (DynamoDB Local writes one for every client that deletes an
// item another client deleted at the same moment) is a no-op counted as
// RecordsWithoutImage, not a batch item failure: the records around it are applied and
// the shard does not stall on it.
func TestRemoveWithoutOldImage(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.put(map[string]string{"pk": "POST#p", "sk": "METADATA", "userId": "u1"})
	e.put(map[string]string{"pk": "POST#q", "sk": "METADATA", "userId": "u1"})
	e.drain(10, e.lambdaLike)

	comment := func(post, id string) map[string]string {
		return map[string]string{"pk": post, "sk": "COMMENT#" + id, "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#" + id, "status": "visible", "likes": "2"}
	}
	e.put(comment("POST#p", "c1"))
	e.put(comment("POST#p", "c2"))
	e.del("POST#p", "COMMENT#c1")
	// An unrelated write takes the next sequence number; its record is replaced below by a
	// second removal of c1 that found it gone. (A DeleteItem of an absent item, one after
	// the other, writes no record; only the race does, and not on demand.)
	e.put(map[string]string{"pk": "SLOT#1", "sk": "SLOT"})
	e.put(comment("POST#q", "c3"))
	batch := e.records()
	if len(batch) != 5 {
		t.Fatalf("%d records, want insert c1, insert c2, remove c1, slot, insert c3", len(batch))
	}
	slot, err := record.Decode(batch[3])
	if err != nil || s(slot.Keys["pk"]) != "SLOT#1" {
		t.Fatalf("record 3 is not the slot: %v", err)
	}
	gone := record.Change{
		EventID: slot.EventID, Seq: slot.Seq, Op: record.Remove, Created: slot.Created, SizeBytes: 40,
		Keys: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "POST#p"}, "sk": &types.AttributeValueMemberS{Value: "COMMENT#c1"}},
	}
	if batch[3], err = record.EncodeChange(gone, e.arn, "us-east-1"); err != nil {
		t.Fatal(err)
	}

	var metrics, logs bytes.Buffer
	h := handler.New(e.set, apply.New(e.api, e.table, e.set, apply.Options{}), handler.Options{
		Metrics: &metrics, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	ctx := context.Background()
	o, err := h.Process(ctx, record.EncodeEvent(batch))
	if err != nil || o.Failed != "" || o.Applied != len(batch) || o.NoImage != 1 {
		t.Fatalf("Process: %v; outcome %+v, want every record applied and NoImage 1", err, o)
	}
	e.drain(10, e.lambdaLike)
	e.check()
	for post, want := range map[string]int{"POST#p": 1, "POST#q": 1} {
		it := e.get(post, "METADATA")
		if got := n(it["commentCount"]); got != want {
			t.Errorf("%s commentCount = %d, want %d", post, got, want)
		}
		if got := n(it["likeTotal"]); got != 2*want {
			t.Errorf("%s likeTotal = %d, want %d", post, got, 2*want)
		}
	}

	// Delivered again, as Lambda would, through Handle: no batch item failure, the
	// metric and the log line name the record, and nothing changes.
	resp, err := h.Handle(ctx, record.EncodeEvent(batch))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v, batch item failures %v", err, resp.BatchItemFailures)
	}
	emf := lastJSONLine(t, &metrics)
	if emf["RecordsWithoutImage"] != 1.0 || emf["UnlinkedEffects"] != 0.0 {
		t.Errorf("EMF RecordsWithoutImage %v, UnlinkedEffects %v; want 1 and 0", emf["RecordsWithoutImage"], emf["UnlinkedEffects"])
	}
	declared := map[string]bool{}
	for _, m := range emf["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Metrics"].([]any) {
		declared[m.(map[string]any)["Name"].(string)] = true
	}
	if !declared["RecordsWithoutImage"] || !declared["UnlinkedEffects"] {
		t.Errorf("EMF does not declare the metrics: %v", declared)
	}
	line := lastJSONLine(t, &logs)
	if line["msg"] != "batch applied" || line["noImage"] != 1.0 || line["unlinked"] != 0.0 {
		t.Errorf("log line %v, want batch applied with noImage 1 and unlinked 0", line)
	}
	// Every counter write of the second delivery is refused by its guard, and counted so.
	refused, _ := line["refused"].(map[string]any)
	if refused["watermark"] != 2.0 || emf["WritesRefusedByWatermark"] != 2.0 || emf["WritesRefused"].(float64) < 2 {
		t.Errorf("refused: log %v, EMF WritesRefusedByWatermark %v of %v; want the 2 posts' watermark guards", line["refused"], emf["WritesRefusedByWatermark"], emf["WritesRefused"])
	}
	e.check()

	// Alone in its batch (a bisection's last half) it succeeds too.
	if o, err := h.Process(ctx, record.EncodeEvent(batch[3:4])); err != nil || o.Failed != "" || o.Applied != 1 || o.NoImage != 1 {
		t.Fatalf("alone: %v; outcome %+v", err, o)
	}
}

// The real thing: several clients delete one comment at once, and the handler takes every
// record DynamoDB Local writes for it, those without OldImage counted and skipped.
func TestConcurrentDeletesOfOneItem(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.put(map[string]string{"pk": "POST#p", "sk": "METADATA", "userId": "u1"})
	e.drain(10, e.lambdaLike)
	h := handler.New(e.set, apply.New(e.api, e.table, e.set, apply.Options{}), handler.Options{})

	without, counted := 0, 0
	for round := 0; round < 5 && without == 0; round++ {
		e.put(map[string]string{"pk": "POST#p", "sk": "COMMENT#c1", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c1", "status": "visible", "likes": "3"})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := e.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: "POST#p"}, "sk": &types.AttributeValueMemberS{Value: "COMMENT#c1"}}})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for recs := e.records(); len(recs) > 0; recs = e.records() {
			for _, raw := range recs {
				if c, err := record.Decode(raw); err == nil && c.Op == record.Remove && c.Old == nil {
					without++
				}
			}
			o, err := h.Process(context.Background(), record.EncodeEvent(recs))
			if err != nil || o.Failed != "" || o.Applied != len(recs) {
				t.Fatalf("Process: %v; outcome %+v", err, o)
			}
			counted += o.NoImage
		}
	}
	if counted != without {
		t.Errorf("Outcome.NoImage summed to %d, the stream had %d removals without OldImage", counted, without)
	}
	if without == 0 {
		t.Log("DynamoDB Local wrote no removal without OldImage in 5 rounds of 8 concurrent deletes")
	}
	e.check()
	if it := e.get("POST#p", "METADATA"); n(it["commentCount"]) != 0 || n(it["likeTotal"]) != 0 {
		t.Errorf("POST#p commentCount %d likeTotal %d, want 0 and 0", n(it["commentCount"]), n(it["likeTotal"]))
	}
	t.Logf("%d removals without OldImage, each skipped", without)
}

func (e *env) get(pk, sk string) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Item
}

// lastJSONLine decodes the last line written to b.
func lastJSONLine(t *testing.T, b *bytes.Buffer) map[string]any {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n"))
	var m map[string]any
	if err := json.Unmarshal(lines[len(lines)-1], &m); err != nil {
		t.Fatalf("%v: %s", err, lines[len(lines)-1])
	}
	return m
}

// A post without userId links to no user: its user-post-count effect is left out and
// counted as UnlinkedEffects, the record is applied (its comments are still counted).
func TestUnlinkedEffectsCounted(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.put(map[string]string{"pk": "POST#p", "sk": "METADATA"}) // no userId
	e.put(map[string]string{"pk": "POST#q", "sk": "METADATA", "userId": "u1"})
	e.put(map[string]string{"pk": "POST#p", "sk": "COMMENT#c1", "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#c1", "status": "visible"})
	batch := e.records()
	if len(batch) != 4 {
		t.Fatalf("%d records, want 4", len(batch))
	}
	var metrics bytes.Buffer
	h := handler.New(e.set, apply.New(e.api, e.table, e.set, apply.Options{}), handler.Options{Metrics: &metrics})
	resp, err := h.Handle(context.Background(), record.EncodeEvent(batch))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v, batch item failures %v", err, resp.BatchItemFailures)
	}
	if emf := lastJSONLine(t, &metrics); emf["UnlinkedEffects"] != 1.0 || emf["RecordsWithoutImage"] != 0.0 || emf["Failures"] != 0.0 {
		t.Errorf("EMF UnlinkedEffects %v, RecordsWithoutImage %v, Failures %v; want 1, 0, 0", emf["UnlinkedEffects"], emf["RecordsWithoutImage"], emf["Failures"])
	}
	e.drain(10, e.lambdaLike)
	e.check()
	if got := n(e.get("USER#u1", "PROFILE")["postCount"]); got != 1 {
		t.Errorf("USER#u1 postCount = %d, want 1 (post q only)", got)
	}
}
