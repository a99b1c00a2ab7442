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

// A split count's parts reach the function (their records copy the target) and its
// relay items do not exist (split runs in transaction mode); state items never pass.
func TestFilterPatternsLetSplitPartsThrough(t *testing.T) {
	set, err := ParseSet("t.yaml", []byte(`version: 1
table: {partitionKey: pk, sortKey: sk, localIndexes: [{name: lsi1, sortKey: lsi1sk}]}
entities:
  Stats: {pk: "STATS#{scope}", sk: STATS, attributes: [postCount]}
  Post: {pk: "POST#{postId}", sk: POST, attributes: [scope]}
rules:
  - name: global-post-count
    count: {of: Post, into: Stats, attribute: postCount, split: 8}
`))
	if err != nil {
		t.Fatal(err)
	}
	if n := set.Split("STATS#global", "STATS"); n != 8 {
		t.Errorf("Split(STATS#global) = %d, want 8", n)
	}
	if n := set.Split("POST#p1", "POST"); n != 0 {
		t.Errorf("Split(POST#p1) = %d, want 0", n)
	}
	got, err := set.FilterPatterns()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"POST#"},{"prefix":"STATS#"},{"prefix":"_dn#h#"},{"prefix":"_dn#job#"},{"prefix":"_dn#probe#"}]}}}}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FilterPatterns = %q\nwant %q", got, want)
	}
}
