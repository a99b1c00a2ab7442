package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
)

// The project tracker the application tests write: projects.yaml keeps the assignee in a
// plain attribute, projects-sparse.yaml in a sparse index key.
const (
	projectRules = "testdata/projects.yaml"
	sparseRules  = "testdata/projects-sparse.yaml"
)

// writers is how many application clients write at once.
const writers = 12

type item = map[string]types.AttributeValue

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(n int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: strconv.Itoa(n)} }

// appRig is the local pipeline (`denorm local`: the mapping emulator and the real handler)
// on a fresh table, and the application's own SDK client writing to it.
type appRig struct {
	t       *testing.T
	rules   string
	p       *local.Pipeline
	db      *dynamodb.Client
	table   string
	failDir string
	rnd     *rand.Rand
}

func startApp(t *testing.T, rulesFile string) *appRig {
	t.Helper()
	db, _ := ddbtest.Clients(t) // skips without an emulator
	table := ddbtest.TableName(t)
	failDir := t.TempDir()
	p, err := local.Start(context.Background(), local.Config{
		RulesPath: rulesFile, Endpoint: ddbtest.Endpoint(t), Table: table, Logger: quietLogger(),
		Mapping: esm.Config{BatchSize: 50, MaximumRetryAttempts: esm.Int(3), BisectBatchOnFunctionError: true,
			ReportBatchItemFailures: true, OnFailureDir: failDir, PollInterval: 20 * time.Millisecond},
	})
	if err != nil {
		t.Fatalf("starting the local pipeline on %s: %v", rulesFile, err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		deleteTable(db, table)
	})
	return &appRig{t: t, rules: rulesFile, p: p, db: db, table: table, failDir: failDir, rnd: rand.New(rand.NewPCG(1, 2))}
}

// step is one application request; a script is the requests one client makes in order.
type step struct {
	what string
	do   func(context.Context, *dynamodb.Client) error
}

type script []step

func (r *appRig) put(what string, it item) step {
	return step{what, func(ctx context.Context, db *dynamodb.Client) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: it})
		return err
	}}
}

func (r *appRig) del(what string, key item) step {
	return step{what, func(ctx context.Context, db *dynamodb.Client) error {
		_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(r.table), Key: key})
		return err
	}}
}

// update is an UpdateItem of an existing item, as an application that does not mean to
// create items writes it.
func (r *appRig) update(what string, key item, u expression.UpdateBuilder) step {
	return step{what, func(ctx context.Context, db *dynamodb.Client) error {
		e, err := expression.NewBuilder().WithUpdate(u).WithCondition(expression.AttributeExists(expression.Name("pk"))).Build()
		if err != nil {
			return err
		}
		_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(r.table), Key: key, UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		})
		return err
	}}
}

func pause(d time.Duration) step {
	return step{"pause", func(context.Context, *dynamodb.Client) error { time.Sleep(d); return nil }}
}

// jitter is a pause of up to upTo, so the clients' requests interleave differently.
func (r *appRig) jitter(upTo time.Duration) step {
	return pause(time.Duration(r.rnd.Int64N(int64(upTo))))
}

// run runs the scripts on `writers` concurrent clients, in the given order of start;
// every request must succeed.
func (r *appRig) run(scripts ...script) {
	r.t.Helper()
	ctx := context.Background()
	next := make(chan script)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for s := range next {
				for _, st := range s {
					if err := st.do(ctx, r.db); err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("application request %s: %w", st.what, err))
						mu.Unlock()
						break
					}
				}
			}
		})
	}
	for _, s := range scripts {
		next <- s
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		r.t.Fatal(err)
	}
}

// shuffled returns scripts in a random (seeded) order.
func (r *appRig) shuffled(scripts []script) []script {
	r.rnd.Shuffle(len(scripts), func(i, j int) { scripts[i], scripts[j] = scripts[j], scripts[i] })
	return scripts
}

func (r *appRig) drain() {
	r.t.Helper()
	drain(r.t, r.p)
}

// The domain: users, projects and their tasks. A task's assignee is "" when unassigned.
type task struct {
	project, id, assignee, title string
	points                       int
}

func userKey(u string) item    { return item{"pk": str("USER#" + u), "sk": str("PROFILE")} }
func projectKey(p string) item { return item{"pk": str("PROJECT#" + p), "sk": str("METADATA")} }
func (t *task) key() item      { return item{"pk": str("PROJECT#" + t.project), "sk": str("TASK#" + t.id)} }

func userName(u string) string    { return "User " + u }
func projectName(p string) string { return "Project " + p }

// userItem is a whole profile as a profile editor saves it: every field it knows, no
// counters and none of Denorm's attributes.
func userItem(u string, edit int) item {
	return item{"pk": str("USER#" + u), "sk": str("PROFILE"), "name": str(userName(u)),
		"email": str(fmt.Sprintf("%s+%d@example.com", u, edit))}
}

func projectItem(p string, edit int) item {
	return item{"pk": str("PROJECT#" + p), "sk": str("METADATA"), "name": str(projectName(p)),
		"description": str(fmt.Sprintf("edit %d", edit))}
}

// item is the task as the application writes it; sparse puts the assignee in gsi1pk (the
// rules of projects-sparse.yaml) instead of assigneeId.
func (t *task) item(sparse bool) item {
	it := t.key()
	it["title"], it["points"] = str(t.title), num(t.points)
	switch {
	case t.assignee == "":
	case sparse:
		it["gsi1pk"], it["gsi1sk"] = str("USER#"+t.assignee), str("TASK#"+t.project+"#"+t.id)
		it["assigneeName"] = str(userName(t.assignee))
	default:
		it["assigneeId"] = str(t.assignee)
	}
	return it
}

// model is what the application believes the table holds: every task that exists.
type model map[string]*task

func (m model) add(t *task)  { m[t.project+"#"+t.id] = t }
func (m model) drop(t *task) { delete(m, t.project+"#"+t.id) }

type totals struct{ count, points int }

func (m model) byProject() map[string]totals {
	out := map[string]totals{}
	for _, t := range m {
		tt := out[t.project]
		out[t.project] = totals{tt.count + 1, tt.points + t.points}
	}
	return out
}

func (m model) byAssignee() map[string]totals {
	out := map[string]totals{}
	for _, t := range m {
		if t.assignee != "" {
			tt := out[t.assignee]
			out[t.assignee] = totals{tt.count + 1, tt.points + t.points}
		}
	}
	return out
}

// want is one counter's expected value.
type want struct {
	rule, pk, sk, attr string
	value              int
	why                string
}

// counterWants lists the project and user counters of m. withUserPoints is false for
// projects-sparse.yaml, which has no user-points rule.
func counterWants(m model, projects, users []string, withUserPoints bool) []want {
	var ws []want
	bp, bu := m.byProject(), m.byAssignee()
	for _, p := range projects {
		tt := bp[p]
		ws = append(ws,
			want{"project-task-count", "PROJECT#" + p, "METADATA", "taskCount", tt.count, fmt.Sprintf("%d tasks in %s", tt.count, p)},
			want{"project-points", "PROJECT#" + p, "METADATA", "totalPoints", tt.points, fmt.Sprintf("points of the %d tasks in %s", tt.count, p)})
	}
	for _, u := range users {
		tt := bu[u]
		ws = append(ws, want{"user-task-count", "USER#" + u, "PROFILE", "taskCount", tt.count, fmt.Sprintf("%d tasks assigned to %s", tt.count, u)})
		if withUserPoints {
			ws = append(ws, want{"user-points", "USER#" + u, "PROFILE", "assignedPoints", tt.points, fmt.Sprintf("points of the %d tasks assigned to %s", tt.count, u)})
		}
	}
	return ws
}

// checkCounters reads every counter (consistently) and reports each one that differs.
// Absent is 0, as verify has it.
func (r *appRig) checkCounters(when string, ws []want) {
	r.t.Helper()
	bad := 0
	for _, w := range ws {
		it := r.get(item{"pk": str(w.pk), "sk": str(w.sk)})
		if it == nil {
			r.t.Errorf("%s: rule %q: target %s %s does not exist, want %s = %d (%s)", when, w.rule, w.pk, w.sk, w.attr, w.value, w.why)
			bad++
			continue
		}
		got, shown := 0, "absent"
		switch v := it[w.attr].(type) {
		case nil:
		case *types.AttributeValueMemberN:
			got, shown = -1, v.Value
			if n, err := strconv.Atoi(v.Value); err == nil {
				got = n
			}
		default:
			got, shown = -1, fmt.Sprintf("a %T", v)
		}
		if got != w.value {
			r.t.Errorf("%s: rule %q: %s %s %s = %s, want %d (%s)", when, w.rule, w.pk, w.sk, w.attr, shown, w.value, w.why)
			bad++
		}
	}
	if bad == 0 {
		r.t.Logf("%s: all %d counters right", when, len(ws))
	}
}

func (r *appRig) get(key item) item {
	r.t.Helper()
	out, err := r.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		r.t.Fatal(err)
	}
	return out.Item
}

// query returns the items of partition pk whose sort key starts with prefix.
func (r *appRig) query(pk, prefix string) []item {
	r.t.Helper()
	e, err := expression.NewBuilder().WithKeyCondition(
		expression.Key("pk").Equal(expression.Value(pk)).And(expression.Key("sk").BeginsWith(prefix))).Build()
	if err != nil {
		r.t.Fatal(err)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(r.table), KeyConditionExpression: e.KeyCondition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), ConsistentRead: aws.Bool(true)}
	var out []item
	for p := dynamodb.NewQueryPaginator(r.db, in); p.HasMorePages(); {
		page, err := p.NextPage(context.Background())
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, page.Items...)
	}
	return out
}

// checkModel fails the test when the table's tasks are not the model's: the application
// (this test) did not write what it meant to, and no expectation would mean anything.
func (r *appRig) checkModel(m model, projects []string) {
	r.t.Helper()
	var got, exp []string
	for _, p := range projects {
		for _, it := range r.query("PROJECT#"+p, "TASK#") {
			got = append(got, p+"#"+strings.TrimPrefix(it["sk"].(*types.AttributeValueMemberS).Value, "TASK#"))
		}
	}
	for k := range m {
		exp = append(exp, k)
	}
	slices.Sort(got)
	slices.Sort(exp)
	if !slices.Equal(got, exp) {
		r.t.Fatalf("test bug: the table holds tasks %v, the application model %v", got, exp)
	}
}

// checkNoFailures reports records sent to the on-failure destination, with the first
// on-failure record, and logs what the mapping did.
func (r *appRig) checkNoFailures() {
	r.t.Helper()
	st := r.p.Mapping.Stats()
	r.t.Logf("stream: %d records in %d batches, %d invocations, %d failed, %d retries, %d bisects, %d records to the on-failure destination",
		st.Records, st.Batches, st.Invocations, st.Failures, st.Retries, st.Bisects, st.OnFailure)
	files, err := os.ReadDir(r.failDir)
	if err != nil {
		r.t.Fatal(err)
	}
	if st.OnFailure == 0 && len(files) == 0 {
		return
	}
	first := ""
	if len(files) > 0 {
		b, _ := os.ReadFile(filepath.Join(r.failDir, files[0].Name()))
		first = "; the first:\n" + string(b)
	}
	r.t.Errorf("%d records went to the on-failure destination (%d batch files), want 0 (run with -v for the handler's reasons)%s",
		st.OnFailure, len(files), first)
}

// verify runs `denorm verify`'s engine over the table and reports any drift or item a rule
// cannot evaluate.
func (r *appRig) verify() {
	r.t.Helper()
	f, err := rules.Load(r.rules)
	if err != nil {
		r.t.Fatal(err)
	}
	ev, err := ops.NewEvaluator(f, "")
	if err != nil {
		r.t.Fatal(err)
	}
	rep, err := ops.Run(context.Background(), ops.Config{API: r.p.DB, Table: r.table, Eval: ev, Examples: 10})
	if err != nil {
		r.t.Fatal(err)
	}
	var buf bytes.Buffer
	_ = rep.WriteText(&buf)
	checked := int64(0)
	for _, rr := range rep.Rules {
		checked += rr.Checked
	}
	switch {
	case !rep.Clean():
		r.t.Errorf("denorm verify: %d drift, %d items no rule can evaluate, want none:\n%s", rep.Drift, rep.Problems, buf.String())
	case checked == 0:
		r.t.Errorf("denorm verify checked nothing:\n%s", buf.String())
	default:
		r.t.Logf("denorm verify: zero drift, %d targets checked over %d rules", checked, len(rep.Rules))
	}
}

// finish drains the stream and makes the checks every application test ends with.
func (r *appRig) finish(m model, projects []string, ws []want) {
	r.t.Helper()
	r.drain()
	r.checkModel(m, projects)
	r.checkCounters("after the stream drained", ws)
	r.checkNoFailures()
	r.verify()
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// setup writes the users and projects that exist before the test's writes and drains.
func (r *appRig) setup(users, projects []string) {
	r.t.Helper()
	var s []script
	for _, u := range users {
		s = append(s, script{r.put("put profile "+u, userItem(u, 0))})
	}
	for _, p := range projects {
		s = append(s, script{r.put("put project "+p, projectItem(p, 0))})
	}
	r.run(s...)
	r.drain()
}
