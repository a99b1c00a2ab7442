package plan

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
)

// The application's write of a split target and a part's record in one batch are one
// refresh: a copy whatever the target shows, with the image the application wrote (its copy
// version, which a copy may have to go over), failing at the earlier record so that a retry
// brings that image back.
func TestRefreshOfAPartAndTheTargetMerge(t *testing.T) {
	k := Key{PK: "STATS#global", SK: "STATS"}
	seen := record.Item{"postCount": &types.AttributeValueMemberN{Value: "0"}, "_dn_cv": &types.AttributeValueMemberN{Value: "99"}}
	for name, recs := range map[string][]RecordPlan{
		"target, then part": {{Refreshes: []Refresh{{Target: k, Attrs: []string{"postCount"}, Seen: seen}}}, {Refreshes: []Refresh{{Target: k, Copy: true}}}},
		"part, then target": {{Refreshes: []Refresh{{Target: k, Copy: true}}}, {Refreshes: []Refresh{{Target: k, Attrs: []string{"postCount"}, Seen: seen}}}},
	} {
		b := Coalesce(recs)
		if len(b.Refreshes) != 1 {
			t.Fatalf("%s: %d refreshes, want 1", name, len(b.Refreshes))
		}
		g := b.Refreshes[0]
		if g.Rec != 0 || !g.Copy || g.Seen == nil || len(g.Attrs) != 1 {
			t.Errorf("%s: rec %d, copy %v, seen %v, attrs %v; want record 0, a copy, the target's image and its attributes", name, g.Rec, g.Copy, g.Seen != nil, g.Attrs)
		}
	}
}
