package rules

import (
	"fmt"
	"strings"
)

// Allowed option values; "" means the default (the first of each list).
var (
	onSourceDeleteValues = []string{OnDeleteKeep, OnDeleteRemove, OnDeleteDelete}
	onExpiryValues       = []string{OnExpiryRemove, OnExpiryIgnore}
	missingTargetValues  = []string{MissingSkip, MissingCreate}
	exactlyOnceValues    = []string{ExactlyOnceRelay, ExactlyOnceTransaction}
)

// ruleCheck is the context of one rule while it is checked.
type ruleCheck struct {
	v   *validator
	r   *Rule
	i   int
	ctx string
}

// pos returns the position of the first path found in the rule's fields, else the rule's.
func (rc ruleCheck) pos(paths ...string) Pos { return at(rc.r.Fields, rc.r.Pos, paths...) }

func (rc ruleCheck) add(at Pos, format string, args ...any) { rc.v.add(at, rc.ctx, format, args...) }

func (v *validator) checkRules() {
	first := map[string]Pos{}
	for i := range v.f.Rules {
		r := &v.f.Rules[i]
		rc := ruleCheck{v: v, r: r, i: i, ctx: ruleCtx(r, i)}
		if r.Name == "" {
			rc.add(rc.pos("name"), "has no name: add name: (a short unique name such as comment-author)")
		} else if p, dup := first[r.Name]; dup {
			rc.add(rc.pos("name"), "name %q is already used by the rule on line %d; rule names must be unique", r.Name, p.Line)
		} else {
			first[r.Name] = rc.pos("name")
			v.validName(rc.pos("name"), rc.ctx, "rule", r.Name)
		}
		set := 0
		for _, ok := range []bool{r.Copy != nil, r.Mirror != nil, r.Agg != nil} {
			if ok {
				set++
			}
		}
		switch {
		case r.Kind == KindCopy && r.Copy != nil && set == 1:
			rc.checkCopy(r.Copy)
		case r.Kind == KindMirror && r.Mirror != nil && set == 1:
			rc.checkMirror(r.Mirror)
		case (r.Kind.Aggregate() || r.Kind.Extreme()) && r.Agg != nil && set == 1:
			rc.checkAgg(r.Agg)
		case r.Kind == "" && set == 0:
			rc.add(r.Pos, "has no kind: add one of copy, mirror, count, sum, distinct, max, min, latest or top")
		default:
			rc.add(r.Pos, "kind %q does not match its sections: set exactly one of Copy, Mirror or Agg (count, sum, distinct, max, min, latest and top) to match Kind", r.Kind)
		}
	}
	v.checkSplitTargets()
}

// checkSplitTargets refuses a distinct count into an entity whose state a split rule
// spreads over parts: a distinct's reference items move the state item alone, and the
// decisions of `denorm backfill` and repair read it alone.
func (v *validator) checkSplitTargets() {
	split := map[string]string{}
	for i := range v.f.Rules {
		if r := &v.f.Rules[i]; r.Agg != nil && r.Agg.Split > 1 {
			split[r.Agg.Into] = r.Name
		}
	}
	for i := range v.f.Rules {
		r := &v.f.Rules[i]
		if r.Kind != KindDistinct || r.Agg == nil || split[r.Agg.Into] == "" {
			continue
		}
		rc := ruleCheck{v: v, r: r, i: i, ctx: ruleCtx(r, i)}
		rc.add(rc.pos("distinct.into", "distinct"), "distinct cannot count into %s: rule %s splits its state over parts, which a distinct's reference items do not move; count the distinct values into another entity, or remove split from %s", r.Agg.Into, split[r.Agg.Into], split[r.Agg.Into])
	}
}

// entity resolves an entity name a rule refers to; field is the YAML path for positions.
func (rc ruleCheck) entity(field, name, role string) *entityInfo {
	if name == "" {
		kind := strings.SplitN(field, ".", 2)[0]
		rc.add(rc.pos(field, kind), "%s needs %s: the %s entity", kind, field[len(kind)+1:], role)
		return nil
	}
	if info, ok := rc.v.ents[name]; ok {
		return info
	}
	names := rc.v.entityNames()
	rc.add(rc.pos(field), "unknown entity %q%s; declared entities: %s", name, suggest(name, names), strings.Join(names, ", "))
	return nil
}

// read checks that the rule may read attribute a of entity e.
func (rc ruleCheck) read(e *entityInfo, a string, at Pos, what string) {
	if e == nil {
		return
	}
	if a == "" {
		rc.add(at, "%s: the attribute name is empty", what)
		return
	}
	if e.has[a] {
		return
	}
	known := sortedAttrs(e.has)
	if k, t, ok := keyVarOf(e, a); ok {
		// A variable shows in the key, but the stream record carries the key as one string.
		hint := ""
		if strings.HasPrefix(what, "latest.set") || strings.HasPrefix(what, "top.set") {
			hint = fmt.Sprintf(`; or copy the key's text with "{%s}"`, a)
		}
		rc.add(at, "%s: %s has no attribute %q: {%s} is part of its %s %q, and rules read attributes; declare %s in %s's attributes and store it on the items (it has: %s)%s",
			what, e.e.Name, a, a, k, t.String(), a, e.e.Name, strings.Join(known, ", "), hint)
		return
	}
	rc.add(at, "%s: %s has no attribute %q%s; declare it in %s's attributes (it has: %s)",
		what, e.e.Name, a, suggest(a, known), e.e.Name, strings.Join(known, ", "))
}

// write checks that the rule may write attribute a of entity e and records the write.
func (rc ruleCheck) write(e *entityInfo, a string, at Pos, what string) {
	if e == nil {
		return
	}
	switch {
	case a == "":
		rc.add(at, "%s: the attribute name is empty", what)
		return
	case strings.HasPrefix(a, ReservedPrefix):
		rc.v.reserved(at, rc.ctx, what+" attribute", a)
		return
	case rc.v.f.Table.IsKeyAttribute(a):
		rc.add(at, "%s: rules may not write %s, a key attribute: keys are how items are found; write a plain attribute", what, a)
		return
	case a == e.e.TypeAttribute:
		rc.add(at, "%s: rules may not write %s, %s's type attribute", what, a, e.e.Name)
		return
	case !e.decl[a]:
		known := sortedAttrs(e.decl)
		rc.add(at, "%s: %s does not declare attribute %q%s; add it to %s's attributes", what, e.e.Name, a, suggest(a, known), e.e.Name)
		return
	}
	io := &rc.v.io[rc.i]
	io.writes = append(io.writes, attrRef{e.e.Name, a})
	io.writePos = append(io.writePos, at)
}

// watch records that the rule reacts to changes of attribute a of entity e.
func (rc ruleCheck) watch(e *entityInfo, a string) {
	if e != nil && a != "" {
		rc.v.io[rc.i].watches = append(rc.v.io[rc.i].watches, attrRef{e.e.Name, a})
	}
}

// option checks an enumerated option; "" is its default.
func (rc ruleCheck) option(field, val string, allowed []string) {
	if val == "" {
		return
	}
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	rc.add(rc.pos(string(rc.r.Kind)+"."+field, string(rc.r.Kind)), "%s %q is not one of %s (default %s)%s", field, val, strings.Join(allowed, ", "), allowed[0], suggest(val, allowed))
}

// checkSetPairs checks a kind's set: each target attribute is written on dst, and each
// source attribute is read from (and watched on) src, in the order written.
func (rc ruleCheck) checkSetPairs(kind string, set map[string]string, setOrder []string, src, dst *entityInfo) {
	order := setOrder
	if len(order) != len(set) {
		order = sortedKeys(set)
	}
	for _, t := range order {
		p := rc.pos(kind+".set."+t, kind+".set", kind)
		rc.write(dst, t, p, kind+".set "+t)
		if kind == string(KindLatest) {
			rc.readSetSource(src, set[t], p, kind+".set "+t)
			continue
		}
		if _, isVar := KeyVar(set[t]); isVar {
			rc.add(p, "%s.set %s: %s takes attributes; a key variable such as %s is a set source of latest and top only: declare it in %s's attributes and store it on the items", kind, t, kind, set[t], entityName(src))
			continue
		}
		rc.read(src, set[t], p, kind+".set "+t)
		rc.watch(src, set[t])
	}
}

// readSetSource checks a latest or top set source: an attribute of the source (read and
// watched), or "{name}", a variable of its keys.
func (rc ruleCheck) readSetSource(src *entityInfo, a string, at Pos, what string) {
	name, isVar := KeyVar(a)
	if !isVar {
		rc.read(src, a, at, what)
		rc.watch(src, a)
		return
	}
	if src == nil || src.broken() {
		return
	}
	if _, _, ok := keyVarOf(src, name); !ok {
		var vars []string
		for _, k := range keyOrder(src.e) {
			if t := src.tmpl[k]; t != nil {
				vars = append(vars, t.Vars()...)
			}
		}
		rc.add(at, "%s: %s is not a variable of %s's keys%s; use one of: %s", what, a, src.e.Name, suggest(name, vars), strings.Join(vars, ", "))
	}
}

func entityName(e *entityInfo) string {
	if e == nil {
		return "the source"
	}
	return e.e.Name
}

func (rc ruleCheck) checkCopy(c *Copy) {
	src := rc.entity("copy.from", c.From, "source")
	dst := rc.entity("copy.to", c.To, "target")
	if len(c.Set) == 0 {
		rc.add(rc.pos("copy.set", "copy"), "copy needs set: target attribute: source attribute pairs, e.g. set: {userName: name}")
	}
	rc.checkSetPairs("copy", c.Set, c.SetOrder, src, dst)
	rc.option("onSourceDelete", c.OnSourceDelete, onSourceDeleteValues)
	viaKnown := true
	if c.Via != "" && c.Via != ViaKey && c.Via != ViaTable {
		if _, ok := rc.v.f.Table.Index(c.Via); !ok {
			viaKnown = false
			ways := rc.v.ways()
			rc.add(rc.pos("copy.via"), "via %q is not key, table or an index of the table%s; use one of: %s",
				c.Via, suggest(c.Via, ways), strings.Join(ways, ", "))
		}
	}
	if src == nil || dst == nil || src.broken() || dst.broken() {
		return // unknown entities or variables: their problem comes first
	}
	if rc.bucketTarget(dst, "copy.to") {
		return // its keys cannot be rendered per source: the bucket is the problem
	}
	if viaKnown {
		rc.checkCopyVia(c, src, dst)
	}
	rc.checkPullOnInsert(src, dst)
}

// checkPullOnInsert checks the way back: a target inserted later is filled from its source,
// read by primary key, so the target must hold every variable of the source's pk and sk.
func (rc ruleCheck) checkPullOnInsert(src, dst *entityInfo) {
	spec := rc.v.f.Table
	if tmpls, miss := gaps(src, []string{spec.PartitionKey, spec.SortKey}, dst.vars); len(miss) > 0 {
		rc.add(rc.pos("copy.to", "copy"), "%s cannot supply %s of %s's %s, needed to fill a newly inserted %s from its %s (pull on insert): %sadd %s to %s's attributes or keys (%s)",
			dst.e.Name, setList(miss), src.e.Name, tmpls, dst.e.Name, src.e.Name, renameOr(src, dst, miss), strings.Join(miss, ", "), dst.e.Name, hasVars(dst))
	}
}

// gaps checks the templates of e on the key attributes keyAttrs against the variables
// another entity has. It returns the templates that need more, as text (`pk "X#{a}" and
// sk "Y#{b}"`), and the variables missing, in order without repeats.
// Absent templates are skipped: they are reported on the entity.
func gaps(e *entityInfo, keyAttrs []string, have map[string]bool) (string, []string) {
	var tmpls, miss []string
	seen := map[string]bool{}
	for _, k := range keyAttrs {
		t := e.tmpl[k]
		if k == "" || t == nil {
			continue
		}
		m := missing(t.Vars(), have)
		if len(m) == 0 {
			continue
		}
		tmpls = append(tmpls, fmt.Sprintf("%s %q", k, t.String()))
		for _, name := range m {
			if !seen[name] {
				seen[name] = true
				miss = append(miss, name)
			}
		}
	}
	return strings.Join(tmpls, " and "), miss
}

// needs puts the verb after templates as gaps lists them.
func needs(tmpls string) string {
	if strings.Contains(tmpls, `" and `) {
		return tmpls + " need"
	}
	return tmpls + " needs"
}

func (rc ruleCheck) checkMirror(m *Mirror) {
	src := rc.entity("mirror.from", m.From, "source")
	dst := rc.entity("mirror.to", m.To, "mirror")
	if len(m.Attributes) == 0 {
		rc.add(rc.pos("mirror.attributes", "mirror"), "mirror needs attributes: the source attributes each mirror item holds, e.g. attributes: [role, joinedAt]")
	}
	for i, a := range m.Attributes {
		p := rc.pos(fmt.Sprintf("mirror.attributes.%d", i), "mirror.attributes", "mirror")
		rc.read(src, a, p, "mirror attribute")
		rc.write(dst, a, p, "mirror attribute")
		rc.watch(src, a)
	}
	if src == nil || dst == nil || src.broken() || dst.broken() || rc.bucketTarget(dst, "mirror.to") {
		return
	}
	// A mirror item is created from its source, so the source renders every key it has.
	if tmpls, miss := gaps(dst, keyOrder(dst.e), src.vars); len(miss) > 0 {
		rc.add(rc.pos("mirror.to", "mirror"), "%s's %s %s, which %s does not have: mirror keys are rendered from the source; %sadd %s to %s's attributes (%s)",
			dst.e.Name, needs(tmpls), setList(miss), src.e.Name, renameOr(dst, src, miss), strings.Join(miss, ", "), src.e.Name, hasVars(src))
	}
}

func (rc ruleCheck) checkAgg(a *Aggregate) {
	k := string(rc.r.Kind)
	of := rc.entity(k+".of", a.Of, "counted")
	into := rc.entity(k+".into", a.Into, "target")
	switch {
	case rc.r.Kind == KindLatest:
		rc.checkLatest(a, of, into)
	case rc.r.Kind == KindTop && a.Attribute == "":
		rc.add(rc.pos("top.attribute", "top"), "top needs attribute: the list attribute of %s that holds the entries, e.g. attribute: recentComments", orName(a.Into, "the target"))
	case a.Attribute == "":
		rc.add(rc.pos(k+".attribute", k), "%s needs attribute: the attribute of %s that holds the result", k, orName(a.Into, "the target"))
	default:
		rc.write(into, a.Attribute, rc.pos(k+".attribute", k), k+".attribute")
	}
	switch {
	case rc.r.Kind == KindSum && a.Value == "":
		rc.add(rc.pos("sum.value", "sum"), "sum needs value: the number attribute of %s to add up", orName(a.Of, "the summed entity"))
	case rc.r.Kind == KindSum:
		rc.read(of, a.Value, rc.pos("sum.value", "sum"), "sum.value")
		rc.watch(of, a.Value)
	case rc.r.Kind == KindDistinct && a.Value == "":
		rc.add(rc.pos("distinct.value", "distinct"), "distinct needs value: the attribute of %s whose different values are counted, or \"{name}\" for a variable of its keys, e.g. value: userId", orName(a.Of, "the counted entity"))
	case rc.r.Kind == KindDistinct:
		rc.readSetSource(of, a.Value, rc.pos("distinct.value", "distinct"), "distinct.value")
	case rc.r.Kind == KindLatest:
		// by and set are checked by checkLatest
	case rc.r.Kind == KindTop:
		rc.checkTop(a, of)
	case rc.r.Kind.Extreme() && a.Value == "":
		rc.add(rc.pos(k+".value", k), "%s needs value: the number or string attribute of %s to compare", k, orName(a.Of, "the source entity"))
	case rc.r.Kind.Extreme():
		rc.read(of, a.Value, rc.pos(k+".value", k), k+".value")
		rc.watch(of, a.Value)
	case a.Value != "" && rc.r.Kind == KindCount:
		rc.add(rc.pos(k, k), "count has no value: it adds 1 per item; use sum to add up an attribute")
	}
	order := a.WhereOrder
	if len(order) != len(a.Where) {
		order = sortedKeys(a.Where)
	}
	for _, w := range order {
		p := rc.pos(k+".where."+w, k+".where", k)
		rc.read(of, w, p, "where "+w)
		rc.watch(of, w)
	}
	for i, alt := range a.WhereAny {
		for _, w := range alt.Order {
			p := rc.pos(fmt.Sprintf("%s.where.any[%d].%s", k, i+1, w), k+".where.any", k+".where", k)
			rc.read(of, w, p, "where any "+w)
			rc.watch(of, w)
		}
	}
	rc.option("onExpiry", a.OnExpiry, onExpiryValues)
	rc.option("missingTarget", a.MissingTarget, missingTargetValues)
	rc.option("exactlyOnce", a.ExactlyOnce, exactlyOnceValues)
	if a.ExactlyOnce == ExactlyOnceRelay && !RelayAllowed(rc.v.f.Table) {
		rc.add(rc.pos(k+".exactlyOnce", k), "exactlyOnce relay needs a table with a sort key and at least one local index (they keep a target's partition, and so its relay items' records, on one stream shard in order): add a local index, or use exactlyOnce: transaction")
	}
	rc.checkTTLField(a)
	if of == nil || into == nil || of.broken() || into.broken() {
		return
	}
	rc.checkSplit(k, a, of, into)
	if rc.r.Kind.Extreme() {
		rc.checkExtreme(a, of, into)
	}
	rc.checkAggBucket(a, into)
	spec := rc.v.f.Table
	pksk := []string{spec.PartitionKey, spec.SortKey}
	// The variables that pick the target are watched: changing them moves the item from one
	// target to another.
	for _, key := range pksk {
		if t := into.tmpl[key]; key != "" && t != nil {
			for _, name := range t.Vars() {
				rc.watch(of, name)
			}
		}
	}
	// A bucketed variable the source lacks gets its own message: it is the source's time.
	if tmpls, miss := gaps(into, pksk, rc.bucketGaps(into, of, pksk)); len(miss) > 0 {
		rc.add(rc.pos(k+".into", k), "%s's %s %s, which %s does not have: each %s must name the %s it adds to; %sadd %s to %s's attributes (%s)",
			into.e.Name, needs(tmpls), setList(miss), of.e.Name, of.e.Name, into.e.Name, renameOr(into, of, miss), strings.Join(miss, ", "), of.e.Name, hasVars(of))
	}
}

func orName(name, fallback string) string {
	if name == "" {
		return fallback
	}
	return name
}

// indexNames lists the table's secondary indexes.
func indexNames(f *File) []string {
	var out []string
	for _, l := range f.Table.LocalIndexes {
		out = append(out, l.Name)
	}
	for _, g := range f.Table.GlobalIndexes {
		out = append(out, g.Name)
	}
	return out
}

// checkSplit checks a hot target's split: at most MaxSplit parts, in transaction mode (any
// batch may add to any part: no part needs its records in one order), for a target fed from
// other partitions (one in its sources' partition takes no more writes than they do).
func (rc ruleCheck) checkSplit(k string, a *Aggregate, of, into *entityInfo) {
	if a.Split <= 1 {
		return
	}
	pk := rc.v.f.Table.PartitionKey
	at := rc.pos(k+".split", k)
	switch {
	case a.Split > MaxSplit:
		rc.add(at, "split %d is more than %d parts: each part's records copy the target, so more parts would bring the copies near one item's write limit; %d parts take some %d transactions a second", a.Split, MaxSplit, MaxSplit, MaxSplit*500)
	case a.ExactlyOnce == ExactlyOnceRelay:
		rc.add(at, "split needs exactlyOnce: transaction (every relay item of a target shares one partition, which would stay as hot as the target); remove exactlyOnce: relay")
	case into.tmpl[pk] != nil && of.tmpl[pk] != nil && into.tmpl[pk].String() == of.tmpl[pk].String():
		rc.add(at, "split is for a target fed from many partitions: %s shares its partition with its %s sources, which take no more writes than it does; remove split", into.e.Name, of.e.Name)
	}
}
