package plan

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// TestOwnWrite: a MODIFY of a target is Denorm's only when its write count rose by exactly
// one and its watermark was neither lowered nor dropped.
func TestOwnWrite(t *testing.T) {
	firsts := func(it record.Item, wf, wl string) record.Item {
		if wf != "" {
			it[rules.FirstAttr] = &types.AttributeValueMemberN{Value: wf}
		}
		if wl != "" {
			it[rules.LastFirstAttr] = &types.AttributeValueMemberN{Value: wl}
		}
		return it
	}
	item := func(n, wm string) record.Item {
		it := record.Item{"pk": &types.AttributeValueMemberS{Value: "POST#p1"}}
		if n != "" {
			it[rules.WritesAttr] = &types.AttributeValueMemberN{Value: n}
		}
		if wm != "" {
			it[rules.WatermarkAttr] = &types.AttributeValueMemberN{Value: wm}
		}
		return it
	}
	for _, tc := range []struct {
		name     string
		old, new record.Item
		own      bool
	}{
		{"watermark write", item("4", "100"), item("5", "120"), true},
		{"marker write", item("4", ""), item("5", ""), true},
		{"first write to an unstamped target", item("", ""), item("1", "120"), true},
		{"count written back as read", item("4", "100"), item("4", "100"), false},
		{"count written back, lower", item("7", "100"), item("4", "90"), false},
		{"count dropped", item("4", "100"), item("", ""), false},
		{"count read before a wipe, one above now, watermark below", item("4", "100"), item("5", "50"), false},
		{"count one above now, watermark dropped", item("4", "100"), item("5", ""), false},
		{"count raised by two", item("4", "100"), item("6", "120"), false},
		{"count not a number", item("4", "100"), record.Item{rules.WritesAttr: &types.AttributeValueMemberS{Value: "5"}}, false},
		{"delta write", firsts(item("1", "442"), "422", "422"), firsts(item("2", "480"), "422", "450"), true},
		{"first delta write since the application's", item("", ""), firsts(item("1", "442"), "422", "422"), true},
		{"fold of records below the first", firsts(item("2", "442"), "422", "430"), firsts(item("3", "442"), "356", "356"), true},
		{"fold of records above the first", firsts(item("2", "442"), "422", "430"), firsts(item("3", "442"), "422", "425"), true},
		{"repair", firsts(item("2", "442"), "422", "430"), firsts(item("3", "442"), "422", "430"), true},
		{"read in an earlier incarnation, one above now, same watermark", firsts(item("1", "442"), "422", "422"), firsts(item("2", "442"), "356", "422"), false},
		{"first mark dropped", firsts(item("1", "442"), "422", "422"), firsts(item("2", "442"), "", ""), false},
	} {
		if got := ownWrite(tc.old, tc.new); got != tc.own {
			t.Errorf("%s: ownWrite = %v, want %v", tc.name, got, tc.own)
		}
	}
}

// A fold's write moves parked deltas no image held: a restore following Denorm's writes
// after a replacement takes none of it for a repeat, and it is told from the others by
// _dn_fd equal to the write count it leaves.
func TestFollowPassesOverFolds(t *testing.T) {
	item := func(n, wm, fd, count string) record.Item {
		it := record.Item{rules.WritesAttr: &types.AttributeValueMemberN{Value: n}, rules.WatermarkAttr: &types.AttributeValueMemberN{Value: wm},
			rules.FirstAttr: &types.AttributeValueMemberN{Value: "100"}, rules.LastFirstAttr: &types.AttributeValueMemberN{Value: "100"},
			"commentCount": &types.AttributeValueMemberN{Value: count}}
		if fd != "" {
			it[rules.FoldAttr] = &types.AttributeValueMemberN{Value: fd}
		}
		return it
	}
	r := &rules.CompiledRule{Rule: rules.Rule{Name: "c", Agg: &rules.Aggregate{Attribute: "commentCount"}}, Watermark: true}
	self := Key{PK: "POST#p1", SK: "METADATA"}
	fold := ownRecord(self, []*rules.CompiledRule{r}, item("1", "120", "", "1"), item("2", "120", "2", "3"))
	delta := ownRecord(self, []*rules.CompiledRule{r}, item("2", "120", "2", "3"), item("3", "120", "2", "4"))
	if fold == nil || !fold.Fold || delta == nil || delta.Fold {
		t.Fatalf("fold %+v, delta %+v: want the first a fold, the second not", fold, delta)
	}
	rep := &Replacement{OldWM: "150", NewWM: "120", NewN: 1}
	s, straddle := rep.Follow([]*OwnWrite{fold, delta})
	if s == nil || straddle || s.Repeats["commentCount"].String() != "1" {
		t.Fatalf("Follow = %+v, %v; want repeats of 1 (the delta write's), none of the fold's 2", s, straddle)
	}
}
