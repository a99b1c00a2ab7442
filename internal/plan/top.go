package plan

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// A top rule keeps on its target a list of the N sources greatest by the rule's by
// attribute (ties broken by the source's key, as latest breaks them), greatest first. Each
// entry is a map: the source's key attributes and by value under their own names, then the
// rule's set attributes (entry attribute -> source attribute) that fit in EntryBytes.
//
// The stream processor applies a batch's changes to one target with one consistent read of
// the list and one write conditional on its version (TopNext). The list is complete when it
// holds fewer than N entries (every source is listed); when it is full and a listed source
// leaves it or falls, the sources left out may now belong, and one query of the target's
// sources refills it (TopOf).

// TopValues is the entry source item gives top rule r, as attributes in order: the
// source's key attributes, its by value, then the set attributes that fit in the rule's
// EntryBytes (in set order; one that does not fit is left out, and later ones that fit are
// kept). by must be ExtremeValue(r, item).
func TopValues(r *rules.CompiledRule, item record.Item) []AttrValue {
	out := make([]AttrValue, 0, 3+len(r.Agg.SetOrder))
	size := 3 // a map's own overhead
	add := func(name string, v types.AttributeValue) {
		out = append(out, AttrValue{Name: name, Value: v})
		size += len(name) + value.ItemSize(v)
	}
	for _, k := range r.Source.Keys[:keyCount(r)] {
		if v, ok := item[k.Attr]; ok {
			add(k.Attr, v)
		}
	}
	add(r.Agg.By, item[r.Agg.By])
	for _, t := range r.Agg.SetOrder {
		v, ok := r.SourceValue(item, r.Agg.Set[t])
		if !ok {
			continue
		}
		if size+len(t)+value.ItemSize(v) > r.EntryBytes {
			continue
		}
		add(t, v)
	}
	return out
}

// keyCount is how many of a source's Keys are its primary key (pk, and sk when it has one).
func keyCount(r *rules.CompiledRule) int {
	if r.Source.SK != nil && len(r.Source.Keys) > 1 {
		return 2
	}
	return 1
}

// TopEntryOf is the entry of source item, for top rule r (false: it is no member).
func TopEntryOf(r *rules.CompiledRule, item record.Item) (value.TopEntry, bool) {
	v := value.ExtremeValue(r, item)
	if v == nil {
		return value.TopEntry{}, false
	}
	return topEntry(value.LatestKey(r, item), v, TopValues(r, item)), true
}

// TopEntryOfRaise is the entry a planned raise (Key, Raise, Set) writes.
func TopEntryOfRaise(x Extreme) value.TopEntry { return topEntry(x.Key, x.Raise, x.Set) }

func topEntry(key string, by types.AttributeValue, vals []AttrValue) value.TopEntry {
	m := make(map[string]types.AttributeValue, len(vals))
	for _, a := range vals {
		m[a.Name] = a.Value
	}
	return value.TopEntry{Key: key, By: by, Item: m}
}
