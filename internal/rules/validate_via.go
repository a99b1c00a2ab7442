package rules

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/internal/table"
)

// Ways for a copy to find its targets besides an index name (Copy.Via).
const (
	ViaKey   = "key"   // render the target's primary key from the source: one item, no query
	ViaTable = "table" // query the base table's partition rendered from the source
)

// ChooseVia returns how copy c finds its targets from a source, and whether that way works:
// every variable of the target's key templates it renders is one the source has and, for an
// index, the index projects what recognises a target. When c.Via is set it is returned, with
// whether it works. Otherwise the first that works of "key", "table" and the table's indexes
// in spec order (local, then global) is chosen: a key is one write with no query, a table
// query can be strongly consistent, a global index query cannot. ("", false) when none works
// or an entity is unknown.
func ChooseVia(f *File, c *Copy) (string, bool) {
	v := newValidator(f)
	src, dst := v.ents[c.From], v.ents[c.To]
	if src == nil || dst == nil {
		return "", false
	}
	if c.Via != "" {
		return c.Via, v.way(src, dst, c.Via).works()
	}
	for _, via := range v.ways() {
		if v.way(src, dst, via).works() {
			return via, true
		}
	}
	return "", false
}

// ways lists every way in order of preference.
func (v *validator) ways() []string {
	out := []string{ViaKey, ViaTable}
	for _, n := range indexNames(v.f) {
		if n != ViaKey && n != ViaTable { // such names are reported on the table
			out = append(out, n)
		}
	}
	return out
}

// wayResult is what one way to find copy targets lacks.
type wayResult struct {
	unknown     bool              // via names no index
	noTemplate  []string          // target key attributes the way needs but the target has no template for
	missingVars map[string]string // target key attribute -> its template, for templates needing variables the source lacks
	needVars    []string          // those variables
	unprojected []string          // attributes recognising a target that the index does not project
	broken      bool              // a needed template does not parse: reported on the entity
}

func (w wayResult) works() bool {
	return !w.unknown && !w.broken && len(w.noTemplate) == 0 && len(w.needVars) == 0 && len(w.unprojected) == 0
}

// way checks one way for a copy from src to dst.
func (v *validator) way(src, dst *entityInfo, via string) wayResult {
	spec := v.f.Table
	var w wayResult
	var keyAttrs []string
	switch via {
	case ViaKey:
		keyAttrs = []string{spec.PartitionKey, spec.SortKey}
	case ViaTable:
		keyAttrs = []string{spec.PartitionKey}
	default:
		idx, ok := spec.Index(via)
		if !ok {
			return wayResult{unknown: true}
		}
		keyAttrs = []string{idx.PartitionKey}
		w.unprojected = unprojected(idx, spec, dst)
	}
	seen := map[string]bool{}
	for _, k := range keyAttrs {
		if k == "" {
			continue
		}
		if _, bad := dst.bad[k]; bad {
			w.broken = true
			continue
		}
		t := dst.tmpl[k]
		if t == nil {
			w.noTemplate = append(w.noTemplate, k)
			continue
		}
		for _, name := range missing(t.Vars(), src.vars) {
			if w.missingVars == nil {
				w.missingVars = map[string]string{}
			}
			w.missingVars[k] = t.String()
			if !seen[name] {
				seen[name] = true
				w.needVars = append(w.needVars, name)
			}
		}
	}
	return w
}

// unprojected lists what recognises a dst item (its key attributes and type attribute) that
// index idx does not hold: a query of the index could not tell targets from other items.
func unprojected(idx table.Index, spec table.Spec, dst *entityInfo) []string {
	var out []string
	for _, a := range append(append([]string(nil), keyOrder(dst.e)...), dst.e.TypeAttribute) {
		// A key that is no key attribute of the table is reported on the entity.
		isKey := spec.IsKeyAttribute(a) || a == dst.e.TypeAttribute
		if a != "" && isKey && !idx.Projects(a, spec) {
			out = append(out, a)
		}
	}
	return out
}

// checkCopyVia reports why the copy's way to its targets fails, or that none works. A way
// that fails only through a template that does not parse is not reported again: the
// entity's problem says it.
func (rc ruleCheck) checkCopyVia(c *Copy, src, dst *entityInfo) {
	v := rc.v
	if src.broken() || dst.broken() {
		return
	}
	if c.Via != "" {
		if w := v.way(src, dst, c.Via); !w.works() && !w.broken {
			msg := v.explainWay(src, dst, c.Via, w)
			if len(w.needVars) > 0 {
				msg += "; " + hasVars(src)
			}
			rc.add(rc.pos("copy.via"), "%s", msg)
		}
		return
	}
	var why []string
	lacksVars := false
	for _, via := range v.ways() {
		w := v.way(src, dst, via)
		if w.works() || w.broken {
			return
		}
		why = append(why, v.explainWay(src, dst, via, w))
		lacksVars = lacksVars || len(w.needVars) > 0
	}
	if lacksVars {
		why = append(why, hasVars(src))
	}
	hint := ""
	if gs := v.f.Table.GlobalIndexes; len(gs) > 0 && src.tmpl[v.f.Table.PartitionKey] != nil && dst.tmpl[gs[0].PartitionKey] == nil {
		hint = fmt.Sprintf(" Give %s a key on an index that %s can render, e.g. %s: %q, and set via: %s.",
			dst.e.Name, src.e.Name, gs[0].PartitionKey, src.tmpl[v.f.Table.PartitionKey].String(), gs[0].Name)
	}
	rc.add(rc.pos("copy.to", "copy"), "no way to find the %s targets of a %s: %s.%s",
		dst.e.Name, src.e.Name, strings.Join(why, "; "), hint)
}

// explainWay says, in a clause, why one way does not work.
func (v *validator) explainWay(src, dst *entityInfo, via string, w wayResult) string {
	var parts []string
	if w.unknown {
		return fmt.Sprintf("via %s: no such index", via)
	}
	for _, k := range w.noTemplate {
		parts = append(parts, fmt.Sprintf("%s has no %s template", dst.e.Name, k))
	}
	if len(w.needVars) > 0 {
		var tmpls []string
		for _, k := range keyOrder(dst.e) {
			if t, ok := w.missingVars[k]; ok {
				tmpls = append(tmpls, fmt.Sprintf("%s %q", k, t))
			}
		}
		verb := "needs"
		if len(tmpls) > 1 {
			verb = "need"
		}
		fix := "add to its attributes"
		if h := renameHint(dst, src, w.needVars); h != "" {
			fix = h + ": use one name in both templates, or add to its attributes"
		}
		parts = append(parts, fmt.Sprintf("%s's %s %s %s, which %s does not have (%s)",
			dst.e.Name, strings.Join(tmpls, " and "), verb, setList(w.needVars), src.e.Name, fix))
	}
	if len(w.unprojected) > 0 {
		idx, _ := v.f.Table.Index(via)
		parts = append(parts, fmt.Sprintf("index %s (projection %s) does not project %s, needed to recognise %s items: project them (ALL or INCLUDE)",
			via, projName(idx.Projection), strings.Join(w.unprojected, ", "), dst.e.Name))
	}
	return fmt.Sprintf("via %s: %s", via, strings.Join(parts, ", "))
}
