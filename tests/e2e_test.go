// Package tests holds Denorm's end-to-end tests: the social example's workload written to
// DynamoDB Local as an application would, processed through the event source mapping
// emulator by the real handler, in process and as the built bootstrap binary.
package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/workload"
)

const rulesPath = "../rules/social.yaml"

var (
	buildOnce sync.Once
	bootstrap string
	buildErr  error
)

// buildBootstrap builds functions/streamproc for this machine, as `make build` does for
// Lambda (same tags), once per test run.
func buildBootstrap(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "denorm-bootstrap")
		if err != nil {
			buildErr = err
			return
		}
		bootstrap = filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bootstrap, "../functions/streamproc")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			bootstrap = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building the bootstrap: %v\n%s", buildErr, bootstrap)
	}
	return bootstrap
}

func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func start(t *testing.T, table, bin, checkpoint string) *local.Pipeline {
	t.Helper()
	p, err := local.Start(context.Background(), local.Config{
		RulesPath: rulesPath, Endpoint: ddbtest.Endpoint(t), Table: table, Bootstrap: bin, Logger: quietLogger(),
		Mapping: esm.Config{BatchSize: 50, MaximumRetryAttempts: esm.Int(3), BisectBatchOnFunctionError: true,
			ReportBatchItemFailures: true, CheckpointFile: checkpoint, OnFailureDir: t.TempDir(), PollInterval: 20 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func drain(t *testing.T, p *local.Pipeline) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := p.Drain(ctx, 500*time.Millisecond); err != nil {
		t.Fatalf("draining: %v", err)
	}
}

func write(t *testing.T, p *local.Pipeline, ops []workload.Op) {
	t.Helper()
	if err := workload.Write(context.Background(), p.DB, p.Table, ops, 4, nil); err != nil {
		t.Fatal(err)
	}
}

var small = workload.Scale{Users: 12, Posts: 20, Comments: 150, Groups: 4, Memberships: 40, Folders: 3, Files: 40, Churn: 200}

// The whole social workload converges, with the handler in process and as the shipped
// bootstrap binary behind the local Runtime API.
func TestSocialWorkloadConverges(t *testing.T) {
	for _, mode := range []string{"in-process", "bootstrap"} {
		t.Run(mode, func(t *testing.T) {
			bin := ""
			if mode == "bootstrap" {
				bin = buildBootstrap(t)
			}
			db, _ := ddbtest.Clients(t)
			table := ddbtest.TableName(t)
			p := start(t, table, bin, filepath.Join(t.TempDir(), "ckpt.json"))
			defer p.Close()
			t.Cleanup(func() { deleteTable(db, table) })
			write(t, p, workload.Social(42, small))
			drain(t, p)
			assertConverged(t, p)
		})
	}
}

// A restarted pipeline with the same checkpoint does not deliver processed records again.
func TestRestartDoesNotReprocess(t *testing.T) {
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	ckpt := filepath.Join(t.TempDir(), "ckpt.json")
	t.Cleanup(func() { deleteTable(db, table) })
	ops := workload.Social(7, workload.Scale{Users: 5, Posts: 5, Comments: 40, Groups: 2, Memberships: 10, Folders: 2, Files: 10, Churn: 30})

	p := start(t, table, "", ckpt)
	write(t, p, ops)
	drain(t, p)
	first := p.Mapping.Stats()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if first.Records == 0 {
		t.Fatal("the first run delivered no records")
	}

	p = start(t, table, "", ckpt)
	defer p.Close()
	drain(t, p)
	if got := p.Mapping.Stats().Records; got != 0 {
		t.Fatalf("restart delivered %d records again, want 0", got)
	}
	// New writes after the restart are delivered, and only they.
	fresh := workload.Social(8, workload.Scale{Users: 3})
	for i := range fresh {
		fresh[i].Put["pk"] = &types.AttributeValueMemberS{Value: fmt.Sprintf("USER#fresh%d", i)}
	}
	write(t, p, fresh)
	drain(t, p)
	if got := p.Mapping.Stats().Records; got < 3 {
		t.Fatalf("after restart %d records delivered, want at least the 3 new writes", got)
	}
	assertConverged(t, p)
}
