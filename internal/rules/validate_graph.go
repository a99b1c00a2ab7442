package rules

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/internal/keys"
)

// checkWriters reports an attribute written by two rules: the two would overwrite each
// other, and which one wins would depend on stream timing.
func (v *validator) checkWriters() {
	type writer struct {
		rule int
		pos  Pos
	}
	first := map[attrRef]writer{}
	for i := range v.f.Rules {
		ctx := ruleCtx(&v.f.Rules[i], i)
		for j, w := range v.io[i].writes {
			p := v.io[i].writePos[j]
			prev, dup := first[w]
			switch {
			case !dup:
				first[w] = writer{i, p}
			case prev.rule == i:
				v.add(p, ctx, "writes %s.%s twice; write it once", w.entity, w.attr)
			default:
				v.add(p, ctx, "writes %s.%s, which %s (line %d) already writes: an attribute has one writer; remove one of the rules or write another attribute",
					w.entity, w.attr, ruleCtx(&v.f.Rules[prev.rule], prev.rule), prev.pos.Line)
			}
		}
	}
}

// checkCycles reports each group of rules that trigger each other in a loop: a rule's write
// changes an attribute another rule watches, and so on back to the first. At run time
// writes that change nothing are skipped, but a loop through distinct values never ends.
func (v *validator) checkCycles() {
	n := len(v.f.Rules)
	watchers := map[attrRef][]int{}
	for i := 0; i < n; i++ {
		for _, w := range v.io[i].watches {
			if ws := watchers[w]; len(ws) == 0 || ws[len(ws)-1] != i {
				watchers[w] = append(watchers[w], i)
			}
		}
	}
	// edges[i] are the rules that i triggers, in file order, each with the attribute.
	type edge struct {
		to  int
		via attrRef
	}
	edges := make([][]edge, n)
	for i := 0; i < n; i++ {
		seen := map[int]bool{}
		for _, w := range v.io[i].writes {
			for _, j := range watchers[w] {
				if !seen[j] {
					seen[j] = true
					edges[i] = append(edges[i], edge{j, w})
				}
			}
		}
	}
	adj := make([][]int, n)
	for i, es := range edges {
		for _, e := range es {
			adj[i] = append(adj[i], e.to)
		}
	}
	for _, comp := range stronglyConnected(adj) {
		start := comp[0]
		in := map[int]bool{}
		for _, c := range comp {
			in[c] = true
			start = min(start, c)
		}
		path := shortestCycle(adj, start, in)
		if path == nil {
			continue // a single rule that does not trigger itself
		}
		var names, why []string
		for k, r := range path {
			names = append(names, ruleCtx(&v.f.Rules[r], r))
			if k+1 < len(path) {
				for _, e := range edges[r] {
					if e.to == path[k+1] {
						why = append(why, fmt.Sprintf("%s writes %s.%s, which %s watches", ruleCtx(&v.f.Rules[r], r),
							e.via.entity, e.via.attr, ruleCtx(&v.f.Rules[e.to], e.to)))
						break
					}
				}
			}
		}
		rs := &v.f.Rules[start]
		v.add(rs.Pos, ruleCtx(rs, start), "rules form a cycle: %s (%s); each change would trigger the next without end: remove one of them or make one read an attribute the other does not write",
			strings.Join(names, " -> "), strings.Join(why, "; "))
	}
}

// stronglyConnected returns the strongly connected components of a graph (Tarjan).
// Recursion depth is the number of rules, which a rules file keeps small.
func stronglyConnected(adj [][]int) [][]int {
	n := len(adj)
	index, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]int
	next := 0
	var visit func(u int)
	visit = func(u int) {
		index[u], low[u] = next, next
		next++
		stack = append(stack, u)
		onStack[u] = true
		for _, w := range adj[u] {
			if index[w] < 0 {
				visit(w)
				low[u] = min(low[u], low[w])
			} else if onStack[w] {
				low[u] = min(low[u], index[w])
			}
		}
		if low[u] == index[u] {
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == u {
					break
				}
			}
			out = append(out, comp)
		}
	}
	for u := 0; u < n; u++ {
		if index[u] < 0 {
			visit(u)
		}
	}
	return out
}

// shortestCycle finds the shortest path from start back to start inside the set in
// (breadth first), as start, ..., start; nil when there is none.
func shortestCycle(adj [][]int, start int, in map[int]bool) []int {
	prev := map[int]int{}
	queue := []int{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, w := range adj[u] {
			if !in[w] {
				continue
			}
			if w == start {
				path := []int{start}
				for x := u; x != start; x = prev[x] {
					path = append(path, x)
				}
				path = append(path, start)
				// Built backwards: reverse the inner part.
				for a, b := 1, len(path)-2; a < b; a, b = a+1, b-1 {
					path[a], path[b] = path[b], path[a]
				}
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = u
				queue = append(queue, w)
			}
		}
	}
	return nil
}

// checkAmbiguity reports two entities that may match the same item: every key attribute
// both declare has templates that can match one value, and no type tells them apart. The
// engine would not know which rules an item belongs to.
func (v *validator) checkAmbiguity() {
	es := v.f.Entities
	for j := range es {
		b := v.ents[es[j].Name]
		if b == nil || b.e != &es[j] {
			continue // a repeated name, reported already
		}
		for i := 0; i < j; i++ {
			a := v.ents[es[i].Name]
			if a == nil || a.e != &es[i] || distinctTypes(a.e, b.e) {
				continue
			}
			if keysOverlap(a, b) {
				v.add(b.e.Pos, entityCtx(b.e.Name), "may match the same items as entity %q (line %d): %s; make a literal part of one key differ (e.g. a different prefix) or give both a type with different equals",
					a.e.Name, a.e.Pos.Line, overlapText(a, b))
			}
		}
	}
}

func distinctTypes(a, b *Entity) bool {
	return a.TypeAttribute != "" && a.TypeAttribute == b.TypeAttribute && a.TypeEquals != b.TypeEquals
}

// keysOverlap reports whether some item may match both entities: every key attribute both
// declare may hold one value matching both templates, or is sparse in both (an item
// without it matches both). A template that does not parse leaves the pair unjudged.
func keysOverlap(a, b *entityInfo) bool {
	common := 0
	for _, k := range keyOrder(a.e) {
		_, badA := a.bad[k]
		_, badB := b.bad[k]
		if badA || badB {
			return false
		}
		ta, okA := a.tmpl[k]
		tb, okB := b.tmpl[k]
		if !okA || !okB {
			continue // not declared by both, or no key attribute (reported on the entity)
		}
		if !keys.MayOverlap(ta, tb) && !(a.sparse[k] && b.sparse[k]) {
			return false
		}
		common++
	}
	return common > 0
}

// overlapText says which keys let one item match both entities.
func overlapText(a, b *entityInfo) string {
	var parts, absent []string
	for _, k := range keyOrder(a.e) {
		ta, okA := a.tmpl[k]
		tb, okB := b.tmpl[k]
		switch {
		case !okA || !okB:
		case keys.MayOverlap(ta, tb):
			parts = append(parts, fmt.Sprintf("%s %q and %q", k, ta.String(), tb.String()))
		default: // sparse in both, see keysOverlap
			absent = append(absent, k)
		}
	}
	var clauses []string
	if len(parts) > 0 {
		clauses = append(clauses, "their "+strings.Join(parts, ", ")+" can match the same value")
	}
	if len(absent) > 0 {
		clauses = append(clauses, fmt.Sprintf("an item without %s (sparse in both) matches both", strings.Join(absent, ", ")))
	}
	return strings.Join(clauses, ", and ")
}
