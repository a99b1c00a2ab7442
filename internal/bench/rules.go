package bench

import (
	"fmt"
	"slices"

	"github.com/denorm/denorm/internal/rules"
)

// ruleSubset loads the rules file and keeps only the named rules (all of them when names
// is empty), so a workload measures exactly the rules it is about with the same entities,
// table and semantics as the full example.
func ruleSubset(path string, names []string) (*rules.File, *rules.Set, error) {
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
	set, err := rules.Compile(f)
	if err != nil {
		return nil, nil, err
	}
	return f, set, nil
}
