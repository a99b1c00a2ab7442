package record

import (
	"strings"
	"testing"
)

// A position of a later epoch is above every position of an earlier one, whatever the
// sequence numbers; within an epoch positions keep the order of sequence numbers, and
// epoch 0 leaves them as they are (the guards written before epochs existed).
func TestPosition(t *testing.T) {
	must := func(epoch int, seq string) string {
		t.Helper()
		p, err := Position(epoch, seq)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got := must(0, "000000000000000000042"); got != "42" {
		t.Errorf("epoch 0: %s, want 42", got)
	}
	if got := must(1, "7"); got != "1000000000000000000000000000000000007" {
		t.Errorf("epoch 1: %s", got)
	}
	big := strings.Repeat("9", 36)
	ordered := []string{must(0, "5"), must(0, big), must(1, "1"), must(1, "2"), must(1, big), must(2, "0"), must(MaxEpoch, big)}
	for i := 1; i < len(ordered); i++ {
		if CompareSeq(ordered[i-1], ordered[i]) >= 0 {
			t.Errorf("%s is not below %s", ordered[i-1], ordered[i])
		}
	}
	if len(must(MaxEpoch, big)) != 38 {
		t.Errorf("the last position has %d digits, want 38 (a DynamoDB number's precision)", len(must(MaxEpoch, big)))
	}
	for _, bad := range []struct {
		epoch int
		seq   string
	}{{1, strings.Repeat("1", 37)}, {MaxEpoch + 1, "1"}, {-1, "1"}} {
		if _, err := Position(bad.epoch, bad.seq); err == nil {
			t.Errorf("Position(%d, %s): no error", bad.epoch, bad.seq)
		}
	}
}
