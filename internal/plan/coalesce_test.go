package plan

import (
	"testing"

	"github.com/denorm/denorm/internal/rules"
)

// TestPullsOfRemovedItemsDropped: a pull whose item a later record of the batch deletes is
// dropped (its write could only be refused); one for an item put again after the delete
// stays.
func TestPullsOfRemovedItemsDropped(t *testing.T) {
	r := &rules.CompiledRule{}
	k := Key{PK: "GROUP#g1", SK: "USER#u1"}
	insert := RecordPlan{Op: "INSERT", PK: k.PK, SK: k.SK, Pulls: []Pull{{Rule: r, Target: k}}}
	remove := RecordPlan{Op: "REMOVE", PK: k.PK, SK: k.SK}
	other := RecordPlan{Op: "REMOVE", PK: k.PK, SK: "USER#u2"}
	for _, tc := range []struct {
		name  string
		recs  []RecordPlan
		pulls int
	}{
		{"inserted", []RecordPlan{insert}, 1},
		{"inserted, then deleted", []RecordPlan{insert, remove}, 0},
		{"inserted, another item deleted", []RecordPlan{insert, other}, 1},
		{"deleted, then inserted", []RecordPlan{remove, insert}, 1},
		{"inserted, deleted, inserted again", []RecordPlan{insert, remove, insert}, 1},
	} {
		if got := len(Coalesce(tc.recs).Pulls); got != tc.pulls {
			t.Errorf("%s: %d pulls, want %d", tc.name, got, tc.pulls)
		}
	}
}
