package rulesdiff

import (
	"fmt"
	"sort"
	"strings"

	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
)

// compareEntities lists the entities added, removed or changed, in the new file's order
// then the removed ones. A change to a key template, the sparse keys or the type changes
// which items the entity recognises; a change to its attribute list alone does not.
func compareEntities(oldSet, newSet *rules.Set) []Entity {
	olds := map[string]*rules.EntityType{}
	for _, e := range oldSet.Entities {
		olds[e.Name] = e
	}
	news := map[string]bool{}
	var out []Entity
	for _, n := range newSet.Entities {
		news[n.Name] = true
		o := olds[n.Name]
		if o == nil {
			out = append(out, Entity{Name: n.Name, Status: Added, Rules: rulesOf(newSet, n.Name)})
			continue
		}
		ok, nk := keyMap(o), keyMap(n)
		var fs []string
		for _, attr := range unionKeys(ok, nk) {
			switch {
			case ok[attr] == nk[attr]:
			case ok[attr] == "":
				fs = append(fs, fmt.Sprintf("%s: added %s", attr, nk[attr]))
			case nk[attr] == "":
				fs = append(fs, fmt.Sprintf("%s: removed %s", attr, ok[attr]))
			default:
				fs = append(fs, fmt.Sprintf("%s: %s -> %s", attr, ok[attr], nk[attr]))
			}
		}
		if ot, nt := typeOf(o), typeOf(n); ot != nt {
			fs = append(fs, fmt.Sprintf("type: %s -> %s", ot, nt))
		}
		matching := len(fs) > 0
		added, removed := listChanges(o.Attributes, n.Attributes)
		if len(added) > 0 {
			fs = append(fs, "attributes added: "+strings.Join(added, ", "))
		}
		if len(removed) > 0 {
			fs = append(fs, "attributes removed: "+strings.Join(removed, ", "))
		}
		if len(fs) > 0 {
			out = append(out, Entity{Name: n.Name, Status: Changed, Fields: fs, Matching: matching, Rules: rulesOf(newSet, n.Name)})
		}
	}
	for _, o := range oldSet.Entities {
		if !news[o.Name] {
			out = append(out, Entity{Name: o.Name, Status: Removed})
		}
	}
	return out
}

// keyMap is an entity's key templates by attribute, a sparse one marked as such.
func keyMap(e *rules.EntityType) map[string]string {
	m := map[string]string{}
	for _, k := range e.Keys {
		v := fmt.Sprintf("%q", k.T.String())
		if k.Sparse {
			v += " (sparse)"
		}
		m[k.Attr] = v
	}
	return m
}

func unionKeys(a, b map[string]string) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func typeOf(e *rules.EntityType) string {
	if e.TypeAttr == "" {
		return "none"
	}
	return fmt.Sprintf("%s = %q", e.TypeAttr, e.TypeEquals)
}

// rulesOf returns the names of the rules of s that read or write the entity.
func rulesOf(s *rules.Set, entity string) []string {
	var out []string
	for _, r := range s.Compiled() {
		if r.Source.Name == entity || r.Target.Name == entity {
			out = append(out, r.Name)
		}
	}
	return out
}

// compareTable lists the changes of the table's keys, TTL attribute and indexes, and what
// each takes: DynamoDB changes a table's keys and local indexes only by creating a new
// table, and a global index only by adding or removing one (one per update).
func compareTable(old, new *rules.File) []Table {
	o, n := old.Table, new.Table
	var out []Table
	if o.PartitionKey != n.PartitionKey || o.SortKey != n.SortKey {
		out = append(out, Table{What: fmt.Sprintf("table keys: %s -> %s", keysOf(o), keysOf(n)), Order: NewTable,
			Action: "DynamoDB cannot change a table's keys: create a new table and copy the items into it"})
	}
	if o.TTLAttribute != n.TTLAttribute {
		out = append(out, Table{What: fmt.Sprintf("TTL attribute: %s -> %s", orNone(o.TTLAttribute), orNone(n.TTLAttribute)), Order: Setting,
			Action: "deployed with the table (DynamoDB allows one TTL change per hour); items keep expiring by the attribute in force"})
	}
	ol, nl := localIndexes(o), localIndexes(n)
	for _, name := range unionKeys(ol, nl) {
		if ol[name] != nl[name] {
			out = append(out, Table{What: "local index " + name + ": " + orNone(ol[name]) + " -> " + orNone(nl[name]), Order: NewTable,
				Action: "local indexes exist only from the table's creation: create a new table and copy the items into it", index: name})
		}
	}
	og, ng := globalIndexes(o), globalIndexes(n)
	for _, name := range unionKeys(og, ng) {
		switch {
		case og[name] == ng[name]:
		case og[name] == "":
			out = append(out, Table{What: "global index " + name + " added: " + ng[name], Order: BeforeDeploy,
				Action: "deploy the table first and wait until the index is ACTIVE (it fills from the table's items; CloudFormation adds one global index per update)", index: name})
		case ng[name] == "":
			out = append(out, Table{What: "global index " + name + " removed: " + og[name], Order: AfterDeploy,
				Action: "remove it after the stream processor with the new rules runs: the old rules may still query it", index: name})
		default:
			out = append(out, Table{What: "global index " + name + ": " + og[name] + " -> " + ng[name], Order: BeforeDeploy,
				Action: "DynamoDB cannot change a global index in place: add the new one under another name, point the rules at it, deploy, then remove the old one", index: name})
		}
	}
	return out
}

func keysOf(s table.Spec) string {
	if s.SortKey == "" {
		return s.PartitionKey
	}
	return s.PartitionKey + "/" + s.SortKey
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func projection(p table.Projection, include []string) string {
	pr := strings.ToUpper(string(p))
	if pr == "" {
		pr = string(table.ProjectAll)
	}
	if pr == string(table.ProjectInclude) {
		pr += " " + list(include)
	}
	return pr
}

func localIndexes(s table.Spec) map[string]string {
	m := map[string]string{}
	for _, l := range s.LocalIndexes {
		m[l.Name] = fmt.Sprintf("sort key %s, %s", l.SortKey, projection(l.Projection, l.Include))
	}
	return m
}

func globalIndexes(s table.Spec) map[string]string {
	m := map[string]string{}
	for _, g := range s.GlobalIndexes {
		k := g.PartitionKey
		if g.SortKey != "" {
			k += "/" + g.SortKey
		}
		m[g.Name] = fmt.Sprintf("keys %s, %s", k, projection(g.Projection, g.Include))
	}
	return m
}
