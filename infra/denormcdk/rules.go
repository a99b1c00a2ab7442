package denormcdk

import (
	"fmt"

	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
)

// compiledRules is everything the construct takes from a rules file.
type compiledRules struct {
	table table.Spec
	// filterPatterns are the Lambda event filter patterns (JSON) that let through only the
	// records that can trigger a rule, plus the fan-out job items (pk "_dn#job#...").
	filterPatterns []string
	// queriedIndexes are the secondary indexes the processor queries.
	queriedIndexes []string
}

// loadRules is the one place the infrastructure reads a rules file. It uses the same
// loader and compiler as the function, so the stack cannot be derived from rules the
// function would reject: an invalid file fails the synth with every problem and its
// file:line:column.
//
// With data (Props.Rules) it parses data, and path (Props.RulesName) names it in messages.
func loadRules(path, name string, data []byte) (compiledRules, error) {
	var set *rules.Set
	var err error
	if data != nil {
		path = name
		set, err = rules.ParseSet(name, data)
	} else {
		set, err = rules.LoadSet(path)
	}
	if err != nil {
		return compiledRules{}, err
	}
	patterns, err := set.FilterPatterns()
	if err != nil {
		return compiledRules{}, fmt.Errorf("%s: event filters: %w", path, err)
	}
	return compiledRules{table: set.Table, filterPatterns: patterns, queriedIndexes: set.QueriedIndexes()}, nil
}
