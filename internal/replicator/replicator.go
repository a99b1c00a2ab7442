// Package replicator stands in, locally, for DynamoDB global tables (version 2019.11.21,
// multi-Region eventual consistency): it keeps two or more tables on one DynamoDB Local
// endpoint as replicas of each other. Each table plays a Region.
//
// Each table's stream is read by an event source mapping emulator (internal/esm) whose
// invoker is the replicator. A record of a write the replicator did not make is a local
// write of that Region: it gets a timestamp (the time it was read, strictly increasing) and
// becomes the item's newest version; after Delay it is put (or deleted) in every other
// table that does not hold a newer version by then. Each item's versions are carried in
// order; two items' versions may land in another order than they were written, as in
// DynamoDB. A record of a write the replicator made is recognized by its key and new image
// (numbers by value: DynamoDB Local may write "12.50" back as "12.5") and goes no further.
// Conflicting writes resolve as global tables resolve them, last writer wins per item: the
// version with the later timestamp ends in every table, and the other is lost where it had
// not arrived.
//
// What it does not model (docs/reliability.md says the same): timestamps are the time the
// replicator read a record, not the time of the write; a replicated write can briefly put
// back an older version over a local write the replicator had not read yet (it then puts
// the winner again, and both writes show in that table's stream, where DynamoDB would show
// neither the older version nor the repair); the hidden replication attributes, replicated
// write units and a Region's outage (Pause models a Region that stops replicating).
package replicator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/value"
)

// DB is the part of the DynamoDB client the replicator uses.
type DB interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Config is a set of replicas.
type Config struct {
	DB      DB
	Streams esm.StreamsAPI
	// Tables are the replicas, one per Region, each with a NEW_AND_OLD_IMAGES stream and the
	// same key schema. At least two.
	Tables []string
	// Delay is how long after the replicator reads a local write it writes it to the other
	// replicas (global tables: about 0.5 to 2.5 s within a geography).
	Delay time.Duration
	// Logger receives the mappings' logs (default: none).
	Logger *slog.Logger
}

// Stats counts what the replicator did.
type Stats struct {
	// Local is the number of local writes read (each Region's own).
	Local int64
	// Replicated is the number of writes made to carry a version to another replica.
	Replicated int64
	// Conflicts counts local writes that replaced, in their Region, a version of another
	// Region that had not reached it yet: two Regions wrote one item within the delay, and
	// last writer wins.
	Conflicts int64
	// Repairs counts replicated writes that put back an older version over a local write not
	// read yet, and were then overwritten with the winner.
	Repairs int64
	// Held counts the writes to carry queued while their Region or the one they go to was
	// cut off (Pause): they wait for it to come back.
	Held int64
}

// Replicator runs the replication. Create it with Start.
type Replicator struct {
	cfg      Config
	maps     []*esm.Mapping
	lanes    [][]*lane // per replica, its writers: one item's writes in one lane
	cancel   context.CancelFunc
	done     sync.WaitGroup
	paused   []atomic.Bool
	pending  atomic.Int64 // jobs queued or running
	activity atomic.Int64 // records read plus writes made

	local, replicated, conflicts, repairs, held atomic.Int64

	failMu sync.Mutex
	err    error         // the first error
	failed chan struct{} // closed with it

	mu    sync.Mutex
	clock int64
	items map[string]*itemState
	// deleted holds, per replica, the deletes the replicator made (key and old image), and
	// deleting the keys of those under way: Replicated tells them from the Region's own.
	deleted  []map[string]bool
	deleting []map[string]int
}

// version is one version of an item: its image (nil once deleted) and when it was written.
type version struct {
	ts     int64
	region int
	key    record.Item
	image  record.Item
	digest string
}

// itemState is what the replicator knows of one item.
type itemState struct {
	// winner is the newest version: where the item converges.
	winner version
	// held is the timestamp of the version each replica holds, as far as the replicator knows
	// (its writes included); seen the newest each replica's stream showed.
	held, seen []int64
	// echoes are the versions the replicator wrote to each replica whose records it has not
	// read yet.
	echoes [][]version
}

// writers is how many lanes each replica has.
const writers = 4

// job carries one version to a replica.
type job struct {
	key string
	v   version
	due time.Time
}

// lane is one writer's queue: pushing never blocks, so the replicator can queue while it
// holds its lock.
type lane struct {
	mu   sync.Mutex
	jobs []job
	wake chan struct{}
}

func (l *lane) push(j job) {
	l.mu.Lock()
	l.jobs = append(l.jobs, j)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *lane) pop(ctx context.Context) (job, bool) {
	for {
		l.mu.Lock()
		if len(l.jobs) > 0 {
			j := l.jobs[0]
			l.jobs = l.jobs[1:]
			l.mu.Unlock()
			return j, true
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return job{}, false
		case <-l.wake:
		}
	}
}

// Start checks the tables and starts reading their streams from the start.
func Start(ctx context.Context, cfg Config) (*Replicator, error) {
	if len(cfg.Tables) < 2 || cfg.DB == nil || cfg.Streams == nil {
		return nil, errors.New("replicator: a DynamoDB client, a streams client and at least two tables are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n := len(cfg.Tables)
	r := &Replicator{cfg: cfg, lanes: make([][]*lane, n), paused: make([]atomic.Bool, n), failed: make(chan struct{}),
		items: map[string]*itemState{}, deleted: make([]map[string]bool, n), deleting: make([]map[string]int, n)}
	// The mappings and writers run until Close, not until ctx, which only bounds Start.
	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	for i, table := range cfg.Tables {
		r.deleted[i], r.deleting[i] = map[string]bool{}, map[string]int{}
		out, err := cfg.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("replicator: table %s: %w", table, err)
		}
		spec := out.Table.StreamSpecification
		if spec == nil || !aws.ToBool(spec.StreamEnabled) || spec.StreamViewType != types.StreamViewTypeNewAndOldImages {
			r.Close()
			return nil, fmt.Errorf("replicator: table %s needs a NEW_AND_OLD_IMAGES stream", table)
		}
		m, err := esm.New(cfg.Streams, reader{r, i}, esm.Config{
			StreamARN: aws.ToString(out.Table.LatestStreamArn), BatchSize: 100,
			PollInterval: 20 * time.Millisecond, RetryBackoff: 10 * time.Millisecond, Logger: cfg.Logger,
		})
		if err != nil {
			r.Close()
			return nil, err
		}
		r.maps = append(r.maps, m)
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			if err := m.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
				r.fail(fmt.Errorf("replicator: reading %s: %w", table, err))
			}
		}()
		for range writers {
			l := &lane{wake: make(chan struct{}, 1)}
			r.lanes[i] = append(r.lanes[i], l)
			r.done.Add(1)
			go func() {
				defer r.done.Done()
				r.write(runCtx, i, l)
			}()
		}
	}
	for _, m := range r.maps {
		select {
		case <-m.Started():
		case <-r.failed:
			r.Close()
			return nil, r.firstErr()
		case <-ctx.Done():
			r.Close()
			return nil, ctx.Err()
		}
	}
	return r, nil
}

// fail keeps the first error; the replicator stops writing.
func (r *Replicator) fail(err error) {
	r.failMu.Lock()
	defer r.failMu.Unlock()
	if r.err == nil {
		r.err = err
		close(r.failed)
	}
}

func (r *Replicator) firstErr() error {
	r.failMu.Lock()
	defer r.failMu.Unlock()
	return r.err
}

// Close stops reading and writing; writes not made yet are dropped. It returns the first
// error the replicator met.
func (r *Replicator) Close() error {
	r.cancel()
	r.done.Wait()
	return r.firstErr()
}

// Pause stops (true) or resumes (false) replication into and out of replica i, as when its
// Region is cut off: its local writes wait, and so do the other Regions' writes to it.
func (r *Replicator) Pause(i int, paused bool) { r.paused[i].Store(paused) }

// Stats returns what the replicator did so far.
func (r *Replicator) Stats() Stats {
	return Stats{Local: r.local.Load(), Replicated: r.replicated.Load(), Conflicts: r.conflicts.Load(), Repairs: r.repairs.Load(), Held: r.held.Load()}
}

// Activity counts every record read and write made: a caller waiting for several parts to
// settle compares it before and after.
func (r *Replicator) Activity() int64 { return r.activity.Load() }

// Replicated reports whether the replicator deleted the item of keys from replica i when it
// held old: a REMOVE of that replica's stream that is not the Region's own. DynamoDB's stream
// of a replica marks a TTL delete only in the Region whose TTL process made it.
func (r *Replicator) Replicated(i int, keys, old record.Item) bool {
	key := digest(keys)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleted[i][key+digest(old)] || r.deleting[i][key] > 0
}

// Drain waits until every stream has been read to its tip, every write has been made and
// nothing happened for idle. It returns ctx's error when writes keep coming.
func (r *Replicator) Drain(ctx context.Context, idle time.Duration) error {
	for {
		before := r.activity.Load()
		for _, m := range r.maps {
			if err := m.Drain(ctx, idle); err != nil {
				return err
			}
		}
		for r.pending.Load() > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-r.failed:
				return r.firstErr()
			case <-time.After(10 * time.Millisecond):
			}
		}
		if r.activity.Load() == before {
			return nil
		}
	}
}

// reader is the invoker of replica i's mapping.
type reader struct {
	r *Replicator
	i int
}

// Invoke reads one batch of replica i's stream.
func (rd reader) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	raws, err := record.SplitEvent(payload)
	if err != nil {
		return nil, err
	}
	for _, raw := range raws {
		c, err := record.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("replicator: %w", err)
		}
		rd.r.read(rd.i, c)
	}
	return []byte(`{}`), nil
}

// read takes one record of replica i.
func (r *Replicator) read(i int, c record.Change) {
	r.activity.Add(1)
	key := digest(c.Keys)
	d := digest(c.New)
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.items[key]
	if st == nil {
		n := len(r.cfg.Tables)
		st = &itemState{held: make([]int64, n), seen: make([]int64, n), echoes: make([][]version, n)}
		r.items[key] = st
	}
	for at, e := range st.echoes[i] {
		if e.digest != d {
			continue
		}
		// The replicator's own write. Echoes before it were overwritten before being read:
		// they are done with too.
		st.echoes[i] = st.echoes[i][at+1:]
		if st.seen[i] > e.ts {
			// It was written over a newer local write not read yet: put the newest back.
			st.held[i] = e.ts
			r.repairs.Add(1)
			r.enqueue(i, key, st.winner, time.Now())
			return
		}
		st.seen[i] = e.ts
		return
	}
	if c.Op == record.Remove && c.Old == nil {
		return // a delete of an item already gone (DynamoDB Local writes one): no change
	}
	r.local.Add(1)
	// A version of another Region had not reached this one (or was on its way, to be
	// written over this write and repaired): the two writes conflict, and this later one wins.
	if w := st.winner; w.ts != 0 && w.region != i && (st.held[i] < w.ts || len(st.echoes[i]) > 0 && st.echoes[i][len(st.echoes[i])-1].ts == w.ts) {
		r.conflicts.Add(1)
	}
	r.clock = max(r.clock+1, time.Now().UnixNano())
	v := version{ts: r.clock, region: i, key: c.Keys, image: c.New, digest: d}
	st.winner, st.held[i], st.seen[i] = v, v.ts, v.ts
	due := time.Now().Add(r.cfg.Delay)
	for j := range r.cfg.Tables {
		if j != i {
			r.enqueue(j, key, v, due)
		}
	}
}

// enqueue queues a version for replica i; it never blocks.
func (r *Replicator) enqueue(i int, key string, v version, due time.Time) {
	r.pending.Add(1)
	if r.paused[i].Load() || r.paused[v.region].Load() {
		r.held.Add(1)
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	r.lanes[i][h.Sum32()%writers].push(job{key: key, v: v, due: due})
}

// write makes the writes of one of replica i's lanes, in the order they were queued.
func (r *Replicator) write(ctx context.Context, i int, l *lane) {
	for {
		j, ok := l.pop(ctx)
		if !ok {
			return
		}
		for {
			wait := time.Until(j.due)
			paused := r.paused[i].Load() || r.paused[j.v.region].Load()
			if !paused && wait <= 0 {
				break
			}
			if paused || wait > 20*time.Millisecond {
				wait = 20 * time.Millisecond
			}
			if retry.Sleep(ctx, wait) != nil {
				return
			}
		}
		if err := r.carry(ctx, i, j); err != nil {
			if ctx.Err() == nil {
				r.fail(err)
			}
			return
		}
		r.pending.Add(-1)
	}
}

// carry writes a version to replica i unless i holds it or a newer one: last writer wins.
func (r *Replicator) carry(ctx context.Context, i int, j job) error {
	w := j.v
	r.mu.Lock()
	st := r.items[j.key]
	if st.held[i] >= w.ts {
		r.mu.Unlock()
		return nil
	}
	// The echo goes first: the write's record can be read before the write returns.
	st.echoes[i] = append(st.echoes[i], w)
	st.held[i] = w.ts
	if w.image == nil {
		r.deleting[i][j.key]++
	}
	r.mu.Unlock()
	table := aws.String(r.cfg.Tables[i])
	var old record.Item
	for attempt := 0; ; attempt++ {
		var err error
		if w.image == nil {
			var out *dynamodb.DeleteItemOutput
			out, err = r.cfg.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: w.key, ReturnValues: types.ReturnValueAllOld})
			if err == nil {
				old = out.Attributes
			}
		} else {
			var out *dynamodb.PutItemOutput
			out, err = r.cfg.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: w.image, ReturnValues: types.ReturnValueAllOld})
			if err == nil {
				old = out.Attributes
			}
		}
		if err == nil {
			break
		}
		if !retry.Transient(err) || attempt == 10 {
			return fmt.Errorf("replicator: writing to %s: %w", r.cfg.Tables[i], err)
		}
		if err := retry.Sleep(ctx, time.Duration(attempt+1)*20*time.Millisecond); err != nil {
			return err
		}
	}
	r.mu.Lock()
	if w.image == nil {
		r.deleting[i][j.key]--
	}
	if len(old) == 0 {
		old = nil
	}
	if digest(old) == w.digest {
		// The replica held that version already: DynamoDB writes no record for a write that
		// changes nothing, so no echo will come.
		if n := len(st.echoes[i]); n > 0 && st.echoes[i][n-1].ts == w.ts {
			st.echoes[i] = st.echoes[i][:n-1]
		}
	} else if w.image == nil {
		r.deleted[i][j.key+digest(old)] = true
	}
	r.mu.Unlock()
	r.replicated.Add(1)
	r.activity.Add(1)
	return nil
}

// digest names an image (or a key) as DynamoDB compares them: set members in any order,
// numbers by value; "" for no image.
func digest(item record.Item) string {
	if item == nil {
		return ""
	}
	b, err := record.MarshalItem(record.SortSets(record.MapValues(item, canonicalNumbers)))
	if err != nil {
		panic(err) // an image decoded from a stream record always marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// canonicalNumbers writes a number, or each member of a number set, one way ("779116", not
// "779116.00"): an image the replicator put can come back in the stream with its numbers
// written otherwise, and must still be known as its echo. Unrecognised, the echo would be a
// local write of that Region, carried back with a newer timestamp over the item's later
// versions: a regression DynamoDB never makes.
func canonicalNumbers(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: canonicalNumber(v.Value)}
	case *types.AttributeValueMemberNS:
		ns := make([]string, len(v.Value))
		for i, n := range v.Value {
			ns[i] = canonicalNumber(n)
		}
		return &types.AttributeValueMemberNS{Value: ns}
	}
	return v
}

func canonicalNumber(s string) string {
	n, err := value.ParseNumber(s)
	if err != nil {
		return s
	}
	return n.String()
}
