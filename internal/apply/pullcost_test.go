package apply

import "testing"

// The estimate reads first once a fifth of recent pulls were refused, and stops again
// after a run of pulls that land.
func TestPullCostFollowsTheRefusals(t *testing.T) {
	var c pullCost
	if c.readFirst() {
		t.Fatal("reads first with nothing observed")
	}
	c.observe(Stats{Pulls: 5, PullsRefused: 4})
	if c.readFirst() {
		t.Error("reads first after 9 pulls, fewer than the sample it needs")
	}
	c.observe(Stats{Pulls: 8, PullsRefused: 1})
	if !c.readFirst() {
		t.Errorf("writes blind with %.1f of %.1f recent pulls refused", c.refused, c.pulls)
	}
	// Reading, the refusals are seen as skipped pulls: the estimate holds.
	c.observe(Stats{PullsSkipped: 6, Pulls: 6})
	if !c.readFirst() {
		t.Errorf("stopped reading with %.1f of %.1f recent pulls refused or skipped", c.refused, c.pulls)
	}
	n := 0
	for c.readFirst() {
		c.observe(Stats{Pulls: 20})
		if n++; n > 10 {
			t.Fatalf("still reading first after %d batches of pulls that all landed (%.1f of %.1f)", n, c.refused, c.pulls)
		}
	}
	if c.refused > readBreakEven*c.pulls {
		t.Errorf("stopped reading at %.1f of %.1f refused", c.refused, c.pulls)
	}
	c.observe(Stats{Pulls: 3})
	if c.readFirst() {
		t.Error("a batch of landed pulls made it read")
	}
}

func TestParsePullReads(t *testing.T) {
	for in, want := range map[string]PullReads{"": PullReadsAuto, "auto": PullReadsAuto, "always": PullReadsAlways, "never": PullReadsNever} {
		if got, err := ParsePullReads(in); err != nil || got != want {
			t.Errorf("ParsePullReads(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePullReads("sometimes"); err == nil {
		t.Error(`ParsePullReads("sometimes") accepted`)
	}
}
