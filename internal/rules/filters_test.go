package rules

import (
	"reflect"
	"testing"
)

// A count target that is the source of no rule (a user profile counting its tasks) must
// still reach the function: Denorm restores its counter when the application overwrites
// it, and folds in the deltas parked while it was missing. Found by an end-to-end test
// whose profile records were filtered out.
func TestFilterPatternsLetCountTargetsThrough(t *testing.T) {
	set, err := ParseSet("t.yaml", []byte(`version: 1
entities:
  User: {pk: "USER#{assigneeId}", sk: PROFILE, attributes: [taskCount]}
  Task: {pk: "PROJECT#{projectId}", sk: "TASK#{taskId}", attributes: [assigneeId]}
rules:
  - name: user-task-count
    count: {of: Task, into: User, attribute: taskCount}
`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := set.FilterPatterns()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"PROJECT#"},{"prefix":"USER#"},{"prefix":"_dn#job#"},{"prefix":"_dn#probe#"},{"prefix":"_dn#r#"}]}}}}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FilterPatterns = %q\nwant %q", got, want)
	}
}
