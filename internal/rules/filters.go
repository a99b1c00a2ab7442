package rules

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Limits of Lambda event filtering for one event source mapping (service quotas).
const (
	MaxFilters       = 5
	MaxFilterPattern = 4096
)

// FilterPatterns returns the Lambda FilterCriteria patterns that let through exactly the
// records that can trigger a rule: items of a rule's source entity, copy targets (which
// pull their copy on insert), count and sum targets (whose copy of the state is put back
// when the application changes it), relay items (which carry deltas to a target's state),
// state parts of a split target (whose records copy it), fan-out job items and probes
// (which the function answers). Other reserved items (state items, markers, registries)
// never pass. It returns no patterns (no filtering) when some entity's partition key starts
// with a variable, and fails when the patterns exceed the service's limits.
//
// Patterns test the table's partition key only, which every item has: an index key an
// entity declares sparse is never required, so the record of an item that drops it (and
// so leaves a rule's target, say a user's count) still reaches the function.
func (s *Set) FilterPatterns() ([]string, error) {
	prefixes := map[string]bool{JobPrefix: true, ProbePrefix: true}
	open := false // some entity's partition key starts with a variable: no prefix to filter on
	add := func(e *EntityType) {
		p := e.PK.Prefix()
		if p == "" {
			open = true
		}
		prefixes[p] = true
	}
	for _, r := range s.compiled {
		add(r.Source)
		if r.Kind == KindCopy || r.Agg != nil {
			add(r.Target)
		}
		if r.Relay || r.Kind == KindDistinct { // a distinct's reference items are there too
			prefixes[RelayPrefix] = true
		}
		if r.Agg != nil && r.Agg.Split > 1 { // a part's record copies the target
			prefixes[StatePartPrefix] = true
		}
	}
	pk := s.Table.PartitionKey
	if open {
		// Lambda's filter syntax has no "anything but this prefix", so with an entity whose
		// partition key starts with a variable nothing can be filtered: every record reaches
		// the function, which ignores reserved items itself.
		return nil, nil
	}
	// Drop prefixes covered by a shorter one; sort for a stable template.
	var list []string
	for p := range prefixes {
		list = append(list, p)
	}
	sort.Strings(list)
	var kept []string
	for _, p := range list {
		if len(kept) > 0 && strings.HasPrefix(p, kept[len(kept)-1]) {
			continue
		}
		kept = append(kept, p)
	}
	var out []string
	var cur []any
	flush := func() {
		if len(cur) > 0 {
			out = append(out, pattern(pk, cur))
			cur = nil
		}
	}
	for _, p := range kept {
		next := append(append([]any(nil), cur...), map[string]any{"prefix": p})
		if len(pattern(pk, next)) > MaxFilterPattern {
			flush()
			next = []any{map[string]any{"prefix": p}}
			if len(pattern(pk, next)) > MaxFilterPattern {
				return nil, fmt.Errorf("filter for key prefix %q is longer than %d characters", p, MaxFilterPattern)
			}
		}
		cur = next
	}
	flush()
	if len(out) > MaxFilters {
		return nil, fmt.Errorf("the rules need %d event filters, Lambda allows %d: use fewer distinct key prefixes", len(out), MaxFilters)
	}
	return out, nil
}

func pattern(pk string, values []any) string {
	p := map[string]any{"dynamodb": map[string]any{"Keys": map[string]any{pk: map[string]any{"S": values}}}}
	b, _ := json.Marshal(p)
	return string(b)
}

// QueriedIndexes returns the secondary indexes the stream processor queries (copy rules
// whose targets are found through an index), sorted.
func (s *Set) QueriedIndexes() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.compiled {
		if r.Kind == KindCopy && r.Via != "key" && r.QueryIndex.Name != "" && !seen[r.QueryIndex.Name] {
			seen[r.QueryIndex.Name] = true
			out = append(out, r.QueryIndex.Name)
		}
	}
	sort.Strings(out)
	return out
}
