package handler_test

import (
	"encoding/json"
	"testing"

	"github.com/denorm/denorm/internal/apply"
)

// Every batch is delivered twice: counters and sums stay exact (markers and watermarks
// turn the second delivery into a no-op) and copies converge.
func TestDeliveredTwice(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.workload(1, 5, 6, 300)
	e.drain(25, func(b []json.RawMessage) { e.lambdaLike(b); e.lambdaLike(b) })
	e.check()
}

// A batch stops after k of its writes (the invocation crashes) and is redelivered whole,
// as Lambda does after a function error, for several k.
func TestCrashAfterKWritesThenRedelivered(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.workload(2, 4, 5, 250)
	e.drain(30, e.crashed(false)) // partially applied, reports a failure, delivered again whole
	e.check()
}

// A comment added and removed within one batch nets its post's count to zero. The batch
// fails at a record between the two (another post's counter update fails) and Lambda
// resumes there: the removal, delivered again without its insert, must be a duplicate for
// the post, not a second -1. The 100,000-operation soak found this as a group's
// memberCount one short: a zero net skipped the write and left the watermark behind.
func TestZeroNetThenResumedBetween(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "POST#p", "sk": "METADATA", "userId": "u1"})
	e.put(map[string]string{"pk": "POST#q", "sk": "METADATA", "userId": "u1"})
	e.drain(10, e.lambdaLike)

	comment := func(post, id string) map[string]string {
		return map[string]string{"pk": post, "sk": "COMMENT#" + id, "gsi1pk": "USER#u1", "gsi1sk": "COMMENT#" + id, "status": "visible"}
	}
	e.put(comment("POST#p", "c1"))
	e.put(comment("POST#q", "c2"))
	e.del("POST#p", "COMMENT#c1")
	batch := e.records()
	if len(batch) != 3 {
		t.Fatalf("%d records, want insert c1, insert c2, remove c1", len(batch))
	}
	e.failingOn("POST#q", batch, 1)
	e.lambdaLike(batch[1:]) // Lambda resumes at the reported record
	e.drain(10, e.lambdaLike)
	e.check()
}

// The same in transaction mode: a post added and deleted in one batch nets zero on its
// author's count, and a later record of the batch fails. Lambda resumes between the two,
// so the delete is delivered again alone: the first delivery must have left the markers
// that make it a duplicate, though it wrote no delta.
func TestZeroNetThenResumedBetweenTransactionMode(t *testing.T) {
	e := newEnvRules(t, apply.Options{}, transactionRules)
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.put(map[string]string{"pk": "POST#q", "sk": "METADATA", "userId": "u2"})
	e.drain(10, e.lambdaLike)

	e.put(map[string]string{"pk": "POST#p", "sk": "METADATA", "userId": "u1"})
	e.put(map[string]string{"pk": "POST#q", "sk": "COMMENT#c1", "gsi1pk": "USER#u2", "gsi1sk": "COMMENT#c1", "status": "visible"})
	e.del("POST#p", "METADATA")
	batch := e.records()
	if len(batch) != 3 {
		t.Fatalf("%d records, want insert p, insert c1, remove p", len(batch))
	}
	e.failingOn("POST#q", batch, 1)
	e.lambdaLike(batch[1:]) // Lambda resumes at the reported record
	e.drain(10, e.lambdaLike)
	e.check()
}

// A batch stops after k of its writes and Lambda resumes it at the record it reports, as
// with ReportBatchItemFailures (a function error makes invoke report 0: the whole batch).
func TestCrashAfterKWritesThenResumed(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.workload(6, 4, 5, 250)
	e.drain(30, e.crashed(true))
	e.check()
}

// A batch is split in halves (bisect on error) and each half delivered, then the whole
// batch again.
func TestBisectedBatches(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.workload(3, 4, 5, 250)
	e.drain(40, func(b []json.RawMessage) {
		h := len(b) / 2
		e.lambdaLike(b[:h])
		e.lambdaLike(b[h:])
		e.lambdaLike(b)
	})
	e.check()
}

// TransactionConflict (which DynamoDB Local never raises) is retried with backoff.
func TestTransactionConflictRetried(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.workload(4, 3, 4, 60)
	e.drain(20, func(b []json.RawMessage) { e.api.conflicts = 2; e.lambdaLike(b) })
	e.check()
}

// Renames interleaved with comment inserts (with stale copies written by the application)
// converge: every copy ends equal to its source.
func TestRenameStormConverges(t *testing.T) {
	e := newEnv(t, apply.Options{PageSize: 7, InlinePages: 1})
	e.api.failAfter = -1
	e.workload(5, 3, 3, 400)
	e.drain(13, e.lambdaLike)
	e.check()
}

// A malformed record is reported as the batch item failure by its sequence number; the
// records before it are applied, nothing panics.
func TestMalformedRecordIsABatchItemFailure(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.workload(6, 2, 2, 10)
	recs := e.records()
	bad := json.RawMessage(`{"eventID":"x","eventName":"INSERT","dynamodb":{"SequenceNumber":"999999999999","Keys":{"pk":{"S":"POST#p1"}},"NewImage":{"pk":{"Q":"?"}}}}`)
	batch := append(append(append([]json.RawMessage{}, recs[:3]...), bad), recs[3:]...)
	if got := e.invoke(batch); got != 3 {
		t.Fatalf("first failure at record %d, want 3 (the malformed one)", got)
	}
	// As after the retries, the poison record goes to the failure destination; the rest flows.
	e.lambdaLike(recs[3:])
	e.drain(10, e.lambdaLike)
	e.check()
}

// A post is counted into its author's profile in another partition, through a relay item
// in the profile's partition. The first delivery writes the relay item for the post's
// insert but fails at an earlier record (another post's counter); Lambda resumes there with
// a longer batch that also holds the post's move to another author. The relay write must
// take only the move (the item says it holds the insert): relaying insert and move again
// would leave u1 counting a post it lost.
func TestRelayResumedWithMoreRecords(t *testing.T) {
	e := newEnv(t, apply.Options{})
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.put(map[string]string{"pk": "USER#u2", "sk": "PROFILE", "name": "Bo"})
	e.put(map[string]string{"pk": "POST#q", "sk": "METADATA", "userId": "u2"})
	e.drain(10, e.lambdaLike)

	e.put(map[string]string{"pk": "POST#q", "sk": "COMMENT#c1", "gsi1pk": "USER#u2", "gsi1sk": "COMMENT#c1", "status": "visible"})
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u1"})
	first := e.records()
	if len(first) != 2 {
		t.Fatalf("%d records, want the comment on q and the insert of p1", len(first))
	}
	e.failingOn("POST#q", first, 0)
	e.put(map[string]string{"pk": "POST#p1", "sk": "METADATA", "userId": "u2"})
	e.lambdaLike(append(first, e.records()...)) // resumed at record 0, with the move after
	e.drain(10, e.lambdaLike)
	e.check()
}

// The cross-partition count with exactlyOnce: transaction (per-event markers) under the
// same faults: delivered twice, crashed after k writes and redelivered or resumed, bisected.
func TestTransactionModeUnderFaults(t *testing.T) {
	for _, tc := range faultyDeliveries() {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvRules(t, apply.Options{}, transactionRules)
			if r := e.set.Rule("user-post-count"); r.Relay || r.Watermark {
				t.Fatal("user-post-count should use markers")
			}
			e.api.failAfter = -1
			e.workload(7, 4, 5, 200)
			e.drain(25, tc.deliver(e))
			e.check()
		})
	}
}

// delivery is one way Lambda delivers a batch when something fails.
type delivery struct {
	name    string
	deliver func(e *env) func(b []json.RawMessage)
}

// faultyDeliveries are the ways the exactly-once tests deliver every batch: twice (a
// success Lambda did not see), crashed after k writes and redelivered whole or resumed at
// the reported record, and bisected (both halves, then the whole).
func faultyDeliveries() []delivery {
	return []delivery{
		{"twice", func(e *env) func(b []json.RawMessage) {
			return func(b []json.RawMessage) { e.lambdaLike(b); e.lambdaLike(b) }
		}},
		{"crash, redelivered", func(e *env) func(b []json.RawMessage) { return e.crashed(false) }},
		{"crash, resumed", func(e *env) func(b []json.RawMessage) { return e.crashed(true) }},
		{"bisected", func(e *env) func(b []json.RawMessage) {
			return func(b []json.RawMessage) {
				h := len(b) / 2
				e.lambdaLike(b[:h])
				e.lambdaLike(b[h:])
				e.lambdaLike(b)
			}
		}},
	}
}
