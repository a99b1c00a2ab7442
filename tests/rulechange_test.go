package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
)

// The rules before and after the change TestRulesChangeWhileWriting rolls out.
const (
	rulesV1 = "testdata/rulechange-v1.yaml"
	rulesV2 = "testdata/rulechange-v2.yaml"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// buildCLI builds cmd/denorm once per test run: the rollout runs the commands a team runs.
func buildCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "denorm-cli")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "denorm")
		if out, err := exec.Command("go", "build", "-o", cliPath, "../cmd/denorm").CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatalf("building denorm: %v", cliErr)
	}
	return cliPath
}

// denorm runs the CLI against DynamoDB Local and returns its exit status and output.
func denorm(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(buildCLI(t), args...)
	cmd.Env = append(os.Environ(), "DENORM_DYNAMODB_ENDPOINT="+ddbtest.Endpoint(t))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running denorm %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("$ denorm %s   (exit %d)\n%s", strings.Join(args, " "), code, out.String())
	return code, out.String()
}

// startRules starts the local pipeline with a rules file, resuming the stream from
// checkpoint: what deploying a new version of the function does to the event source mapping.
func startRules(t *testing.T, rulesFile, table, checkpoint string) *local.Pipeline {
	t.Helper()
	p, err := local.Start(context.Background(), rulesConfig(t, rulesFile, table, checkpoint))
	if err != nil {
		t.Fatalf("starting the pipeline with %s: %v", rulesFile, err)
	}
	return p
}

func rulesConfig(t *testing.T, rulesFile, table, checkpoint string) local.Config {
	return local.Config{
		RulesPath: rulesFile, Endpoint: ddbtest.Endpoint(t), Table: table, Logger: quietLogger(),
		Mapping: esm.Config{BatchSize: 50, MaximumRetryAttempts: esm.Int(3), BisectBatchOnFunctionError: true,
			ReportBatchItemFailures: true, CheckpointFile: checkpoint, OnFailureDir: t.TempDir(), PollInterval: 20 * time.Millisecond},
	}
}

// A second pipeline on a checkpoint another one holds fails to start, at once and saying
// so, rather than sitting idle until it is interrupted (as a second `denorm local` did).
func TestSecondPipelineOnAHeldCheckpoint(t *testing.T) {
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	ckpt := filepath.Join(t.TempDir(), "mapping.json")
	t.Cleanup(func() { deleteTable(db, table) })
	p := startRules(t, shopV1, table, ckpt)
	defer p.Close()
	second, err := local.Start(context.Background(), rulesConfig(t, shopV1, table, ckpt))
	if err == nil {
		second.Close()
		t.Fatal("a second pipeline started on a checkpoint the first holds")
	}
	if !errors.Is(err, esm.ErrCheckpointHeld) {
		t.Errorf("error %q is not esm.ErrCheckpointHeld", err)
	}
}

// blog is what the writers of TestRulesChangeWhileWriting believe exists.
type blog struct {
	mu       sync.Mutex
	rnd      *rand.Rand
	users    []string
	posts    []string
	folders  []string
	comments map[string]string // "postId#commentId" -> userId
	files    map[string]bool   // "folderId#fileId"
	next     int
	ops      atomic.Int64
}

func (b *blog) pick(s []string) string { return s[b.rnd.IntN(len(s))] }

func pickKey[V any](b *blog, m map[string]V) (string, bool) {
	if len(m) == 0 {
		return "", false
	}
	i := b.rnd.IntN(len(m))
	for k := range m {
		if i == 0 {
			return k, true
		}
		i--
	}
	return "", false
}

// step makes one application write: a comment added or deleted, a user renamed, a file
// added, changed (kind and size) or deleted.
func (b *blog) step(ctx context.Context, db *dynamodb.Client, table string) error {
	b.mu.Lock()
	b.next++
	id := fmt.Sprintf("%05d", b.next)
	var in any
	switch op := b.rnd.IntN(20); {
	case op < 6:
		p, u := b.pick(b.posts), b.pick(b.users)
		b.comments[p+"#c"+id] = u
		in = &dynamodb.PutItemInput{Item: commentOf(p, "c"+id, u)}
	case op < 8:
		k, ok := pickKey(b, b.comments)
		if !ok {
			b.mu.Unlock()
			return nil
		}
		delete(b.comments, k)
		p, c, _ := strings.Cut(k, "#")
		in = &dynamodb.DeleteItemInput{Key: item{"pk": str("POST#" + p), "sk": str("COMMENT#" + c)}}
	case op < 12:
		u := b.pick(b.users)
		in = &dynamodb.UpdateItemInput{Key: item{"pk": str("USER#" + u), "sk": str("PROFILE")},
			UpdateExpression: aws.String("SET #n = :n"), ExpressionAttributeNames: map[string]string{"#n": "name"},
			ExpressionAttributeValues: item{":n": str("User " + u + " v" + id)}}
	case op < 15:
		f := b.pick(b.folders)
		b.files[f+"#f"+id] = true
		in = &dynamodb.PutItemInput{Item: fileOf(f, "f"+id, b.rnd)}
	case op < 18:
		k, ok := pickKey(b, b.files)
		if !ok {
			b.mu.Unlock()
			return nil
		}
		f, fid, _ := strings.Cut(k, "#")
		in = &dynamodb.PutItemInput{Item: fileOf(f, fid, b.rnd)}
	default:
		k, ok := pickKey(b, b.files)
		if !ok {
			b.mu.Unlock()
			return nil
		}
		delete(b.files, k)
		f, fid, _ := strings.Cut(k, "#")
		in = &dynamodb.DeleteItemInput{Key: item{"pk": str("FOLDER#" + f), "sk": str("FILE#" + fid)}}
	}
	// The model and the table change together: another writer never sees an item the
	// table does not have yet.
	defer b.mu.Unlock()
	var err error
	switch x := in.(type) {
	case *dynamodb.PutItemInput:
		x.TableName = aws.String(table)
		_, err = db.PutItem(ctx, x)
	case *dynamodb.DeleteItemInput:
		x.TableName = aws.String(table)
		_, err = db.DeleteItem(ctx, x)
	case *dynamodb.UpdateItemInput:
		x.TableName = aws.String(table)
		_, err = db.UpdateItem(ctx, x)
	}
	b.ops.Add(1)
	return err
}

func commentOf(p, c, u string) item {
	return item{"pk": str("POST#" + p), "sk": str("COMMENT#" + c), "gsi1pk": str("USER#" + u), "gsi1sk": str("COMMENT#" + c), "text": str("hello")}
}

func fileOf(f, id string, rnd *rand.Rand) item {
	kind := "doc"
	if rnd.IntN(2) == 0 {
		kind = "image"
	}
	return item{"pk": str("FOLDER#" + f), "sk": str("FILE#" + id), "size": num(100 + rnd.IntN(900)), "kind": str(kind)}
}

// runWriters runs n application writers, each calling step after a pause drawn from
// [minPause, maxPause), until the returned stop (safe to call twice) stops and waits for them.
func runWriters(t *testing.T, n int, minPause, maxPause time.Duration, step func(context.Context) error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(minPause + rand.N(maxPause-minPause)):
				}
				if err := step(context.Background()); err != nil {
					t.Errorf("application write: %v", err)
					return
				}
			}
		})
	}
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// commandsOf returns the commands of a printed plan, in order.
func commandsOf(plan string) [][]string {
	var out [][]string
	for _, l := range strings.Split(plan, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "denorm ") {
			out = append(out, strings.Fields(l)[1:])
		}
	}
	return out
}

// TestRulesChangeWhileWriting rolls out a change of the rules of a running pipeline while
// the application keeps writing, by the procedure of docs/operations.md ("Changing the
// rules"): a rule added (post-comment-count), a where changed (folder-size counts images
// instead of documents), a rule removed (comment-author). It runs `denorm diff`, deploys the
// new rules (the mapping resumes from its checkpoint with the new handler), runs the
// backfill and the clean-up the plan prints with the writers still writing, then stops
// them: `denorm verify` must be clean and nothing comment-author wrote may be left.
func TestRulesChangeWhileWriting(t *testing.T) {
	db, _ := ddbtest.Clients(t) // skips without an emulator
	table := ddbtest.TableName(t)
	ckpt := filepath.Join(t.TempDir(), "mapping.json")
	t.Cleanup(func() { deleteTable(db, table) })
	ctx := context.Background()

	// The application's data, processed by the old rules.
	p := startRules(t, rulesV1, table, ckpt)
	b := &blog{rnd: rand.New(rand.NewPCG(7, 11)), comments: map[string]string{}, files: map[string]bool{}}
	for i := range 6 {
		b.users = append(b.users, fmt.Sprintf("u%d", i))
	}
	for i := range 20 {
		b.posts = append(b.posts, fmt.Sprintf("p%d", i))
	}
	for i := range 16 {
		b.folders = append(b.folders, fmt.Sprintf("d%d", i))
	}
	var seed []item
	for _, u := range b.users {
		seed = append(seed, item{"pk": str("USER#" + u), "sk": str("PROFILE"), "name": str("User " + u)})
	}
	for _, x := range b.posts {
		seed = append(seed, item{"pk": str("POST#" + x), "sk": str("METADATA"), "title": str("Post " + x)})
	}
	for _, f := range b.folders {
		seed = append(seed, item{"pk": str("FOLDER#" + f), "sk": str("METADATA"), "name": str("Folder " + f)})
	}
	for _, it := range seed {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	for range 250 {
		if err := b.step(ctx, db, table); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, p)
	if code, _ := denorm(t, "verify", "--rules", rulesV1, "--table", table, "--no-progress"); code != 0 {
		t.Fatalf("the old rules do not hold before the change (exit %d)", code)
	}

	stopWriters := runWriters(t, 3, 50*time.Millisecond, 150*time.Millisecond,
		func(ctx context.Context) error { return b.step(ctx, db, table) })
	defer stopWriters()
	time.Sleep(500 * time.Millisecond)

	// 1. What the change needs.
	code, plan := denorm(t, "diff", rulesV1, rulesV2, "--table", table)
	if code != 1 {
		t.Fatalf("denorm diff exited %d, want 1 (actions needed)", code)
	}
	cmds := commandsOf(plan)
	// The plan names the endpoint denorm diff was given (here $DENORM_DYNAMODB_ENDPOINT).
	ep := ddbtest.Endpoint(t)
	wantCmds := [][]string{
		{"backfill", "--rules", rulesV2, "--table", table, "--endpoint", ep, "--only", "folder-size,post-comment-count"},
		{"verify", "--rules", rulesV2, "--table", table, "--endpoint", ep, "--only", "folder-size,post-comment-count"},
		{"cleanup", "--rules", rulesV1, "--new", rulesV2, "--table", table, "--endpoint", ep, "--only", "comment-author"},
	}
	if fmt.Sprint(cmds) != fmt.Sprint(wantCmds) {
		t.Fatalf("the plan's commands are\n%v\nwant\n%v", cmds, wantCmds)
	}

	// 2. Deploy: the old handler stops (its invocations finish), the new one resumes the
	// stream where the old one stopped; the writers go on meanwhile.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	p = startRules(t, rulesV2, table, ckpt)
	defer p.Close()

	// 3. Backfill the added and changed rules while the application writes. The settle is
	// above this pipeline's lag (20 ms polls, batches of 50). A counter written again
	// within every settle is left (exit 1); the procedure runs the backfill again, and it
	// touches only what still drifts.
	before := b.ops.Load()
	start := time.Now()
	for run := 1; ; run++ {
		code, _ := denorm(t, append(cmds[0], "--settle", "1s", "--no-progress")...)
		if code == 0 {
			break
		}
		if code != 1 || run == 5 {
			t.Fatalf("backfill run %d exited %d", run, code)
		}
	}
	during := b.ops.Load() - before
	t.Logf("the application made %d writes during the %s backfill", during, time.Since(start).Round(time.Millisecond))

	// 4. Clean up what comment-author left, still while the application writes.
	before = b.ops.Load()
	if code, _ := denorm(t, append(cmds[2], "--no-progress")...); code != 0 {
		t.Fatalf("cleanup exited %d", code)
	}
	t.Logf("the application made %d writes during the clean-up", b.ops.Load()-before)
	if during == 0 {
		t.Errorf("no application write during the backfill: the test proves nothing")
	}

	// 5. Quiet down and verify: the plan's verify, then every rule.
	stopWriters()
	drain(t, p)
	if code, _ := denorm(t, append(cmds[1], "--no-progress")...); code != 0 {
		t.Errorf("verify of the changed rules exited %d, want 0", code)
	}
	if code, _ := denorm(t, "verify", "--rules", rulesV2, "--table", table, "--no-progress"); code != 0 {
		t.Errorf("verify of the new rules exited %d, want 0", code)
	}

	// Nothing of comment-author is left: no copied name, no version, no registry item.
	left := 0
	pg := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	comments := 0
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			sk := it["sk"].(*types.AttributeValueMemberS).Value
			if strings.HasPrefix(sk, "COMMENT#") {
				comments++
			}
			if strings.Contains(pk, "comment-author") || it["userName"] != nil || it["_dnv_comment-author"] != nil {
				left++
				if left <= 5 {
					t.Errorf("%s %s: comment-author's %v is still there", pk, sk, keysOf(it))
				}
			}
		}
	}
	if left > 0 {
		t.Errorf("%d items still hold what comment-author wrote", left)
	}
	t.Logf("%d application writes in all, %d comments at the end", b.ops.Load(), comments)
}

func keysOf(it item) []string {
	var out []string
	for k := range it {
		out = append(out, k)
	}
	return out
}
