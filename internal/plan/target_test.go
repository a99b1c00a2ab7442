package plan_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// What a record of a count target asks for: a refresh of its copy when the application
// inserted it or changed the copy, nothing for Denorm's own copy writes or for writes that
// leave the copy alone.
func TestTargetRecords(t *testing.T) {
	set := socialSet(t)
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	post := func(title string, extra ...any) record.Item {
		it := record.Item{"pk": &types.AttributeValueMemberS{Value: "POST#p1"}, "sk": &types.AttributeValueMemberS{Value: "METADATA"},
			"userId": &types.AttributeValueMemberS{Value: "u1"}, "title": &types.AttributeValueMemberS{Value: title},
			"status": &types.AttributeValueMemberS{Value: "draft"}, "createdAt": &types.AttributeValueMemberS{Value: "2026-11-01T00:00:00Z"}}
		for i := 0; i+1 < len(extra); i += 2 {
			it[extra[i].(string)] = extra[i+1].(types.AttributeValue)
		}
		return it
	}
	cv := rules.CopyVersionAttr
	for _, tc := range []struct {
		name     string
		op       record.Op
		old, new record.Item
		refresh  bool
	}{
		{"inserted without counters", record.Insert, nil, post("a"), true},
		{"inserted with a copy it kept", record.Insert, nil, post("a", "commentCount", n("3"), cv, n("7")), true},
		{"Denorm's copy write", record.Modify, post("a", "commentCount", n("3"), cv, n("7")), post("a", "commentCount", n("4"), cv, n("8")), false},
		{"Denorm's copy write of the same values", record.Modify, post("a", "commentCount", n("3"), cv, n("7")), post("a", "commentCount", n("3"), cv, n("9")), false},
		{"title changed, copy kept", record.Modify, post("a", "commentCount", n("3"), cv, n("7")), post("b", "commentCount", n("3"), cv, n("7")), false},
		{"stale form saved back", record.Modify, post("a", "commentCount", n("4"), cv, n("8")), post("b", "commentCount", n("3"), cv, n("7")), true},
		{"stale copy put back, nothing else changed", record.Modify, post("a", "commentCount", n("4"), cv, n("8")), post("a", "commentCount", n("3"), cv, n("7")), true},
		{"whole item put without the copy", record.Modify, post("a", "commentCount", n("4"), cv, n("8")), post("b"), true},
		{"counter SET by the application", record.Modify, post("a", "commentCount", n("4"), cv, n("8")), post("a", "commentCount", n("0"), cv, n("8")), true},
		{"copy written onto an item without a version", record.Modify, post("a"), post("a", "commentCount", n("2"), cv, n("5")), true},
		{"copy version raised along with another attribute", record.Modify, post("a", "commentCount", n("3"), cv, n("7")), post("b", "commentCount", n("4"), cv, n("8")), true},
		{"deleted", record.Remove, post("a", "commentCount", n("3"), cv, n("7")), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := tc.new
			if img == nil {
				img = tc.old
			}
			c := record.Change{EventID: "e1", Seq: "100", Op: tc.op, Old: tc.old, New: tc.new,
				Keys: record.Item{"pk": img["pk"], "sk": img["sk"]}}
			rp, err := plan.New(set).Plan(&c)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(rp.Refreshes) > 0; got != tc.refresh {
				t.Fatalf("refresh %v, want %v (%+v)", got, tc.refresh, rp.Refreshes)
			}
			if tc.refresh && (rp.Refreshes[0].Target != plan.Key{PK: "POST#p1", SK: "METADATA"} || len(rp.Refreshes[0].Attrs) != 1 || rp.Refreshes[0].Attrs[0] != "commentCount") {
				t.Errorf("refresh %+v, want POST#p1 / METADATA commentCount", rp.Refreshes[0])
			}
		})
	}
}
