package rules

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/denorm/denorm/internal/table"
)

// Allowed fields, in the order messages list them.
var (
	fileFields        = []string{"version", "table", "entities", "rules"}
	tableFields       = []string{"partitionKey", "sortKey", "ttlAttribute", "localIndexes", "globalIndexes"}
	localIndexFields  = []string{"name", "sortKey", "projection", "include"}
	globalIndexFields = []string{"name", "partitionKey", "sortKey", "projection", "include"}
	typeFields        = []string{"attribute", "equals"}
	entityFields      = []string{"type", "attributes", "sparse"} // besides key templates
	ruleFields        = append([]string{"name"}, kindNames()...)
	copyFields        = []string{"from", "to", "via", "set", "onSourceDelete"}
	mirrorFields      = []string{"from", "to", "attributes"}
	countFields       = []string{"of", "into", "attribute", "where", "onExpiry", "missingTarget", "ttl", "exactlyOnce", "split"}
	sumFields         = []string{"of", "into", "value", "attribute", "where", "onExpiry", "missingTarget", "ttl", "exactlyOnce", "split"}
	distinctFields    = []string{"of", "into", "value", "attribute", "where", "onExpiry", "missingTarget", "exactlyOnce"}
	extremeFields     = []string{"of", "into", "value", "attribute", "where", "ttl"}
	latestFields      = []string{"of", "into", "by", "set", "where", "ttl"}
	topFields         = []string{"of", "into", "by", "n", "attribute", "set", "entryBytes", "where", "ttl"}
)

// decodeFile fills d.f from the root node.
func (d *yamlDecoder) decodeFile(root *yaml.Node) {
	f := d.f
	f.Fields = map[string]Pos{}
	f.Table = table.Default()
	for _, e := range d.entries(root, "", "the file") {
		f.Fields[e.key] = e.valuePos
		switch e.key {
		case "version":
			f.Version = -1 // present but not a whole number: Validate says what it must be
			if e.valNode.Kind == yaml.ScalarNode && e.valNode.Tag == "!!int" {
				if v, err := strconv.Atoi(e.valNode.Value); err == nil && v > 0 {
					f.Version = v
				}
			}
		case "table":
			d.decodeTable(e.valNode)
		case "entities":
			d.decodeEntities(e.valNode)
		case "rules":
			d.decodeRules(e.valNode)
		default:
			d.unknownField(e, "", "the file", fileFields)
		}
	}
}

// decodeTable reads an explicit table spec. It replaces the default as a whole, so that
// what the file says is the whole layout CDK and the local runner create.
func (d *yamlDecoder) decodeTable(n *yaml.Node) {
	f := d.f
	f.TablePos = posOf(n)
	f.TableFields = map[string]Pos{}
	es := d.entries(n, "table", "table")
	if n.Kind != yaml.MappingNode {
		return // reported; the default layout stands in so entities can still be checked
	}
	f.Table = table.Spec{}
	for _, e := range es {
		f.TableFields[e.key] = e.valuePos
		switch e.key {
		case "partitionKey":
			f.Table.PartitionKey, _ = d.str(e.valNode, "table", "partitionKey")
		case "sortKey":
			f.Table.SortKey, _ = d.str(e.valNode, "table", "sortKey")
		case "ttlAttribute":
			f.Table.TTLAttribute, _ = d.str(e.valNode, "table", "ttlAttribute")
		case "localIndexes":
			d.eachItem(e.valNode, "table", "localIndexes", func(i int, item *yaml.Node) {
				f.Table.LocalIndexes = append(f.Table.LocalIndexes, localOf(d.decodeIndex(item, fmt.Sprintf("localIndexes.%d", i), false)))
			})
		case "globalIndexes":
			d.eachItem(e.valNode, "table", "globalIndexes", func(i int, item *yaml.Node) {
				f.Table.GlobalIndexes = append(f.Table.GlobalIndexes, d.decodeIndex(item, fmt.Sprintf("globalIndexes.%d", i), true))
			})
		default:
			d.unknownField(e, "table", "table", tableFields)
		}
	}
}

// eachItem calls fn for each item of a sequence node.
func (d *yamlDecoder) eachItem(n *yaml.Node, ctx, what string, fn func(i int, item *yaml.Node)) {
	if n.Kind != yaml.SequenceNode {
		d.drop(ctx, n, "%s must be a list, found %s", what, describe(n))
		return
	}
	for i, item := range n.Content {
		if item = d.resolve(item); item == nil {
			return
		}
		fn(i, item)
	}
}

// localOf narrows an index read with the global fields to a local index.
func localOf(g table.GlobalIndex) table.LocalIndex {
	return table.LocalIndex{Name: g.Name, SortKey: g.SortKey, Projection: g.Projection, Include: g.Include}
}

// decodeIndex reads one index; local indexes are read with the same code and narrowed.
func (d *yamlDecoder) decodeIndex(n *yaml.Node, path string, global bool) table.GlobalIndex {
	var idx table.GlobalIndex
	d.f.TableFields[path] = posOf(n)
	allowed := localIndexFields
	if global {
		allowed = globalIndexFields
	}
	what := "table " + path
	for _, e := range d.entries(n, "table", what) {
		d.f.TableFields[path+"."+e.key] = e.valuePos
		switch e.key {
		case "name":
			idx.Name, _ = d.str(e.valNode, "table", what+".name")
		case "partitionKey":
			if !global {
				d.unknownField(e, "table", what+" (a local index shares the table's partition key)", allowed)
				continue
			}
			idx.PartitionKey, _ = d.str(e.valNode, "table", what+".partitionKey")
		case "sortKey":
			idx.SortKey, _ = d.str(e.valNode, "table", what+".sortKey")
		case "projection":
			// DynamoDB spells projections in capitals; the lower case of the design sketch
			// (projection: all) is accepted too.
			p, _ := d.str(e.valNode, "table", what+".projection")
			idx.Projection = table.Projection(strings.ToUpper(p))
		case "include":
			var at []Pos
			idx.Include, at = d.strList(e.valNode, "table", what+".include")
			for i, p := range at {
				d.f.TableFields[fmt.Sprintf("%s.include.%d", path, i)] = p
			}
		default:
			d.unknownField(e, "table", what, allowed)
		}
	}
	return idx
}

// decodeEntities reads the entities mapping. Any field other than type, attributes and
// sparse is a key attribute with its template; Validate checks it names a key of the table.
func (d *yamlDecoder) decodeEntities(n *yaml.Node) {
	for _, e := range d.entries(n, "", "entities") {
		ent := Entity{Name: e.key, Pos: e.keyPos, Keys: map[string]string{}, Fields: map[string]Pos{}}
		ctx := fmt.Sprintf("entity %q", e.key)
		if e.valNode.Kind != yaml.MappingNode {
			d.drop(ctx, e.valNode, "must be a mapping of key templates, type and attributes, e.g. {pk: \"USER#{userId}\", sk: PROFILE}, found %s", describe(e.valNode))
			d.dropped[e.keyPos] = true
			d.f.Entities = append(d.f.Entities, ent)
			continue
		}
		for _, fe := range d.entries(e.valNode, ctx, "entity "+e.key) {
			ent.Fields[fe.key] = fe.valuePos
			switch fe.key {
			case "type":
				d.decodeType(&ent, fe.valNode, ctx)
			case "attributes":
				var at []Pos
				ent.Attributes, at = d.strList(fe.valNode, ctx, "attributes")
				for i, p := range at {
					ent.Fields[fmt.Sprintf("attributes.%d", i)] = p
				}
			case "sparse":
				var at []Pos
				ent.Sparse, at = d.strList(fe.valNode, ctx, "sparse")
				for i, p := range at {
					ent.Fields[fmt.Sprintf("sparse.%d", i)] = p
				}
			default:
				if s, ok := d.str(fe.valNode, ctx, "key template "+fe.key); ok {
					ent.Keys[fe.key] = s
					ent.KeyOrder = append(ent.KeyOrder, fe.key)
				}
			}
		}
		d.f.Entities = append(d.f.Entities, ent)
	}
}

func (d *yamlDecoder) decodeType(ent *Entity, n *yaml.Node, ctx string) {
	for _, e := range d.entries(n, ctx, "type") {
		ent.Fields["type."+e.key] = e.valuePos
		switch e.key {
		case "attribute":
			ent.TypeAttribute, _ = d.str(e.valNode, ctx, "type.attribute")
		case "equals":
			ent.TypeEquals, _ = d.str(e.valNode, ctx, "type.equals")
		default:
			d.unknownField(e, ctx, "type", typeFields)
		}
	}
}

// kindNames is rules.Kinds as strings: the keys that give a rule its kind.
func kindNames() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k)
	}
	return out
}
