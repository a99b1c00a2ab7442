package main

import (
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/denorm/denorm/internal/table"
)

// compiledRules is everything the stack takes from a rules file.
type compiledRules struct {
	Table table.Spec
	// FilterPatterns are the Lambda event filter patterns (JSON) that let through only the
	// records that can trigger a rule, plus the fan-out job items (pk "_dn#job...").
	FilterPatterns []string
	// QueriedIndexes are the secondary indexes the processor queries.
	QueriedIndexes []string
}

// loadRules is the one place the infrastructure reads a rules file.
//
// ADAPTER, TO WIRE: internal/rules does not compile yet (Compile, FilterPatterns and
// QueriedIndexes are behind the denorm_pending build tag). Until it does, this reads only
// the file's table section (table.Default() when there is none), sets no event filters
// (every record reaches the function, which ignores what no rule matches) and lets the
// function query every secondary index, each by name. When the rules package builds,
// replace the body with:
//
//	f, err := rules.Load(path)          // every problem, with file:line:col
//	set, err := rules.Compile(f)
//	patterns, err := set.FilterPatterns()
//	return compiledRules{Table: set.Table, FilterPatterns: patterns, QueriedIndexes: set.QueriedIndexes()}, nil
func loadRules(path string) (compiledRules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return compiledRules{}, fmt.Errorf("reading rules file: %w", err)
	}
	var doc struct {
		Table *table.Spec `yaml:"table"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return compiledRules{}, fmt.Errorf("%s: %w", path, err)
	}
	spec := table.Default()
	if doc.Table != nil {
		spec = *doc.Table
		// The rules loader accepts the design sketch's lower-case "projection: all" too.
		for i := range spec.LocalIndexes {
			spec.LocalIndexes[i].Projection = table.Projection(strings.ToUpper(string(spec.LocalIndexes[i].Projection)))
		}
		for i := range spec.GlobalIndexes {
			spec.GlobalIndexes[i].Projection = table.Projection(strings.ToUpper(string(spec.GlobalIndexes[i].Projection)))
		}
	}
	if err := spec.Validate(); err != nil {
		return compiledRules{}, fmt.Errorf("%s: %w", path, err)
	}
	var indexes []string
	for _, ix := range spec.Indexes() {
		if ix.Name != "" {
			indexes = append(indexes, ix.Name)
		}
	}
	return compiledRules{Table: spec, QueriedIndexes: indexes}, nil
}
