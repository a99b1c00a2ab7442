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
