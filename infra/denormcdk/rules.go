package denormcdk

import (
	"fmt"
	"os"

	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
)

// compiledRules is everything the construct takes from a rules file.
type compiledRules struct {
	// data is the rules file as compiled, which the function's code packages.
	data  []byte
	table table.Spec
	// filterPatterns are the Lambda event filter patterns (JSON) that let through only the
	// records that can trigger a rule, plus the fan-out job items (pk "_dn#job#...").
	filterPatterns []string
	// queriedIndexes are the secondary indexes the processor queries.
	queriedIndexes []string
	// keepExpired names the rules with onExpiry: ignore, and where each is.
	keepExpired []string
}

// loadRules is the one place the infrastructure reads a rules file. It uses the same
// loader and compiler as the function, so the stack cannot be derived from rules the
// function would reject: an invalid file fails the synth with every problem and its
// file:line:column.
//
// With data (Props.Rules) it parses data, and path (Props.RulesName) names it in messages.
func loadRules(path, name string, data []byte) (compiledRules, error) {
	if data != nil {
		path = name
	} else {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return compiledRules{}, fmt.Errorf("reading rules file: %w", err)
		}
	}
	set, err := rules.ParseSet(path, data)
	if err != nil {
		return compiledRules{}, err
	}
	patterns, err := set.FilterPatterns()
	if err != nil {
		return compiledRules{}, fmt.Errorf("%s: event filters: %w", path, err)
	}
	var keep []string
	for _, r := range set.Compiled() {
		if r.Agg != nil && r.Agg.OnExpiry == rules.OnExpiryIgnore {
			keep = append(keep, fmt.Sprintf("%s:%d:%d: rule %s", path, r.Pos.Line, r.Pos.Col, r.Name))
		}
	}
	return compiledRules{data: data, table: set.Table, filterPatterns: patterns, queriedIndexes: set.QueriedIndexes(), keepExpired: keep}, nil
}
