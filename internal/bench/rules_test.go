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
	_, set, err := ruleSubset("../../rules/social.yaml", []string{"global-post-count", "user-post-count"}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, cr := range set.Compiled() {
		if cr.Watermark || cr.Relay {
			t.Errorf("rule %s is in watermark or relay mode above factor 1", cr.Name)
		}
	}
	_, _, err = ruleSubset("../../rules/social.yaml", []string{"post-comment-count"}, true)
	if err == nil || !strings.Contains(err.Error(), "rule post-comment-count needs its partition's records in one order") {
		t.Errorf("a counter in its sources' partition above factor 1: error %v", err)
	}
}
