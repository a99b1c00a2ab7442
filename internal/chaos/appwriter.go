package chaos

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/workload"
)

// Markers the generator puts into an application Put (never written to the table). Real
// applications read an item and write it back whole later, with the values they read:
// counters and Denorm's own attributes included, by then stale. The generator cannot know
// those values, so the application writer reads them when the workload is written.
const (
	// readAttr makes a Put a read: the writer reads the item (consistently) and keeps what
	// it saw for a later Put of the same item; nothing is written.
	readAttr = "chaos:read"
	// staleAttr lists, comma-separated, the attributes a Put takes from the writer's last
	// read of the item (a name ending in * is a prefix); absent from the read, absent from
	// the Put. The marker itself is not written.
	staleAttr = "chaos:stale"
)

// appDB is what the application writer needs of the DynamoDB client.
type appDB interface {
	workload.Writer
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// appWriter is the application's side of the table: workload.Write's client, which turns
// the generator's read and stale markers into a GetItem and a Put of values read earlier.
// Ops on one item keep their order in workload.Write, so a read comes before its Put.
type appWriter struct {
	db     appDB
	counts *counters

	mu    sync.Mutex
	reads map[Key]record.Item
}

func newAppWriter(db appDB, c *counters) *appWriter {
	return &appWriter{db: db, counts: c, reads: map[Key]record.Item{}}
}

// PutItem implements workload.Writer.
func (w *appWriter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	k := keyOf(in.Item)
	switch {
	case in.Item[readAttr] != nil:
		out, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: in.TableName, Key: keyItem(k), ConsistentRead: aws.Bool(true)}, o...)
		if err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", k.PK, k.SK, err)
		}
		w.mu.Lock()
		w.reads[k] = out.Item
		w.mu.Unlock()
		return &dynamodb.PutItemOutput{}, nil
	case in.Item[staleAttr] != nil:
		w.mu.Lock()
		read := w.reads[k]
		w.mu.Unlock()
		item, denorm := withRead(in.Item, read)
		if denorm {
			w.counts.staleDenorm.Add(1)
		}
		cp := *in
		cp.Item = item
		in = &cp
	}
	return w.db.PutItem(ctx, in, o...)
}

// UpdateItem implements workload.Writer.
func (w *appWriter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return w.db.UpdateItem(ctx, in, o...)
}

// DeleteItem implements workload.Writer.
func (w *appWriter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return w.db.DeleteItem(ctx, in, o...)
}

// withRead returns the item a Put marked with staleAttr writes: its attributes without the
// marker, plus those the marker names as they were in read. denorm reports whether one of
// them is Denorm's own (_dn...).
func withRead(item, read record.Item) (out record.Item, denorm bool) {
	out = maps.Clone(item)
	delete(out, staleAttr)
	for _, name := range strings.Split(str(item[staleAttr]), ",") {
		prefix, isPrefix := strings.CutSuffix(name, "*")
		for a, v := range read {
			if a == name || (isPrefix && strings.HasPrefix(a, prefix)) {
				out[a] = v
				denorm = denorm || strings.HasPrefix(a, "_dn")
			}
		}
	}
	return out, denorm
}
