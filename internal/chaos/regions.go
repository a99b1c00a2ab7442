package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"sort"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/replicator"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/streams"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
	"github.com/denorm/denorm/internal/workload"
)

// startReplica creates cfg.Replica with the pipeline table's shape and starts replicating
// between the two.
func startReplica(ctx context.Context, p *local.Pipeline, cfg Config) (*replicator.Replicator, error) {
	if _, err := provision.Ensure(ctx, p.DB, cfg.Replica, p.Set.Table); err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	delay := cfg.ReplicationDelay
	if delay == 0 {
		delay = 500 * time.Millisecond
	}
	return replicator.Start(ctx, replicator.Config{DB: p.DB, Streams: p.Streams, Tables: []string{cfg.Table, cfg.Replica},
		Delay: delay, Logger: cfg.Logger})
}

// twoRegions is the application in two Regions: each item is written in the Region its key
// hashes to, through the application writer (reads included, so a stale Put carries what
// that Region's replica held). With home, the items Denorm writes into (ruleWritten) are
// written in the first Region, the pipeline's, and only the others are spread.
type twoRegions struct {
	w       workload.Writer
	replica string
	home    bool
	// down: the first Region is down, and every item is written in the replica's.
	down atomic.Bool
}

func (t *twoRegions) table(key record.Item, table *string) *string {
	if t.down.Load() {
		return aws.String(t.replica)
	}
	if _, written := ruleWritten[KindOf(keyOf(key), nil)]; t.home && written {
		return table
	}
	h := fnv.New32a()
	h.Write([]byte(str(key["pk"]) + "\x00" + str(key["sk"])))
	if h.Sum32()%2 == 1 {
		return aws.String(t.replica)
	}
	return table
}

func (t *twoRegions) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	cp := *in
	cp.TableName = t.table(in.Item, in.TableName)
	return t.w.PutItem(ctx, &cp, o...)
}

func (t *twoRegions) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	cp := *in
	cp.TableName = t.table(in.Key, in.TableName)
	return t.w.UpdateItem(ctx, &cp, o...)
}

func (t *twoRegions) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	cp := *in
	cp.TableName = t.table(in.Key, in.TableName)
	return t.w.DeleteItem(ctx, &cp, o...)
}

// cutOff cuts the replica's Region off while the second third of the total operations is
// written: its application goes on writing, and nothing is replicated either way.
func cutOff(repl *replicator.Replicator, written int64, total int) {
	if repl == nil {
		return
	}
	switch written {
	case int64(total / 3):
		repl.Pause(1, true)
	case int64(2 * total / 3):
		repl.Pause(1, false)
	}
}

// drain waits until the pipelines' streams and, with a replicator, every replica's stream
// are drained and none of them did anything in a whole round: each part's writes feed the
// others.
func drain(ctx context.Context, repl *replicator.Replicator, pipes ...*local.Pipeline) error {
	read := func() int64 {
		n := int64(0)
		for _, p := range pipes {
			n += p.Stats().Records + p.Stats().Filtered
		}
		return n
	}
	for {
		before, activity := read(), int64(0)
		if repl != nil {
			activity = repl.Activity()
		}
		for _, p := range pipes {
			if err := p.Mapping.Drain(ctx, time.Second); err != nil {
				return err
			}
		}
		if repl == nil && len(pipes) == 1 {
			return nil
		}
		if repl != nil {
			if err := repl.Drain(ctx, 300*time.Millisecond); err != nil {
				return err
			}
		}
		if read() == before && (repl == nil || repl.Activity() == activity) {
			return nil
		}
	}
}

// awaitRegistry waits until table's stream registry names arn current: the registry
// written in another Region has been replicated to table's Region.
func awaitRegistry(ctx context.Context, db *dynamodb.Client, tbl string, spec table.Spec, arn string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := db.GetItem(ctx, streams.Get(tbl, spec, true))
		if err != nil {
			return fmt.Errorf("reading the stream registry of %s: %w", tbl, err)
		}
		if reg, err := streams.Parse(out.Item); err == nil && reg.Of(arn) == streams.Current {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stream registry of %s does not name %s after a minute", tbl, arn)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// repair runs `denorm backfill` or `denorm verify --repair` (mode, which names the run) on
// table: the probe first (its processor must answer), then a repairing run of every rule.
func repair(ctx context.Context, db *dynamodb.Client, table string, file *rules.File, mode string) (*ops.Report, error) {
	ev, err := ops.NewEvaluator(file, "")
	if err != nil {
		return nil, err
	}
	if _, err := ops.CheckProcessor(ctx, db, table, ev, 30*time.Second); err != nil {
		return nil, fmt.Errorf("%s of %s: %w", mode, table, err)
	}
	rep, err := ops.Run(ctx, ops.Config{API: db, Table: table, Eval: ev, Repair: true, Mode: mode, Settle: time.Second, Examples: 10})
	if err != nil {
		return nil, fmt.Errorf("%s of %s: %w", mode, table, err)
	}
	return rep, nil
}

// diffTables lists the items that differ between two replicas, as DynamoDB compares values
// (the replicas may write one number two ways).
func diffTables(a, b map[Key]record.Item) []string {
	var out []string
	for k, ia := range a {
		ib, ok := b[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s: only in the first", k.PK, k.SK))
		case !value.Equal(&types.AttributeValueMemberM{Value: ia}, &types.AttributeValueMemberM{Value: ib}):
			out = append(out, fmt.Sprintf("%s %s: differs", k.PK, k.SK))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s: only in the second", k.PK, k.SK))
		}
	}
	sort.Strings(out)
	return out
}

// seqShift is the first Region's function as its mappings invoke it (with Move): each
// record's sequence number 10^30 above what DynamoDB Local gave it, and the batch item
// failure mapped back. DynamoDB Local numbers the records of all its tables from one
// counter, so its two streams' numbers would compare as if they were one stream's; two
// Regions' streams share no order at all, and here the first Region's numbers are all above
// the replica's, so that a guard comparing them across streams refuses the replica's.
type seqShift struct{ next esm.Invoker }

var seqOffset = new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil)

// Invoke implements esm.Invoker.
func (s seqShift) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	raws, err := record.SplitEvent(payload)
	if err != nil {
		return s.next.Invoke(ctx, payload)
	}
	shifted := make([]json.RawMessage, len(raws))
	orig := map[string]string{} // shifted -> as delivered
	for i, raw := range raws {
		var from, to string
		shifted[i], from, to = shiftSeq(raw)
		orig[to] = from
	}
	resp, err := s.next.Invoke(ctx, record.EncodeEvent(shifted))
	var r events.DynamoDBEventResponse
	if err != nil || json.Unmarshal(resp, &r) != nil || len(r.BatchItemFailures) == 0 {
		return resp, err
	}
	for i, f := range r.BatchItemFailures {
		if from, ok := orig[f.ItemIdentifier]; ok {
			r.BatchItemFailures[i].ItemIdentifier = from
		}
	}
	return json.Marshal(r)
}

// shiftSeq returns the record with its sequence number shifted, and the number before and
// after; the record as it is when it has none.
func shiftSeq(raw json.RawMessage) (json.RawMessage, string, string) {
	var rec map[string]json.RawMessage
	var ddb map[string]json.RawMessage
	var seq string
	if json.Unmarshal(raw, &rec) != nil || json.Unmarshal(rec["dynamodb"], &ddb) != nil || json.Unmarshal(ddb["SequenceNumber"], &seq) != nil {
		return raw, "", ""
	}
	n, ok := new(big.Int).SetString(seq, 10)
	if !ok {
		return raw, "", ""
	}
	to := n.Add(n, seqOffset).String()
	ddb["SequenceNumber"], _ = json.Marshal(to)
	rec["dynamodb"], _ = json.Marshal(ddb)
	out, err := json.Marshal(rec)
	if err != nil {
		return raw, "", ""
	}
	return out, seq, to
}
