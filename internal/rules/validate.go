package rules

import (
	"fmt"
	"sort"
	"strings"

	"github.com/denorm/denorm/internal/keys"
)

// Validate checks a File and returns every problem at once, in file order (nil when the
// file is valid). It is pure: no I/O, and f is not modified. Positions come from the Fields
// maps Parse fills; a hand-built File without them gets problems without positions.
func Validate(f *File) Problems {
	v := newValidator(f)
	v.checkVersion()
	v.checkTable()
	v.checkEntities()
	v.checkRules()
	v.checkWriters()
	v.checkBucketTTLs()
	v.checkCycles()
	v.checkAmbiguity()
	sortProblems(v.probs)
	return v.probs
}

// validator holds what the checks share: the file, the entities by name with their parsed
// templates, and the reads and writes of each rule for the graph checks.
type validator struct {
	f     *File
	probs Problems
	ents  map[string]*entityInfo
	io    []ruleIO // by rule index
}

// entityInfo is an entity with its templates parsed once.
type entityInfo struct {
	e    *Entity
	tmpl map[string]*keys.Template // by key attribute; templates that do not parse are absent
	bad  map[string]error          // key attribute -> parse error
	vars map[string]bool           // "its vars": every template variable and declared attribute
	has  map[string]bool           // what a rule may read: declared attributes, declared key attributes, the type attribute
	decl map[string]bool           // declared attributes: what a rule may write
	// sparse holds the entity's index keys that an item may lack (see Entity.Sparse); names
	// that are no such key are reported by checkSparse and left out.
	sparse map[string]bool
}

// broken reports whether a template of the entity does not parse: its variables are then
// unknown, so checks that need them are skipped (the entity's problem says why).
func (e *entityInfo) broken() bool { return len(e.bad) > 0 }

// attrRef is one attribute of one entity, a node of the write/watch graph.
type attrRef struct{ entity, attr string }

// ruleIO is what a rule writes (with where, for messages) and what it watches.
type ruleIO struct {
	writes   []attrRef
	writePos []Pos
	watches  []attrRef
}

func newValidator(f *File) *validator {
	v := &validator{f: f, ents: map[string]*entityInfo{}, io: make([]ruleIO, len(f.Rules))}
	for i := range f.Entities {
		e := &f.Entities[i]
		if _, dup := v.ents[e.Name]; dup {
			continue // reported by checkEntities; the first one counts
		}
		info := &entityInfo{e: e, tmpl: map[string]*keys.Template{}, bad: map[string]error{},
			vars: map[string]bool{}, has: map[string]bool{}, decl: map[string]bool{}, sparse: map[string]bool{}}
		for _, k := range keyOrder(e) {
			if !f.Table.IsKeyAttribute(k) {
				continue // reported by checkEntities; it is no key, so it recognises nothing
			}
			info.has[k] = true
			t, err := keys.Parse(e.Keys[k])
			if err != nil {
				info.bad[k] = err
				continue
			}
			info.tmpl[k] = t
			for _, name := range t.Vars() {
				info.vars[name] = true
			}
		}
		for _, a := range e.Attributes {
			info.vars[a], info.has[a], info.decl[a] = true, true, true
		}
		if e.TypeAttribute != "" {
			info.has[e.TypeAttribute] = true
		}
		for _, k := range e.Sparse {
			if _, declared := e.Keys[k]; declared && canBeSparse(f.Table, k) {
				info.sparse[k] = true
			}
		}
		v.ents[e.Name] = info
	}
	return v
}

// keyOrder is an entity's key attributes in file order (sorted for hand-built entities).
func keyOrder(e *Entity) []string {
	if len(e.KeyOrder) == len(e.Keys) {
		return e.KeyOrder
	}
	return sortedKeys(e.Keys)
}

func (v *validator) add(at Pos, ctx, format string, args ...any) {
	v.probs = append(v.probs, Problem{File: v.f.Path, Pos: at, Rule: ctx, Msg: fmt.Sprintf(format, args...)})
}

// at returns the position of the first path found in fields, else fallback.
func at(fields map[string]Pos, fallback Pos, paths ...string) Pos {
	for _, p := range paths {
		if pos, ok := fields[p]; ok {
			return pos
		}
	}
	return fallback
}

func entityCtx(name string) string { return fmt.Sprintf("entity %q", name) }

// ruleCtx names a rule in messages: by name, or by its place in the list when it has none.
func ruleCtx(r *Rule, i int) string {
	if r.Name == "" {
		return fmt.Sprintf("rule #%d", i+1)
	}
	return fmt.Sprintf("rule %q", r.Name)
}

func (v *validator) checkVersion() {
	switch v.f.Version {
	case 1:
	case 0:
		v.add(Pos{1, 1}, "", "version is missing: start the file with `version: 1`")
	default:
		v.add(at(v.f.Fields, Pos{1, 1}, "version"), "", "version must be 1, the only version of the rules format this denorm reads")
	}
}

// reserved reports a name that starts with ReservedPrefix; what says what it names.
func (v *validator) reserved(at Pos, ctx, what, name string) bool {
	if strings.HasPrefix(name, ReservedPrefix) {
		v.add(at, ctx, "%s %q starts with %s, which Denorm reserves for its own items and attributes: rename it", what, name, ReservedPrefix)
		return true
	}
	return false
}

// validName reports an entity or rule name that would not survive in keys, attribute names
// and metrics: rule names become part of Denorm's own attribute names.
func (v *validator) validName(at Pos, ctx, what, name string) {
	if name == "" || v.reserved(at, ctx, what+" name", name) {
		return
	}
	for i, r := range name {
		ok := r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok || (i == 0 && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')) {
			v.add(at, ctx, "%s name %q: start with a letter and use letters, digits, '-', '_' and '.' only", what, name)
			return
		}
	}
}

func (v *validator) checkEntities() {
	f := v.f
	spec := f.Table
	first := map[string]Pos{}
	if len(f.Entities) == 0 {
		v.add(at(f.Fields, Pos{1, 1}, "entities"), "", "no entities: declare at least one under entities, e.g. User: {pk: \"USER#{userId}\", sk: PROFILE}")
	}
	keyList := strings.Join(spec.KeyAttributes(), ", ")
	for i := range f.Entities {
		e := &f.Entities[i]
		ctx := entityCtx(e.Name)
		if e.Name == "" {
			v.add(e.Pos, "", "an entity has an empty name")
		}
		if p, dup := first[e.Name]; dup {
			v.add(e.Pos, ctx, "entity name is used twice (first on line %d); rename one", p.Line)
			continue
		}
		first[e.Name] = e.Pos
		v.validName(e.Pos, ctx, "entity", e.Name)
		info := v.ents[e.Name]
		for _, k := range keyOrder(e) {
			pos := at(e.Fields, e.Pos, k)
			if !spec.IsKeyAttribute(k) {
				v.add(pos, ctx, "%q is not a key attribute of the table or its indexes (%s); list plain attributes under attributes%s",
					k, keyList, suggest(k, spec.KeyAttributes()))
				continue
			}
			if err, bad := info.bad[k]; bad {
				v.add(pos, ctx, "bad %s template: %v", k, err)
				continue
			}
			if e.Keys[k] == "" {
				v.add(pos, ctx, "%s template is empty: write the key's shape, e.g. \"%s#{id}\" or a literal", k, strings.ToUpper(e.Name))
				continue
			}
			if p := info.tmpl[k].Prefix(); strings.HasPrefix(p, ReservedPrefix) {
				v.add(pos, ctx, "%s template %q starts with %s, the prefix of Denorm's own items: start it with something else", k, e.Keys[k], ReservedPrefix)
			}
		}
		// A key written with a value that is not a template was reported by Parse already.
		written := func(k string) bool { _, ok := e.Fields[k]; return ok || e.Keys[k] != "" }
		if spec.PartitionKey != "" && !written(spec.PartitionKey) {
			v.add(e.Pos, ctx, "has no %s template: every entity needs one for the table's partition key, e.g. %s: \"%s#{%sId}\"",
				spec.PartitionKey, spec.PartitionKey, strings.ToUpper(e.Name), strings.ToLower(e.Name))
		}
		if spec.SortKey != "" && !written(spec.SortKey) {
			v.add(e.Pos, ctx, "has no %s template: the table has a sort key, so every entity needs one (a literal such as %s: PROFILE will do)",
				spec.SortKey, spec.SortKey)
		}
		v.checkType(e, ctx)
		v.checkAttributes(e, ctx)
		v.checkSparse(e, ctx)
	}
}

func (v *validator) checkType(e *Entity, ctx string) {
	_, written := e.Fields["type"]
	if !written && e.TypeAttribute == "" && e.TypeEquals == "" {
		return
	}
	pos := at(e.Fields, e.Pos, "type")
	if e.TypeAttribute == "" || e.TypeEquals == "" {
		v.add(pos, ctx, "type needs both attribute and equals, e.g. type: {attribute: __edd_e__, equals: %s}", e.Name)
		return
	}
	apos := at(e.Fields, pos, "type.attribute")
	if v.reserved(apos, ctx, "type attribute", e.TypeAttribute) {
		return
	}
	if v.f.Table.IsKeyAttribute(e.TypeAttribute) {
		v.add(apos, ctx, "type attribute %q is a key attribute; name the plain attribute that holds the entity's type", e.TypeAttribute)
	}
}

func (v *validator) checkAttributes(e *Entity, ctx string) {
	seen := map[string]bool{}
	for i, a := range e.Attributes {
		pos := at(e.Fields, e.Pos, fmt.Sprintf("attributes.%d", i), "attributes")
		switch {
		case a == "":
			v.add(pos, ctx, "attributes: an attribute name is empty")
		case seen[a]:
			v.add(pos, ctx, "attribute %q is listed twice", a)
		case v.reserved(pos, ctx, "attribute", a):
		case v.f.Table.IsKeyAttribute(a):
			v.add(pos, ctx, "attribute %q is a key attribute of the table; give it a template (%s: \"...\") instead of listing it", a, a)
		case a == e.TypeAttribute:
			v.add(pos, ctx, "attribute %q is the type attribute; it need not be listed", a)
		}
		seen[a] = true
	}
}

// entityNames lists the declared entities for messages.
func (v *validator) entityNames() []string {
	out := make([]string, 0, len(v.f.Entities))
	for _, e := range v.f.Entities {
		out = append(out, e.Name)
	}
	return out
}

// setList formats variable names for messages: {a, b}.
func setList(names []string) string { return "{" + strings.Join(names, ", ") + "}" }

// missing returns the names not in have, in order.
func missing(names []string, have map[string]bool) []string {
	var out []string
	for _, n := range names {
		if !have[n] {
			out = append(out, n)
		}
	}
	return out
}

// sortedAttrs lists the keys of a set, sorted, for messages.
func sortedAttrs(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
