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

// JobPrefix starts the partition key of fan-out job items: their stream records continue a
// paged fan-out, so they are the only reserved items the function must see.
const JobPrefix = ReservedPrefix + "#job#"

// FilterPatterns returns the Lambda FilterCriteria patterns that let through exactly the
// records that can trigger a rule: items of a rule's source entity, copy targets (which
// pull their copy on insert), count and sum targets (whose aggregates Denorm restores when
// the application overwrites them, and which fold in what was parked while they were
// missing) and fan-out job items. Reserved items (markers, watermarks)
// never pass. It returns no patterns (no filtering) when some entity's partition key starts
// with a variable, and fails when the patterns exceed the service's limits.
//
// Patterns test the table's partition key only, which every item has: an index key an
// entity declares sparse is never required, so the record of an item that drops it (and
// so leaves a rule's target, say a user's count) still reaches the function.
func (s *Set) FilterPatterns() ([]string, error) {
	prefixes := map[string]bool{JobPrefix: true}
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

// Attributes Denorm keeps on count and sum targets.
const (
	// WatermarkAttr holds, on a target that shares its sources' partition, the sequence
	// number of the last record whose deltas it received.
	WatermarkAttr = ReservedPrefix + "_wm"
	// WritesAttr counts Denorm's writes to a target. Each of them raises it by exactly one,
	// so a stream record of the target whose counter changed while it did not rise by one
	// is the application's write, which Denorm undoes.
	WritesAttr = ReservedPrefix + "_n"
	// ParkPrefix starts the partition key of the item that holds a missing target's deltas
	// until the target appears: ParkPrefix + target pk, with the target's sort key.
	ParkPrefix = ReservedPrefix + "#p#"
	// ParkEntryPrefix starts, on a park item, the attribute holding one record's deltas to a
	// same-partition (watermarked) target: ParkEntryPrefix + the record's sequence number.
	ParkEntryPrefix = ReservedPrefix + "_pe_"
	// RelayPrefix starts the sort key of a relay item: one source's deltas to a count or sum
	// target in another partition, kept in the target's partition (same partition key) so
	// that its stream record reaches the target under the target's watermark. The rest of
	// the sort key identifies the target and the source (see plan.RelayKey).
	RelayPrefix = ReservedPrefix + "#r#"
	// Attributes of a relay item: the target's sort key, the source's key (for people
	// reading the table), the sequence number of the source's last record relayed, and the
	// deltas of the last write, a map of rule name to amount.
	RelayTargetAttr = ReservedPrefix + "_rt"
	RelaySourceAttr = ReservedPrefix + "_rs"
	RelaySeqAttr    = ReservedPrefix + "_rq"
	RelayDeltasAttr = ReservedPrefix + "_rd"
	// FirstAttr holds, on a watermarked target, the sequence number of the first record
	// Denorm applied to it since the application last wrote it whole: with the watermark it
	// bounds the records the target received itself.
	FirstAttr = ReservedPrefix + "_wf"
	// LastFirstAttr holds, on a watermarked target, the sequence number of the first record
	// Denorm's last write applied: with the watermark before and after it, which its stream
	// record shows, it tells a write that applied only records after a replaced image's
	// watermark from one that applied records on both sides of it.
	LastFirstAttr = ReservedPrefix + "_wl"
	// FoldAttr is set, by a fold of a park into a watermarked target, to the write count the
	// fold leaves: its stream record, and no other of Denorm's writes, has FoldAttr equal to
	// WritesAttr in its NewImage.
	FoldAttr = ReservedPrefix + "_fd"
	// RestoredAttr and RestoredCoversAttr are set, by a write that restores a deleted
	// target's image onto the item put back (the delete's record applied to it), to the
	// delete's sequence number and the image's watermark: the image held every record up
	// to it, so a fold of what was parked for the item leaves those records out.
	RestoredAttr       = ReservedPrefix + "_xd"
	RestoredCoversAttr = ReservedPrefix + "_xc"
)
