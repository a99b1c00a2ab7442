package rules

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/internal/table"
)

// canBeSparse reports whether key attribute k may be absent from an entity's items: it is a
// key of an index only. Every item has the table's own keys, so those are never sparse,
// even when an index uses them too.
func canBeSparse(spec table.Spec, k string) bool {
	return k != "" && k != spec.PartitionKey && k != spec.SortKey && spec.IsKeyAttribute(k)
}

// indexKeyAttributes lists the key attributes that can be sparse, for messages.
func indexKeyAttributes(spec table.Spec) []string {
	var out []string
	for _, k := range spec.KeyAttributes() {
		if canBeSparse(spec, k) {
			out = append(out, k)
		}
	}
	return out
}

// checkSparse checks an entity's sparse list: each name is an index key the entity has a
// template for, listed once.
func (v *validator) checkSparse(e *Entity, ctx string) {
	spec := v.f.Table
	seen := map[string]bool{}
	for i, k := range e.Sparse {
		pos := at(e.Fields, e.Pos, fmt.Sprintf("sparse.%d", i), "sparse")
		_, hasKey := e.Keys[k]
		_, written := e.Fields[k] // a template of the wrong shape, reported by Parse
		switch {
		case k == "":
			v.add(pos, ctx, "sparse: a key attribute name is empty")
		case seen[k]:
			v.add(pos, ctx, "sparse lists %q twice; list it once", k)
		case k == spec.PartitionKey || k == spec.SortKey:
			which := "partition"
			if k == spec.SortKey {
				which = "sort"
			}
			v.add(pos, ctx, "sparse: %q is the table's %s key, which every item has, so it cannot be sparse; list only index keys (%s)",
				k, which, strings.Join(indexKeyAttributes(spec), ", "))
		case !spec.IsKeyAttribute(k):
			idx := indexKeyAttributes(spec)
			v.add(pos, ctx, "sparse: %q is not a key attribute of the table's indexes (%s)%s",
				k, strings.Join(idx, ", "), suggest(k, idx))
		case !hasKey && !written:
			v.add(pos, ctx, "sparse: %s has no %s template; give it one (%s: \"...\") or remove %s from sparse", e.Name, k, k, k)
		}
		seen[k] = true
	}
}
