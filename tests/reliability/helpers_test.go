// Package reliability is Denorm's fault-injection, convergence and poison-record suite:
// the social workload with TTL expiries and poison records, processed by the real handler
// and executor through the event source mapping emulator on DynamoDB Local while the
// harness (internal/chaos) delivers every batch twice, crashes invocations after k writes,
// cuts deadlines short, loses responses, throttles and makes transactions conflict. After
// the stream drains, the verify engine and an independent oracle must find nothing.
package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/chaos"
	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/processor"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

const rulesPath = "../../rules/social.yaml"

// run runs cfg on a fresh table and fails the test with everything the checks found.
func run(t *testing.T, cfg chaos.Config) *chaos.Result {
	t.Helper()
	cfg.Endpoint = ddbtest.Endpoint(t)
	db, _ := ddbtest.Clients(t)
	cfg.Table = ddbtest.TableName(t)
	t.Cleanup(func() { _ = provision.Delete(context.Background(), db, cfg.Table) })
	if cfg.RulesPath == "" {
		cfg.RulesPath = rulesPath
	}
	if cfg.OnFailureDir == "" {
		cfg.OnFailureDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	// Applications replace items with PutItem and move comments between authors.
	cfg.Workload = chaos.Options{PutOverCopies: true, Relink: true}
	// With the application class comments also lose and regain their author keys: the
	// social rules with Comment's gsi1 keys declared sparse.
	if cfg.Faults.Application && cfg.RulesPath == rulesPath {
		path, err := chaos.WriteSparseComments(rulesPath, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cfg.RulesPath, cfg.Workload.SparseComments = path, true
	}
	res, err := chaos.Run(context.Background(), cfg)
	if res != nil {
		var buf bytes.Buffer
		res.WriteSummary(&buf)
		t.Logf("seed %d, %d ops:\n%s", cfg.Seed, cfg.Ops, buf.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if ps := res.Problems(); len(ps) > 0 {
		if res.Verify != nil && !res.Verify.Clean() {
			var buf bytes.Buffer
			_ = res.Verify.WriteText(&buf)
			t.Log(buf.String())
		}
		for _, p := range ps {
			t.Error(p)
		}
	}
	return res
}

// quiet is the logger of the pipelines: warnings on stderr with DENORM_CHAOS_LOG=1, else
// nothing (faults make many).
func quiet() *slog.Logger {
	if os.Getenv("DENORM_CHAOS_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// rig is the social rules' real handler on a fresh table, fed by hand from the table's
// stream: for tests that choose the order and repetition of records themselves (a lagging
// shard, a redelivered batch).
type rig struct {
	t      *testing.T
	db     *dynamodb.Client
	table  string
	arn    string
	reader *ddbtest.StreamReader
	h      *handler.Handler
}

func newRig(t *testing.T, opt apply.Options) *rig {
	t.Helper()
	db, streams := ddbtest.Clients(t)
	set, err := rules.LoadSet(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	table, desc := ddbtest.NewTable(t, db, set.Table)
	arn := aws.ToString(desc.LatestStreamArn)
	return &rig{t: t, db: db, table: table, arn: arn, reader: ddbtest.NewStreamReader(t, streams, arn),
		h: processor.New(db, table, set, processor.Options{Logger: quiet(), Apply: opt})}
}

// invoke hands the records to the handler as one batch and fails the test unless all of
// them were applied.
func (r *rig) invoke(raws ...json.RawMessage) {
	r.t.Helper()
	resp, err := r.h.Handle(context.Background(), json.RawMessage(record.EncodeEvent(raws)))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		r.t.Fatalf("invocation failed: %v %v", err, resp.BatchItemFailures)
	}
}

// encode is the Lambda record JSON of a record read from the table's stream.
func (r *rig) encode(rec stypes.Record) json.RawMessage {
	r.t.Helper()
	raw, err := record.EncodeStreamRecord(rec, r.arn, "")
	if err != nil {
		r.t.Fatal(err)
	}
	return raw
}
