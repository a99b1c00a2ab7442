package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/table"
)

// ExtremeQuery is how a max or min rule reads every source of one target, to recompute the
// extreme when the source holding it leaves: a query of Index (the base table when its Name
// is "") at the partition PK renders from the target's variables, sort key beginning with
// SKPrefix (on SKAttr; both "" for no condition). The query may return other items (other
// entities, sources of other targets of a bucketed key): each is matched and its target
// rendered before it counts.
type ExtremeQuery struct {
	Index    table.Index
	PK       *keys.Template // the source's template on Index's partition key
	SKAttr   string
	SKPrefix string
	// Global is true for a global secondary index, which cannot be read consistently.
	Global bool
}

// Way names the query for messages: "table" or the index name.
func (q ExtremeQuery) Way() string {
	if q.Index.Name == "" {
		return ViaTable
	}
	return q.Index.Name
}

// extremeQuery picks the first way (table, local indexes, global indexes) that finds every
// source of a target with one query. why lists, per way tried, what it lacks.
func (v *validator) extremeQuery(a *Aggregate, of, into *entityInfo) (ExtremeQuery, bool, []string) {
	spec := v.f.Table
	targetVars := map[string]bool{}
	for _, k := range []string{spec.PartitionKey, spec.SortKey} {
		if t := into.tmpl[k]; k != "" && t != nil {
			for _, n := range t.Vars() {
				targetVars[n] = true
			}
		}
	}
	var why []string
	for _, idx := range spec.Indexes() {
		name := idx.Name
		if name == "" {
			name = ViaTable
		}
		local := idx.PartitionKey == spec.PartitionKey
		t := of.tmpl[idx.PartitionKey]
		switch {
		case t == nil:
			why = append(why, fmt.Sprintf("%s: %s has no %s template", name, of.e.Name, idx.PartitionKey))
			continue
		case of.sparse[idx.PartitionKey]:
			why = append(why, fmt.Sprintf("%s: %s's %s is sparse, so not every %s is in it", name, of.e.Name, idx.PartitionKey, of.e.Name))
			continue
		case t.IsLiteral():
			why = append(why, fmt.Sprintf("%s: %s's %s %q puts every %s of every %s in one partition", name, of.e.Name, idx.PartitionKey, t.String(), of.e.Name, into.e.Name))
			continue
		case !verbatimTemplate(t):
			why = append(why, fmt.Sprintf("%s: %s's %s %q pads or buckets a variable", name, of.e.Name, idx.PartitionKey, t.String()))
			continue
		}
		if m := missing(t.Vars(), targetVars); len(m) > 0 {
			why = append(why, fmt.Sprintf("%s: %s's %s %q needs %s, which %s's keys do not hold", name, of.e.Name, idx.PartitionKey, t.String(), setList(m), into.e.Name))
			continue
		}
		q := ExtremeQuery{Index: idx, PK: t, Global: !local}
		if st := of.tmpl[idx.SortKey]; idx.SortKey != "" && st != nil && st.Prefix() != "" {
			q.SKAttr, q.SKPrefix = idx.SortKey, st.Prefix()
		}
		if local && q.SKPrefix == "" {
			why = append(why, fmt.Sprintf("%s: %s's %s has no literal prefix that tells it from the rest of the partition", name, of.e.Name, orKey(idx.SortKey)))
			continue
		}
		need := append(append([]string{a.Value, a.By}, a.WhereAttributes()...), keyOrder(of.e)...)
		for _, t := range a.SetOrder {
			if _, isVar := KeyVar(a.Set[t]); !isVar { // a key variable comes with the keys
				need = append(need, a.Set[t])
			}
		}
		need = append(need, of.e.TypeAttribute)
		for _, at := range of.e.Attributes {
			if targetVars[at] { // a target variable the source holds as an attribute
				need = append(need, at)
			}
		}
		var lack []string
		for _, at := range need {
			if at != "" && !idx.Projects(at, spec) && !slices.Contains(lack, at) {
				lack = append(lack, at)
			}
		}
		if len(lack) > 0 {
			why = append(why, fmt.Sprintf("%s: does not project %s", name, strings.Join(lack, ", ")))
			continue
		}
		return q, true, nil
	}
	return ExtremeQuery{}, false, why
}

func orKey(k string) string {
	if k == "" {
		return "sort key (the table has none)"
	}
	return k
}

// verbatimTemplate reports whether t renders its variables' values unchanged.
func verbatimTemplate(t *keys.Template) bool {
	for _, p := range t.Parts() {
		if p.Pad > 0 || p.Bucket != 0 {
			return false
		}
	}
	return true
}

// checkExtreme checks what only max and min need: a value to compare, no time bucket on
// the target, and one query that finds a target's sources.
func (rc ruleCheck) checkExtreme(a *Aggregate, of, into *entityInfo) {
	k := string(rc.r.Kind)
	sortAttr := a.Value
	if rc.r.Kind == KindLatest || rc.r.Kind == KindTop {
		sortAttr = a.By
	}
	if of == nil || into == nil || of.broken() || into.broken() || sortAttr == "" || !of.has[sortAttr] {
		return
	}
	spec := rc.v.f.Table
	if _, ok, why := rc.v.extremeQuery(a, of, into); !ok {
		pkT := into.tmpl[spec.PartitionKey].String()
		project := ""
		for _, w := range why {
			if name, lack, ok := strings.Cut(w, ": does not project "); ok {
				project = fmt.Sprintf(", or project %s in %s (projection ALL, or INCLUDE them)", lack, name)
				break
			}
		}
		when := fmt.Sprintf("%s cannot be recomputed when the %s holding it is deleted or lowered", k, of.e.Name)
		if rc.r.Kind == KindTop {
			when = fmt.Sprintf("top cannot be refilled when a listed %s leaves a full list or falls", of.e.Name)
		}
		rc.add(rc.pos(k+".of", k), "%s: no one query finds every %s of a %s (%s); put the %s items in the %s's partition (pk %q and an sk with a literal prefix, e.g. %q), or add a global index whose partition key %s renders from %s's keys (e.g. a GSI on gsi1pk with %s: gsi1pk: %q)%s",
			when, of.e.Name, into.e.Name, strings.Join(why, "; "), of.e.Name, into.e.Name, pkT, strings.ToUpper(of.e.Name)+"#{...}", of.e.Name, into.e.Name, of.e.Name, pkT, project)
	}
}

// checkLatest checks what latest reads and writes: by, the sort attribute, and set, the
// attributes copied from the greatest source.
func (rc ruleCheck) checkLatest(a *Aggregate, of, into *entityInfo) {
	if a.By == "" {
		rc.add(rc.pos("latest.by", "latest"), "latest needs by: the number or string attribute of %s that orders the sources (ties are broken by the source's key), e.g. by: placedAt", orName(a.Of, "the source entity"))
	} else {
		rc.read(of, a.By, rc.pos("latest.by", "latest"), "latest.by")
		rc.watch(of, a.By)
	}
	if len(a.Set) == 0 {
		rc.add(rc.pos("latest.set", "latest"), "latest needs set: target attribute: source attribute pairs copied from the greatest source, e.g. set: {lastOrderStatus: status}")
	}
	rc.checkSetPairs("latest", a.Set, a.SetOrder, of, into)
}

// checkTop checks what top reads and how big its list may grow: by, n, entryBytes and
// set (entry attribute: source attribute; an entry also holds the source's key attributes
// and its by value under their own names).
func (rc ruleCheck) checkTop(a *Aggregate, of *entityInfo) {
	if a.By == "" {
		rc.add(rc.pos("top.by", "top"), "top needs by: the number or string attribute of %s that orders the sources, greatest first (ties are broken by the source's key), e.g. by: createdAt", orName(a.Of, "the source entity"))
	} else {
		rc.read(of, a.By, rc.pos("top.by", "top"), "top.by")
		rc.watch(of, a.By)
	}
	eb := a.EntryBytes
	switch {
	case a.N == 0:
		rc.add(rc.pos("top.n", "top"), "top needs n: how many sources the list keeps (1 to %d), e.g. n: 3", MaxTopN)
	case a.N > MaxTopN:
		rc.add(rc.pos("top.n", "top"), "top n %d is over %d: every change to a listed source rewrites the whole list, so a long list costs a write of its whole size each time; keep at most %d (page through the sources with a query for more)", a.N, MaxTopN, MaxTopN)
	case eb != 0 && eb < MinEntryBytes:
		rc.add(rc.pos("top.entryBytes", "top"), "top entryBytes %d is under %d: an entry holds the source's key and by value besides its set attributes; allow at least %d", eb, MinEntryBytes, MinEntryBytes)
	default:
		if eb == 0 {
			eb = DefaultEntryBytes
		}
		if a.N*eb > MaxTopBytes {
			p := rc.pos("top.entryBytes", "top.n", "top")
			rc.add(p, "top list of %d entries of up to %d bytes may reach %d KB: a DynamoDB item holds at most 400 KB and a top list may take at most %d KB of it; lower n, or entryBytes (set attributes that do not fit are left out of an entry)", a.N, eb, (a.N*eb+1023)/1024, MaxTopBytes/1024)
		}
	}
	keyAttrs := map[string]bool{a.By: true}
	if of != nil {
		for _, k := range keyOrder(of.e) {
			if k == rc.v.f.Table.PartitionKey || k == rc.v.f.Table.SortKey {
				keyAttrs[k] = true
			}
		}
	}
	order := a.SetOrder
	if len(order) != len(a.Set) {
		order = sortedKeys(a.Set)
	}
	for _, t := range order {
		p := rc.pos("top.set."+t, "top.set", "top")
		if keyAttrs[t] {
			rc.add(p, "top.set %s: every entry already holds the source's %s under that name (entries hold the source's key attributes and its by value); name the entry attribute otherwise", t, t)
			continue
		}
		rc.readSetSource(of, a.Set[t], p, "top.set "+t)
	}
}
