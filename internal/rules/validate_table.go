package rules

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/internal/table"
)

// checkTable repeats table.Spec.Validate's checks with positions (Spec.Validate returns
// plain errors, without the file's lines), plus what only the rules language cares about:
// "key" and "table" are ways to find copy targets, so no index may take those names.
func (v *validator) checkTable() {
	s := v.f.Table
	tf := v.f.TableFields
	tpos := at(v.f.Fields, v.f.TablePos, "table")
	pos := func(paths ...string) Pos { return at(tf, tpos, paths...) }
	const ctx = "table"
	if s.PartitionKey == "" {
		v.add(tpos, ctx, "partitionKey is required: name the table's partition key attribute, e.g. partitionKey: pk")
	}
	if s.SortKey == "" && len(s.LocalIndexes) > 0 {
		v.add(pos("localIndexes"), ctx, "local secondary indexes need a table sort key: add sortKey (e.g. sortKey: sk) or remove localIndexes")
	}
	if len(s.LocalIndexes) > table.MaxLocalIndexes {
		v.add(pos("localIndexes"), ctx, "%d local secondary indexes, DynamoDB allows at most %d", len(s.LocalIndexes), table.MaxLocalIndexes)
	}
	if len(s.GlobalIndexes) > table.MaxGlobalIndexes {
		v.add(pos("globalIndexes"), ctx, "%d global secondary indexes, DynamoDB allows at most %d", len(s.GlobalIndexes), table.MaxGlobalIndexes)
	}
	names := map[string]bool{}
	checkName := func(path, n string) {
		p := pos(path+".name", path)
		switch {
		case n == "":
			v.add(p, ctx, "an index needs a name")
		case n == "table" || n == "key":
			v.add(p, ctx, "index name %q is taken: via: %s means another way to find copy targets; rename the index", n, n)
		case names[n]:
			v.add(p, ctx, "index name %q is used twice; index names must be unique", n)
		default:
			v.reserved(p, ctx, "index name", n)
		}
		names[n] = true
	}
	checkProj := func(path, idx string, p table.Projection, inc []string) {
		at := pos(path+".projection", path)
		switch p {
		case "", table.ProjectAll, table.ProjectKeysOnly:
			if len(inc) > 0 {
				v.add(pos(path+".include", path), ctx, "index %q lists include attributes but its projection is %s: set projection: INCLUDE or drop include", idx, projName(p))
			}
		case table.ProjectInclude:
			if len(inc) == 0 {
				v.add(at, ctx, "index %q has projection INCLUDE but no include attributes: list them under include", idx)
			}
		default:
			v.add(at, ctx, "index %q has projection %q: use ALL, KEYS_ONLY or INCLUDE", idx, p)
		}
		for i, a := range inc {
			v.reserved(pos(fmt.Sprintf("%s.include.%d", path, i), path), ctx, "include attribute", a)
		}
	}
	for i, l := range s.LocalIndexes {
		path := fmt.Sprintf("localIndexes.%d", i)
		checkName(path, l.Name)
		switch {
		case l.SortKey == "":
			v.add(pos(path+".sortKey", path), ctx, "local index %q needs a sortKey (e.g. %s_sk)", l.Name, l.Name)
		case l.SortKey == s.SortKey || l.SortKey == s.PartitionKey:
			v.add(pos(path+".sortKey", path), ctx, "local index %q sort key %q repeats a table key; give it its own attribute", l.Name, l.SortKey)
		}
		checkProj(path, l.Name, l.Projection, l.Include)
	}
	for i, g := range s.GlobalIndexes {
		path := fmt.Sprintf("globalIndexes.%d", i)
		checkName(path, g.Name)
		if g.PartitionKey == "" {
			v.add(pos(path+".partitionKey", path), ctx, "global index %q needs a partitionKey (e.g. %spk)", g.Name, g.Name)
		}
		checkProj(path, g.Name, g.Projection, g.Include)
	}
	for _, a := range s.KeyAttributes() {
		if v.reserved(v.keyAttrPos(a), ctx, "key attribute", a) {
			continue
		}
		if contains(entityFields, a) {
			// In an entity, `sparse: ...` is the sparse list, not this key's template.
			v.add(v.keyAttrPos(a), ctx, "key attribute %q has the name of an entity field (%s), so no entity could give it a template: rename it",
				a, strings.Join(entityFields, ", "))
		}
	}
	if s.TTLAttribute != "" {
		p := pos("ttlAttribute")
		if !v.reserved(p, ctx, "ttlAttribute", s.TTLAttribute) && s.IsKeyAttribute(s.TTLAttribute) {
			v.add(p, ctx, "ttlAttribute %q is a key attribute; TTL needs a plain number attribute such as ttl", s.TTLAttribute)
		}
	}
}

// keyAttrPos finds where the table spec names key attribute a.
func (v *validator) keyAttrPos(a string) Pos {
	s, tf := v.f.Table, v.f.TableFields
	tpos := at(v.f.Fields, v.f.TablePos, "table")
	switch a {
	case s.PartitionKey:
		return at(tf, tpos, "partitionKey")
	case s.SortKey:
		return at(tf, tpos, "sortKey")
	}
	for i, l := range s.LocalIndexes {
		if l.SortKey == a {
			return at(tf, tpos, fmt.Sprintf("localIndexes.%d.sortKey", i))
		}
	}
	for i, g := range s.GlobalIndexes {
		if g.PartitionKey == a {
			return at(tf, tpos, fmt.Sprintf("globalIndexes.%d.partitionKey", i))
		}
		if g.SortKey == a {
			return at(tf, tpos, fmt.Sprintf("globalIndexes.%d.sortKey", i))
		}
	}
	return tpos
}

func projName(p table.Projection) table.Projection {
	if p == "" {
		return table.ProjectAll
	}
	return p
}
