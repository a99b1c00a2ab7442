package tests

// What real applications do to a table, through the local pipeline (the same path as
// `denorm local`: the event source mapping emulator and the real handler) on DynamoDB Local:
// a project tracker (testdata/projects.yaml) written by concurrent clients with the plain
// SDK. Each test ends with the stream drained, its counters read back and compared with what
// the application wrote, nothing in the on-failure destination and `denorm verify` clean.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/ddbtest"
)

// target is an item holding counters that the application also edits.
type target struct {
	what       string
	key        item
	whole      func(edit int) item // the item as the application saves it whole
	count, sum string
}

func userTarget(u string) target {
	return target{"profile " + u, userKey(u), func(e int) item { return userItem(u, e) }, "taskCount", "assignedPoints"}
}

func projectTarget(p string) target {
	return target{"project " + p, projectKey(p), func(e int) item { return projectItem(p, e) }, "taskCount", "totalPoints"}
}

// replacement is one way an application overwrites the counters of an item.
type replacement struct {
	name  string
	steps func(r *appRig, tg target, edit int) []step
}

func setTo0(attr string) expression.UpdateBuilder {
	return expression.Set(expression.Name(attr), expression.Value(0))
}

var replacements = []replacement{
	{"PutItem of the whole item without counters", func(r *appRig, tg target, e int) []step {
		return []step{r.put("put "+tg.what+" without counters", tg.whole(e))}
	}},
	{"PutItem with wrong counters", func(r *appRig, tg target, e int) []step {
		it := tg.whole(e)
		it[tg.count], it[tg.sum] = num(999), num(-7)
		return []step{r.put("put "+tg.what+" with wrong counters", it)}
	}},
	{"UpdateItem SET count = 0", func(r *appRig, tg target, _ int) []step {
		return []step{r.update("set "+tg.what+" "+tg.count+" = 0", tg.key, setTo0(tg.count))}
	}},
	{"UpdateItem REMOVE sum", func(r *appRig, tg target, _ int) []step {
		return []step{r.update("remove "+tg.what+" "+tg.sum, tg.key, expression.Remove(expression.Name(tg.sum)))}
	}},
	{"DeleteItem then PutItem at once", func(r *appRig, tg target, e int) []step {
		return []step{r.del("delete "+tg.what, tg.key), r.put("put "+tg.what+" again", tg.whole(e))}
	}},
	{"UpdateItem SET sum = 0", func(r *appRig, tg target, _ int) []step {
		return []step{r.update("set "+tg.what+" "+tg.sum+" = 0", tg.key, setTo0(tg.sum))}
	}},
	{"UpdateItem REMOVE count", func(r *appRig, tg target, _ int) []step {
		return []step{r.update("remove "+tg.what+" "+tg.count, tg.key, expression.Remove(expression.Name(tg.count)))}
	}},
}

// taskScript is the life of task i in the tests that move tasks around: inserted, given
// new points (i%5 == 0), reassigned (i%9 == 0), deleted (i%7 is 3 or 5, which spreads
// deletes over every project and user). It updates m to the task's final state.
func (r *appRig) taskScript(m model, i int, projects, users []string) script {
	t := &task{project: projects[i%len(projects)], id: fmt.Sprintf("t%03d", i), assignee: users[(i/3)%len(users)],
		title: fmt.Sprintf("Task %d", i), points: 1 + i%5}
	s := script{r.jitter(20 * time.Millisecond), r.put("insert task "+t.id, t.item(false))}
	if i%5 == 0 {
		t.points += 3
		s = append(s, r.jitter(10*time.Millisecond), r.update("new points for "+t.id, t.key(), expression.Set(expression.Name("points"), expression.Value(t.points))))
	}
	if i%9 == 0 {
		t.assignee = users[(i/3+1)%len(users)]
		s = append(s, r.update("reassign "+t.id, t.key(), expression.Set(expression.Name("assigneeId"), expression.Value(t.assignee))))
	}
	m.add(t)
	if i%7 == 3 || i%7 == 5 {
		s = append(s, r.jitter(10*time.Millisecond), r.del("delete task "+t.id, t.key()))
		m.drop(t)
	}
	return s
}

// 1. The application replaces the items that hold counters: a profile editor saving every
// field (no counters, no _dn attributes), a save with wrong counter values, SET counter = 0,
// REMOVE counter, a delete followed at once by a put. Same-partition (project) and
// cross-partition (profile) counters and sums, while other clients insert, update and
// delete tasks. Once the stream drains, every counter equals what its tasks add up to.
func TestAppReplacesCounterTargets(t *testing.T) {
	r := startApp(t, projectRules)
	users, projects := ids("u", 4), ids("p", 4)
	r.setup(users, projects)
	var targets []target
	for _, u := range users {
		targets = append(targets, userTarget(u))
	}
	for _, p := range projects {
		targets = append(targets, projectTarget(p))
	}

	m := model{}
	var tasks []script
	for i := range 96 {
		tasks = append(tasks, r.taskScript(m, i, projects, users))
	}
	// Every target goes through every replacement while the tasks are written.
	var edits []script
	for i, tg := range targets {
		var s script
		for k := range replacements {
			s = append(s, r.jitter(100*time.Millisecond))
			s = append(s, replacements[(i+k)%len(replacements)].steps(r, tg, k+1)...)
		}
		edits = append(edits, s)
	}
	ws := counterWants(m, projects, users, true)
	for _, w := range ws {
		if w.value == 0 {
			t.Fatalf("test bug: %s %s would end at 0, which an overwritten counter may hold by chance", w.pk, w.attr)
		}
	}
	r.run(append(edits, r.shuffled(tasks)...)...)
	r.drain()
	r.checkCounters("after the concurrent writes", ws)

	// Then replacements that nothing follows, two rounds: over both, every kind is the last
	// write of some profile and of some project.
	for round := range 2 {
		var s []script
		var done []string
		for i, tg := range targets {
			rp := replacements[(i+4*round)%len(replacements)]
			s = append(s, rp.steps(r, tg, 10+round))
			done = append(done, tg.what+": "+rp.name)
		}
		r.run(s...)
		t.Logf("final replacements, round %d: %s", round+1, strings.Join(done, "; "))
		if round == 0 {
			r.drain()
			r.checkCounters("after final replacements round 1", ws)
		}
	}
	r.finish(m, projects, ws)
}

// 2. Targets that appear after their sources (missingTarget: skip): tasks are assigned to
// users and filed in a project whose items are written a second later, some while more
// tasks arrive, one after everything else. Their counters must be right without a repair.
func TestAppTargetsWrittenAfterTheirTasks(t *testing.T) {
	r := startApp(t, projectRules)
	users, projects := ids("u", 3), ids("p", 3)
	r.setup(nil, projects[:2]) // no profiles, no project p2 yet
	m := model{}

	var first []script
	for i := range 60 {
		first = append(first, r.taskScript(m, i, projects, users))
	}
	r.run(r.shuffled(first)...)
	r.drain() // every delta for u0..u2 and p2 has met a missing target
	time.Sleep(time.Second)

	// u0, u1 and p2 appear while more tasks are written and some earlier ones deleted.
	later := []script{
		{r.put("put profile u0", userItem("u0", 0))},
		{r.jitter(30 * time.Millisecond), r.put("put profile u1", userItem("u1", 0))},
		{r.jitter(30 * time.Millisecond), r.put("put project p2", projectItem("p2", 0))},
	}
	for i := 60; i < 90; i++ {
		later = append(later, r.taskScript(m, i, projects, users))
	}
	for i := 0; i < 60; i += 7 {
		if tk := m[fmt.Sprintf("%s#t%03d", projects[i%3], i)]; tk != nil {
			later = append(later, script{r.jitter(30 * time.Millisecond), r.del("delete task "+tk.id, tk.key())})
			m.drop(tk)
		}
	}
	r.run(later...)
	time.Sleep(time.Second)
	r.run(script{r.put("put profile u2", userItem("u2", 0))})
	r.finish(m, projects, counterWants(m, projects, users, true))
}

// 3. A parent attribute removed or never set: REMOVE assigneeId on a counted task leaves
// its user's count and counts nowhere, and its mirror on the user's page goes; a task
// inserted without an assignee counts for no user and has no such mirror; both still count
// in their project. No record may end in the on-failure destination.
func TestAppParentAttributeRemoved(t *testing.T) {
	r := startApp(t, projectRules)
	users, projects := ids("u", 2), ids("p", 2)
	r.setup(users, projects)
	m := model{}
	unassign := func(tk *task) step {
		tk.assignee = ""
		return r.update("unassign "+tk.id, tk.key(), expression.Remove(expression.Name("assigneeId")))
	}

	var s []script
	for i := range 48 {
		tk := &task{project: projects[i%2], id: fmt.Sprintf("t%03d", i), assignee: users[(i/2)%2], title: fmt.Sprintf("Task %d", i), points: 1 + i%3}
		var sc script
		switch i % 4 {
		case 0: // assigned, stays
			sc = script{r.put("insert task "+tk.id, tk.item(false))}
		case 1: // assigned, unassigned, sometimes deleted
			sc = script{r.put("insert task "+tk.id, tk.item(false)), r.jitter(20 * time.Millisecond), unassign(tk)}
		case 2: // never assigned, sometimes retitled or deleted
			tk.assignee = ""
			sc = script{r.put("insert unassigned task "+tk.id, tk.item(false))}
			if i%8 == 2 {
				tk.title += " (renamed)"
				sc = append(sc, r.update("retitle "+tk.id, tk.key(), expression.Set(expression.Name("title"), expression.Value(tk.title))))
			}
		case 3: // assigned, unassigned, assigned to the other user
			sc = script{r.put("insert task "+tk.id, tk.item(false)), r.jitter(20 * time.Millisecond), unassign(tk)}
			tk.assignee = users[(i/2+1)%2]
			sc = append(sc, r.jitter(20*time.Millisecond),
				r.update("reassign "+tk.id, tk.key(), expression.Set(expression.Name("assigneeId"), expression.Value(tk.assignee))))
		}
		m.add(tk)
		if i%8 >= 5 {
			sc = append(sc, r.jitter(20*time.Millisecond), r.del("delete task "+tk.id, tk.key()))
			m.drop(tk)
		}
		s = append(s, sc)
	}
	r.run(r.shuffled(s)...)
	r.drain()
	r.checkAssignedMirrors(m, users)
	r.finish(m, projects, counterWants(m, projects, users, true))
}

// checkAssignedMirrors compares each user's page (rule assigned-tasks) with the tasks
// assigned to them: a task that lost its assignee has no mirror anywhere.
func (r *appRig) checkAssignedMirrors(m model, users []string) {
	r.t.Helper()
	for _, u := range users {
		var got, exp []string
		for _, it := range r.query("USER#"+u, "TASK#") {
			got = append(got, strings.TrimPrefix(it["sk"].(*types.AttributeValueMemberS).Value, "TASK#"))
		}
		for k, tk := range m {
			if tk.assignee == u {
				exp = append(exp, k)
			}
		}
		if extra, missing := diff(got, exp); len(extra)+len(missing) > 0 {
			r.t.Errorf("rule \"assigned-tasks\": USER#%s holds mirrors of tasks not assigned to %s %v and lacks mirrors of %v", u, u, extra, missing)
		}
	}
}

// diff returns what got has and want lacks, and what want has and got lacks.
func diff(got, want []string) (extra, missing []string) {
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return extra, missing
}

// 4. Sparse index keys (projects-sparse.yaml): the assignee is gsi1pk, listed as sparse, so
// a task matches Task with or without it. Unassigning (REMOVE gsi1pk, gsi1sk) leaves the task
// counted in its project and its card in place; it only stops counting for its user.
// Unassigned tasks can be retitled, deleted and assigned later.
func TestAppSparseAssigneeKey(t *testing.T) {
	r := startApp(t, sparseRules) // fails here while the rules language has no `sparse`
	users, projects := ids("u", 2), ids("p", 2)
	r.setup(users, projects)
	m := model{}
	assignKeys := func(tk *task) expression.UpdateBuilder {
		return expression.Set(expression.Name("gsi1pk"), expression.Value("USER#"+tk.assignee)).
			Set(expression.Name("gsi1sk"), expression.Value("TASK#"+tk.project+"#"+tk.id))
	}

	var s []script
	for i := range 48 {
		tk := &task{project: projects[i%2], id: fmt.Sprintf("t%03d", i), assignee: users[(i/2)%2], title: fmt.Sprintf("Task %d", i), points: 1 + i%4}
		var sc script
		switch {
		case i%6 == 5: // inserted unassigned; half of them assigned later, the rest retitled
			tk.assignee = ""
			sc = script{r.put("insert unassigned task "+tk.id, tk.item(true)), r.jitter(20 * time.Millisecond)}
			if i%12 == 11 {
				tk.assignee = "u1"
				sc = append(sc, r.update("assign "+tk.id, tk.key(), assignKeys(tk)))
			} else {
				tk.title += " (renamed)"
				sc = append(sc, r.update("retitle "+tk.id, tk.key(), expression.Set(expression.Name("title"), expression.Value(tk.title))))
			}
		case i%3 == 0: // assigned, then unassigned; then retitled or deleted
			sc = script{r.put("insert task "+tk.id, tk.item(true)), r.jitter(20 * time.Millisecond),
				r.update("unassign "+tk.id, tk.key(), expression.Remove(expression.Name("gsi1pk")).
					Remove(expression.Name("gsi1sk")).Remove(expression.Name("assigneeName")))}
			tk.assignee = ""
			if i%9 != 0 {
				tk.title += " (backlog)"
				sc = append(sc, r.jitter(20*time.Millisecond),
					r.update("retitle "+tk.id, tk.key(), expression.Set(expression.Name("title"), expression.Value(tk.title))))
			}
		default: // assigned, stays
			sc = script{r.put("insert task "+tk.id, tk.item(true))}
		}
		m.add(tk)
		if i%9 == 0 {
			sc = append(sc, r.jitter(20*time.Millisecond), r.del("delete task "+tk.id, tk.key()))
			m.drop(tk)
		}
		s = append(s, sc)
	}
	r.run(r.shuffled(s)...)
	r.drain()
	r.checkCards(m, 48, projects)
	r.finish(m, projects, counterWants(m, projects, users, false))
}

// checkCards checks rule task-card: every task has its card with its current title, a
// deleted task has none.
func (r *appRig) checkCards(m model, n int, projects []string) {
	r.t.Helper()
	for i := range n {
		p, id := projects[i%len(projects)], fmt.Sprintf("t%03d", i)
		card := r.get(item{"pk": str("TASK#" + id), "sk": str("PROJECT#" + p)})
		tk := m[p+"#"+id]
		switch {
		case tk == nil && card != nil:
			r.t.Errorf("rule \"task-card\": deleted task %s/%s still has its card", p, id)
		case tk == nil:
		case card == nil:
			r.t.Errorf("rule \"task-card\": task %s/%s (assigned to %q) has no card", p, id, tk.assignee)
		default:
			if got, _ := card["title"].(*types.AttributeValueMemberS); got == nil || got.Value != tk.title {
				r.t.Errorf("rule \"task-card\": card of task %s/%s (assigned to %q) has title %v, want %q", p, id, tk.assignee, card["title"], tk.title)
			}
		}
	}
}

// 5. REMOVE records without an OldImage: several clients delete the same task at once,
// and DynamoDB Local writes a REMOVE with no OldImage for each client after the first. They
// change nothing; none may end in the on-failure destination, and the counters stay right.
func TestAppConcurrentDeletesOfOneTask(t *testing.T) {
	r := startApp(t, projectRules)
	users, projects := ids("u", 2), ids("p", 2)
	r.setup(users, projects)
	m := model{}
	var s []script
	mk := func(i int) *task {
		return &task{project: projects[i%2], id: fmt.Sprintf("t%03d", i), assignee: users[(i/2)%2], title: fmt.Sprintf("Task %d", i), points: 1 + i%5}
	}
	for i := range 40 {
		tk := mk(i)
		s = append(s, script{r.put("insert task "+tk.id, tk.item(false))})
		m.add(tk)
	}
	r.run(s...)
	r.drain()

	// Waves of 3 tasks, each deleted by 4 clients released together, while 2 more clients
	// insert new tasks: 14 requests at once.
	const deleters = 4
	ctx := context.Background()
	var mu sync.Mutex
	var errs []string
	next := 40
	for w := 0; w < 30; w += 3 {
		start := make(chan struct{})
		var wg sync.WaitGroup
		do := func(what string, f func() error) {
			wg.Go(func() {
				<-start
				if err := f(); err != nil {
					mu.Lock()
					errs = append(errs, what+": "+err.Error())
					mu.Unlock()
				}
			})
		}
		for i := w; i < w+3; i++ {
			tk := m[fmt.Sprintf("%s#t%03d", projects[i%2], i)]
			m.drop(tk)
			for c := range deleters {
				do(fmt.Sprintf("client %d deleting %s", c, tk.id), func() error {
					_, err := r.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(r.table), Key: tk.key()})
					return err
				})
			}
		}
		for range 2 {
			tk := mk(next)
			next++
			m.add(tk)
			do("inserting "+tk.id, func() error {
				_, err := r.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: tk.item(false)})
				return err
			})
		}
		close(start)
		wg.Wait()
	}
	if len(errs) > 0 {
		t.Fatalf("application requests failed:\n%s", strings.Join(errs, "\n"))
	}
	r.drain()

	// The case under test must have happened: count the REMOVEs that came without OldImage.
	_, streams := ddbtest.Clients(t)
	removes, bare := 0, 0
	for _, rec := range ddbtest.NewStreamReader(t, streams, r.p.StreamARN).Read(0) {
		sk, _ := rec.Dynamodb.Keys["sk"].(*stypes.AttributeValueMemberS)
		if rec.EventName == stypes.OperationTypeRemove && sk != nil && strings.HasPrefix(sk.Value, "TASK#") {
			removes++
			if rec.Dynamodb.OldImage == nil {
				bare++
			}
		}
	}
	t.Logf("the stream holds %d task REMOVE records for 30 deleted tasks, %d without OldImage", removes, bare)
	if bare == 0 {
		t.Errorf("precondition: DynamoDB Local wrote no REMOVE record without OldImage for %d concurrent deletes; the test did not exercise the case", 30*deleters)
	}
	r.finish(m, projects, counterWants(m, projects, users, true))
}
