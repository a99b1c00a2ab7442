package workload

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The demo's workload pins files and moves them through folder-large-file-count's any by
// pinned alone: every update sets or removes something, and pinned is a boolean.
func TestSocialPinsFiles(t *testing.T) {
	pinned, unpinned, removed := 0, 0, 0
	for _, op := range Social(42, Demo) {
		if op.Put == nil && op.Del == nil && len(op.Set) == 0 && len(op.Remove) == 0 {
			t.Fatalf("an update that changes nothing: %v", op.Key)
		}
		for _, it := range []map[string]types.AttributeValue{op.Put, op.Set} {
			if b, ok := it["pinned"].(*types.AttributeValueMemberBOOL); ok && b.Value {
				pinned++
			} else if ok {
				unpinned++
			} else if it["pinned"] != nil {
				t.Fatalf("pinned of type %T", it["pinned"])
			}
		}
		for _, a := range op.Remove {
			if a == "pinned" {
				removed++
			}
		}
	}
	if pinned == 0 || unpinned == 0 || removed == 0 {
		t.Errorf("pinned true %d, false %d, removed %d", pinned, unpinned, removed)
	}
}
