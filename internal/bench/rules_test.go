package bench

import (
	"strings"
	"testing"
)

// Above ParallelizationFactor 1 the bench runs counts and sums across partitions in
// transaction mode, and refuses a rule left in watermark mode (a counter in its sources'
// partition keeps it whatever exactlyOnce says): Lambda orders records per item there, not
// per partition.
func TestRuleSubsetPerItem(t *testing.T) {
	_, set, err := ruleSubset("../../rules/social.yaml", []string{"global-post-count", "user-post-count"}, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, cr := range set.Compiled() {
		if cr.Watermark || cr.Relay {
			t.Errorf("rule %s is in watermark or relay mode above factor 1", cr.Name)
		}
	}
	_, _, err = ruleSubset("../../rules/social.yaml", []string{"post-comment-count"}, true, 0)
	if err == nil || !strings.Contains(err.Error(), "rule post-comment-count needs its partition's records in one order") {
		t.Errorf("a counter in its sources' partition above factor 1: error %v", err)
	}
}

// hot-target-unsplit runs the global post count with its state in one state item, and
// hot-target as rules/social.yaml splits it.
func TestRuleSubsetSplit(t *testing.T) {
	for split, want := range map[int]int{0: 4, 1: 0} {
		_, set, err := ruleSubset("../../rules/social.yaml", []string{"global-post-count"}, true, split)
		if err != nil {
			t.Fatal(err)
		}
		if got := set.Split("STATS#global", "STATS"); got != want {
			t.Errorf("split %d: STATS#global has %d parts, want %d", split, got, want)
		}
	}
}
