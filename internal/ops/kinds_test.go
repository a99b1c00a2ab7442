package ops

import (
	"testing"

	"github.com/denorm/denorm/internal/rules"
)

// Verify, backfill and repair handle every rule kind: a kind added to rules.Kinds without
// its cases here fails this test, and NewEvaluatorFor refuses a rule of it rather than
// checking and repairing it as another kind.
func TestOpsHandleEveryKind(t *testing.T) {
	for _, k := range rules.Kinds {
		if !handled[k] {
			t.Errorf("rule kind %q: verify, backfill and repair have no case for it (expect.go, check.go, repair.go)", k)
		}
	}
}
