package ops

import (
	"testing"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// sparseYAML has a Task whose assignee index keys may be absent: an unassigned task is
// still a Task, counted in its project and in no user.
const sparseYAML = `version: 1
entities:
  Project: {pk: "PROJECT#{projectId}", sk: METADATA, attributes: [taskCount]}
  User:    {pk: "USER#{assigneeId}", sk: PROFILE, attributes: [taskCount]}
  Task:
    pk: "PROJECT#{projectId}"
    sk: "TASK#{taskId}"
    gsi1pk: "USER#{assigneeId}"
    gsi1sk: "TASK#{taskId}"
    sparse: [gsi1pk, gsi1sk]
rules:
  - name: project-tasks
    count: {of: Task, into: Project, attribute: taskCount}
  - name: user-tasks
    count: {of: Task, into: User, attribute: taskCount}
`

func TestObserveSparse(t *testing.T) {
	f, err := rules.Parse("sparse.yaml", []byte(sparseYAML))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	w, exp := ev.NewWorker(), ev.NewExpected()
	for _, it := range []record.Item{
		{"pk": S("PROJECT#p1"), "sk": S("TASK#t1"), "gsi1pk": S("USER#u1"), "gsi1sk": S("TASK#t1")},
		{"pk": S("PROJECT#p1"), "sk": S("TASK#t2")}, // unassigned
	} {
		if got := w.entity(it); got != "Task" {
			t.Errorf("entity(%v) = %q, want Task", it, got)
		}
		if probs := w.Observe(it, ev.All(), exp); len(probs) > 0 {
			t.Errorf("Observe: %v", probs)
		}
	}
	proj, user := ruleIndex(t, ev, "project-tasks"), ruleIndex(t, ev, "user-tasks")
	if got := exp.Totals[proj][key("PROJECT#p1", "METADATA")].String(); got != "2" {
		t.Errorf("project total = %s, want 2", got)
	}
	if got := exp.Totals[user]; len(got) != 1 || got[key("USER#u1", "PROFILE")].String() != "1" {
		t.Errorf("user totals = %v, want USER#u1: 1", got)
	}
}
