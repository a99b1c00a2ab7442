package bench

import (
	"fmt"
	"slices"

	"github.com/denorm/denorm/internal/rules"
)

// ruleSubset loads the rules file and keeps only the named rules (all of them when names
// is empty), so a workload measures exactly the rules it is about with the same entities,
// table and semantics as the full example.
//
// With perItem (a workload above ParallelizationFactor 1, where Lambda keeps the records
// of each item in order but not those of a partition) counts and sums are guarded by
// transaction: relay and watermark mode need a partition's records in one order. A rule
// that would still be in watermark mode is refused. split, when above 0, replaces the
// split of every count and sum (1: none).
func ruleSubset(path string, names []string, perItem bool, split int) (*rules.File, *rules.Set, error) {
	f, err := rules.Load(path)
	if err != nil {
		return nil, nil, err
	}
	if len(names) > 0 {
		g := *f
		g.Rules = nil
		for _, r := range f.Rules {
			if slices.Contains(names, r.Name) {
				g.Rules = append(g.Rules, r)
			}
		}
		if len(g.Rules) != len(names) {
			return nil, nil, fmt.Errorf("%s: want rules %v, found %d of them", path, names, len(g.Rules))
		}
		f = &g
	}
	if perItem || split > 0 {
		g := *f
		g.Rules = slices.Clone(f.Rules)
		for i, r := range g.Rules {
			if r.Agg != nil && (r.Kind == rules.KindCount || r.Kind == rules.KindSum) {
				agg := *r.Agg
				if perItem {
					agg.ExactlyOnce = rules.ExactlyOnceTransaction
				}
				if split > 0 {
					agg.Split = split
				}
				g.Rules[i].Agg = &agg
			}
		}
		f = &g
	}
	set, err := rules.Compile(f)
	if err != nil {
		return nil, nil, err
	}
	if perItem {
		for _, cr := range set.Compiled() {
			if cr.Watermark {
				return nil, nil, fmt.Errorf("rule %s needs its partition's records in one order (watermark mode), which Lambda does not keep above ParallelizationFactor 1", cr.Name)
			}
		}
	}
	return f, set, nil
}
