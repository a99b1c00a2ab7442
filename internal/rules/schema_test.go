package rules

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"
)

// compileSchema loads rules/schema.json, the schema editors use.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join("..", "..", "rules", "schema.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("schema.json is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("compiling schema.json: %v", err)
	}
	return s
}

// yamlToJSONValue decodes YAML into the values the validator expects (those of a JSON
// decoder), going through JSON so numbers and maps have the same types.
func yamlToJSONValue(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSchemaAcceptsExampleRules(t *testing.T) {
	s := compileSchema(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "rules", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rules/*.yaml found (%v)", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(yamlToJSONValue(t, data)); err != nil {
				t.Errorf("%s does not match schema.json:\n%v", path, err)
			}
			if _, err := Parse(path, data); err != nil {
				t.Errorf("%s does not validate:\n%v", path, err)
			}
		})
	}
}

// The schema catches in the editor the shape mistakes the loader reports.
func TestSchemaRejectsShapeMistakes(t *testing.T) {
	s := compileSchema(t)
	const base = "version: 1\nentities:\n  User: {pk: \"USER#{userId}\", sk: PROFILE, attributes: [name]}\n"
	for name, doc := range map[string]string{
		"unknown top-level key": base + "rulez: []\n",
		"version 2":             "version: 2\nentities: {}\n",
		"two kinds":             base + "rules:\n  - {name: a, copy: {from: User, to: User, set: {x: name}}, count: {of: User, into: User, attribute: x}}\n",
		"no kind":               base + "rules:\n  - {name: a}\n",
		"unknown copy field":    base + "rules:\n  - {name: a, copy: {from: User, to: User, sett: {x: name}}}\n",
		"bad onSourceDelete":    base + "rules:\n  - {name: a, copy: {from: User, to: User, set: {x: name}, onSourceDelete: nuke}}\n",
		"bad projection":        "version: 1\ntable: {partitionKey: pk, globalIndexes: [{name: g, partitionKey: gpk, projection: SOME}]}\nentities: {}\n",
		"reserved attribute":    "version: 1\nentities:\n  User: {pk: \"USER#{userId}\", attributes: [_dnx]}\n",
		"type without equals":   "version: 1\nentities:\n  Task: {pk: \"T#{id}\", type: {attribute: e}}\n",
		"bad rule name":         base + "rules:\n  - {name: \"a b\", mirror: {from: User, to: User, attributes: [name]}}\n",
		"unknown where test":    base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {name: {gtt: 1}}}}\n",
		"where in not a list":   base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {name: {in: ok}}}}\n",
		"where exists a string": base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {name: {exists: \"no\"}}}}\n",
		"where empty tests":     base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {name: {}}}}\n",
		"where any not a list":  base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {any: {name: ok}}}}\n",
		"where any empty":       base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {any: []}}}\n",
		"where any nested":      base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {any: [{any: [{name: ok}]}]}}}\n",
		"where all":             base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {all: [{name: ok}]}}}\n",
		"where any bad test":    base + "rules:\n  - {name: a, count: {of: User, into: User, attribute: x, where: {any: [{name: {gtt: 1}}]}}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.Validate(yamlToJSONValue(t, []byte(doc))); err == nil {
				t.Errorf("schema accepted:\n%s", doc)
			}
		})
	}
}

// A where with an any, as docs/rules.md writes it, is accepted.
func TestSchemaAcceptsWhereAny(t *testing.T) {
	doc := "version: 1\nentities:\n  U: {pk: \"U#{id}\", sk: U, attributes: [c, s, p, pinned]}\n" +
		"rules:\n  - {name: a, count: {of: U, into: U, attribute: c, where: {s: open, any: [{p: {gte: 3}}, {pinned: true, p: {gte: 1}}]}}}\n"
	if err := compileSchema(t).Validate(yamlToJSONValue(t, []byte(doc))); err != nil {
		t.Errorf("schema refused:\n%s\n%v", doc, err)
	}
}
