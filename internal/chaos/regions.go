package chaos

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/replicator"
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
}

func (t twoRegions) table(key record.Item, table *string) *string {
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

func (t twoRegions) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	cp := *in
	cp.TableName = t.table(in.Item, in.TableName)
	return t.w.PutItem(ctx, &cp, o...)
}

func (t twoRegions) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	cp := *in
	cp.TableName = t.table(in.Key, in.TableName)
	return t.w.UpdateItem(ctx, &cp, o...)
}

func (t twoRegions) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
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

// drain waits until the pipeline's stream and, with a replicator, both replicas' streams
// are drained and neither part did anything in a whole round: each part's writes feed the
// other.
func drain(ctx context.Context, p *local.Pipeline, repl *replicator.Replicator) error {
	if repl == nil {
		return p.Mapping.Drain(ctx, time.Second)
	}
	for {
		before, activity := p.Stats().Records+p.Stats().Filtered, repl.Activity()
		if err := p.Mapping.Drain(ctx, time.Second); err != nil {
			return err
		}
		if err := repl.Drain(ctx, 300*time.Millisecond); err != nil {
			return err
		}
		if p.Stats().Records+p.Stats().Filtered == before && repl.Activity() == activity {
			return nil
		}
	}
}

// diffTables lists the items that differ between two replicas.
func diffTables(a, b map[Key]record.Item) []string {
	var out []string
	for k, ia := range a {
		ib, ok := b[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s: only in the first", k.PK, k.SK))
		case !reflect.DeepEqual(record.SortSets(ia), record.SortSets(ib)):
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
