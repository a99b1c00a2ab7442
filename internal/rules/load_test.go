package rules

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/table"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func TestParseShapeProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []want
	}{
		{"empty file", "", []want{{`1:1`, "the file is empty"}}},
		{"only a comment", "# nothing\n", []want{{`1:1`, "the file is empty"}}},
		// An unclosed bracket is reported where it opens, not where the parser gave up.
		{"unclosed flow mapping", "version: 1\nentities:\n  User: {pk: \"USER#{userId}\"\n",
			[]want{{`3:9`, "YAML syntax: the mapping this '{' opens lacks a ',' or its closing '}' (expected at line 4, column 1)"}}},
		{"unclosed flow sequence", "version: 1\nentities:\n  User:\n    attributes: [name, email\n    pk: \"U#{id}\"\n",
			[]want{{`4:17`, "YAML syntax: the list this '[' opens lacks a ',' or its closing ']' (expected at line 5, column 7)"}}},
		{"unclosed flow sequence at the end", "version: 1\nentities:\n  User:\n    attributes: [name, email\n",
			[]want{{`4:17`, "the list this '[' opens lacks a ',' or its closing ']'"}}},
		{"flow sequence item not separated", "version: 1\nentities:\n  User: {pk: \"U#{id}\", sk: U, attributes: [a, {b: c} d]}\n",
			[]want{{`3:43`, "the list this '[' opens lacks a ',' or its closing ']' (expected at line 3, column 54)"}}},
		{"unclosed quote", "version: 1\nentities:\n  User: {pk: \"USER#{userId}, sk: P}\n",
			[]want{{`3:14`, `YAML syntax: the quoted value this " opens is not closed: the file ends before its closing "`}}},
		{"bad indentation", "version: 1\nentities:\n  User: {pk: \"U#{id}\", sk: U}\n   Post: {pk: \"P#{id}\", sk: P}\n",
			[]want{{`4:4`, "YAML syntax: did not find expected key"}}},
		{"tab indentation", "version: 1\nentities:\n\tUser: {pk: \"U#{id}\", sk: U}\n",
			[]want{{`3:1`, "YAML syntax: found character that cannot start any token"}}},
		{"mapping value in a plain value", "version: 1\nentities:\n  User: {pk: \"U#{id}\", sk: U}\nrules:\n  - name: a: b\n",
			[]want{{`5:12`, "YAML syntax: mapping values are not allowed in this context"}}},
		{"unknown alias", "version: 1\nentities:\n  User: *u\n", []want{{`3:9`, "YAML syntax: unknown anchor 'u' referenced"}}},
		{"not a mapping", "- version: 1\n", []want{{`1:1`, "the file must be a mapping (name: value ...), found a list"}}},
		{"unknown top-level field", "version: 1\nentity: {}\nentities:\n  User: {pk: \"U#{id}\", sk: U}\n",
			[]want{{`2:1`, `unknown field "entity" in the file (did you mean "entities"?); allowed: version, table, entities, rules`}}},
		{"repeated key", "version: 1\nentities:\n  User: {pk: \"U#{id}\", sk: U}\n  User: {pk: \"V#{id}\", sk: V}\n",
			[]want{{`4:3`, `entities: "User" is given twice (first on line 3); keep one`}}},
		{"second document", "version: 1\nentities:\n  User: {pk: \"U#{id}\", sk: U}\n---\nversion: 1\n",
			[]want{{`4:1`, "a second YAML document follows"}}},
		{"version not a number", "version: one\nentities:\n  User: {pk: \"U#{id}\", sk: U}\n", []want{{`1:10`, "version must be 1"}}},
		{"unquoted template in braces", "version: 1\nentities:\n  User: {pk: \"U#{id}\", sk: {id}}\n",
			[]want{{`3:28: entity "User"`, `key template sk must be a string, found a mapping; a value starting with '{' must be quoted`}}},
		{"entity not a mapping", "version: 1\nentities:\n  User: [pk, sk]\n",
			[]want{{`3:9: entity "User"`, "must be a mapping of key templates, type and attributes"}}},
		{"attributes not a list", "version: 1\nentities:\n  User: {pk: \"U#{id}\", sk: U, attributes: name}\n",
			[]want{{`3:43: entity "User"`, "attributes must be a list, e.g. [a, b], found \"name\""}}},
		{"unknown type field", "version: 1\nentities:\n  T: {pk: \"T#{id}\", sk: T, type: {attribute: e, equal: T}}\n", []want{
			{`3:34: entity "T"`, "type needs both attribute and equals"},
			{`3:49: entity "T"`, `unknown field "equal" in type (did you mean "equals"?)`},
		}},
		{"rules not a list", "version: 1\nentities:\n  U: {pk: \"U#{id}\", sk: U}\nrules: {name: a}\n",
			[]want{{`4:8`, "rules must be a list, found a mapping"}}},
		{"rule not a mapping", "version: 1\nentities:\n  U: {pk: \"U#{id}\", sk: U}\nrules:\n  - copy\n",
			[]want{{`5:5: rule #1`, "a rule must be a mapping with a name and one of copy, mirror, count, sum, distinct, max, min, latest or top"}}},
		{"kind not a mapping", "version: 1\nentities:\n  U: {pk: \"U#{id}\", sk: U}\nrules:\n  - {name: a, copy: U}\n",
			[]want{{`5:21: rule "a"`, "copy must be a mapping (name: value ...), found \"U\""}}},
		{"unknown rule field", "version: 1\nentities:\n  U: {pk: \"U#{id}\", sk: U, attributes: [n, c]}\nrules:\n  - {name: a, cuont: {of: U, into: U, attribute: c}}\n", []want{
			{`5:5: rule "a"`, "has no kind"},
			{`5:15: rule "a"`, `unknown field "cuont" in a rule (did you mean "count"?)`},
		}},
		{"count with a value", "version: 1\nentities:\n  U: {pk: \"U#{id}\", sk: U, attributes: [n, c]}\nrules:\n  - {name: a, count: {of: U, into: U, attribute: c, value: n}}\n",
			[]want{{`5:53: rule "a"`, "count has no value: it adds 1 per item; use sum"}}},
		{"where value not a scalar", "version: 1\nentities:\n  U: {pk: \"U#{id}\", sk: U, attributes: [n, c]}\nrules:\n  - {name: a, count: {of: U, into: U, attribute: c, where: {n: [1]}}}\n",
			[]want{{`5:64: rule "a"`, "count.where.n must be a string, number or true/false"}}},
		{"merge keys", "version: 1\nentities:\n  U: {<<: {pk: \"U#{id}\"}, sk: U}\n", []want{
			{`3:3: entity "U"`, "has no pk template"},
			{`3:7: entity "U"`, "merge keys (<<) are not supported"},
		}},
		{"aliases are followed", "version: 1\nentities:\n  U: &u {pk: \"U#{id}\", sk: U, attributes: [n]}\n  V: {pk: \"V#{id}\", sk: V, attributes: [n]}\nrules:\n  - {name: a, copy: {from: U, to: V, via: key, set: &s {n: n}}}\n  - {name: b, copy: {from: V, to: U, via: key, set: *s}}\n", []want{
			{`6:5: rule "a"`, `rules form a cycle: rule "a" -> rule "b" -> rule "a"`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, tc.doc, problemsOf(t, tc.doc), tc.want)
		})
	}
}

// An alias bomb must cost bounded time and give one problem, not a walk through millions
// of nodes: here 2,000 aliases of a rule with 200 set entries.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nentities:\n  U: {pk: \"U#{id}\", sk: U, attributes: [n]}\nrules:\n  - &r\n    name: a\n    copy:\n      from: U\n      to: U\n      set: {")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "a%d: n, ", i)
	}
	b.WriteString("}\n")
	for i := 0; i < 2000; i++ {
		b.WriteString("  - *r\n")
	}
	got := problemsOf(t, b.String())
	if len(got) != 1 || !strings.Contains(got[0], "too many YAML nodes or aliases") {
		t.Errorf("%d problems:\n%s", len(got), strings.Join(got[:min(len(got), 5)], "\n"))
	}
}

func TestParseSocial(t *testing.T) {
	f, err := Load(filepath.Join("..", "..", "rules", "social.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Table, table.Default()) {
		t.Errorf("table = %+v, want the default spec written out", f.Table)
	}
	if len(f.Entities) != 12 || len(f.Rules) != 20 {
		t.Fatalf("%d entities, %d rules; want 12 and 20", len(f.Entities), len(f.Rules))
	}
	c := f.Entities[3]
	if c.Name != "Comment" || c.Keys["gsi1pk"] != "USER#{userId}" ||
		!reflect.DeepEqual(c.KeyOrder, []string{"pk", "sk", "gsi1pk", "gsi1sk"}) {
		t.Errorf("Comment = %+v", c)
	}
	if c.Fields["pk"].Line == 0 || c.Fields["attributes.2"].Line != c.Fields["attributes"].Line {
		t.Errorf("Comment positions = %v", c.Fields)
	}
	r := f.Rules[0]
	if r.Name != "comment-author" || r.Kind != KindCopy || r.Copy.Via != "gsi1" ||
		!reflect.DeepEqual(r.Copy.SetOrder, []string{"userName", "userAvatar"}) || r.Copy.Set["userAvatar"] != "avatar" {
		t.Errorf("rule 0 = %+v, copy %+v", r, r.Copy)
	}
	if p := r.Fields["copy.set.userAvatar"]; p.Line == 0 || p.Line != r.Fields["copy.set"].Line {
		t.Errorf("rule 0 positions = %v", r.Fields)
	}
	upc := f.Rules[6]
	if upc.Kind != KindCount || upc.Agg.Into != "User" || WhereString(upc.Agg.Where["status"]) != `"published"` {
		t.Errorf("rule 6 = %+v, agg %+v", upc, upc.Agg)
	}
	for i, want := range []string{"gsi1", "gsi1", "gsi2"} {
		if via, ok := ChooseVia(f, f.Rules[i].Copy); via != want || !ok {
			t.Errorf("ChooseVia(rule %d) = %q, %v; want %q", i, via, ok, want)
		}
	}
}

func TestParseWhereTypes(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`version: 1
entities:
  U: {pk: "U#{id}", sk: U, attributes: [c, s, n, x, b]}
rules:
  - {name: a, count: {of: U, into: U, attribute: c, where: {s: "1", n: 1, x: 1.5, b: true}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	eq := func(o Operand) []Test { return []Test{{Op: OpEq, Values: []Operand{o}}} }
	want := map[string][]Test{"s": eq(Operand{Kind: StringOperand, Text: "1"}), "n": eq(Operand{Kind: NumberOperand, Text: "1"}),
		"x": eq(Operand{Kind: NumberOperand, Text: "1.5"}), "b": eq(Operand{Kind: BoolOperand, Bool: true})}
	if got := f.Rules[0].Agg.Where; !reflect.DeepEqual(got, want) {
		t.Errorf("where = %#v, want %#v", got, want)
	}
}

// A where's any holds its alternatives in file order, each read as a where's attributes
// are; its attributes are watched (a change of one may move the item in or out).
func TestParseWhereAny(t *testing.T) {
	set, err := ParseSet("t.yaml", []byte(`version: 1
entities:
  U: {pk: "U#{id}", sk: U, attributes: [c, s, p, pinned]}
rules:
  - name: a
    count: {of: U, into: U, attribute: c, where: {s: open, any: [{p: {gte: 3}}, {pinned: true, p: {gte: 1}}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := set.Rule("a")
	num := func(v string) []Operand { return []Operand{{Kind: NumberOperand, Text: v}} }
	want := []WhereAlt{
		{Tests: map[string][]Test{"p": {{Op: OpGte, Values: num("3")}}}, Order: []string{"p"}},
		{Tests: map[string][]Test{"pinned": {{Op: OpEq, Values: []Operand{{Kind: BoolOperand, Bool: true}}}}, "p": {{Op: OpGte, Values: num("1")}}},
			Order: []string{"pinned", "p"}},
	}
	if got := r.Agg.WhereAny; !reflect.DeepEqual(got, want) {
		t.Errorf("any = %#v, want %#v", got, want)
	}
	for _, w := range []string{"s", "p", "pinned"} {
		if !slices.Contains(r.Watched, w) {
			t.Errorf("watched %v lacks %s", r.Watched, w)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
	var ps Problems
	if errors.As(err, &ps) {
		t.Errorf("a missing file is not a rules problem: %v", err)
	}
}

// testdata/*.yaml hold broken files; their .golden is every problem Load reports.
func TestLoadGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no testdata/*.yaml")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, err := Load(path)
			if err == nil {
				t.Fatal("no problems")
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(path, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("problems:\n%s\nwant (%s; -update rewrites it):\n%s", got, golden, want)
			}
		})
	}
}

func TestChooseVia(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`version: 1
entities:
  User: {pk: "USER#{userId}", sk: PROFILE, attributes: [name]}
  Profile: {pk: "USER#{userId}", sk: PUBLIC, attributes: [userName]}
  Post: {pk: "POST#{postId}", sk: METADATA, attributes: [userId, userName]}
  Comment: {pk: "POST#{postId}", sk: "C#{commentId}", gsi1pk: "USER#{userId}", attributes: [userName]}
  Note: {pk: "NOTE#{noteId}", sk: N, attributes: [userId, userName]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to, via string
		want          string
		ok            bool
	}{
		{"User", "Profile", "", ViaKey, true},   // User renders Profile's whole key
		{"Post", "Comment", "", ViaTable, true}, // Post renders Comment's partition
		{"User", "Comment", "", "gsi1", true},   // only gsi1 holds USER#{userId}
		{"User", "Note", "", "", false},         // nothing renders a Note key from a User
		{"User", "Comment", "key", "key", false},
		{"User", "Nobody", "", "", false},
	} {
		c := &Copy{From: tc.from, To: tc.to, Via: tc.via, Set: map[string]string{"userName": "name"}}
		if got, ok := ChooseVia(f, c); got != tc.want || ok != tc.ok {
			t.Errorf("ChooseVia(%s -> %s via %q) = %q, %v; want %q, %v", tc.from, tc.to, tc.via, got, ok, tc.want, tc.ok)
		}
	}
}

// Validate works on a File built in code, without positions.
func TestValidateHandBuilt(t *testing.T) {
	f := &File{Version: 1, Table: table.Default(),
		Entities: []Entity{
			{Name: "Post", Keys: map[string]string{"pk": "POST#{postId}", "sk": "METADATA"}, Attributes: []string{"commentCount"}},
			{Name: "Comment", Keys: map[string]string{"pk": "POST#{postId}", "sk": "C#{id}"}},
		},
		Rules: []Rule{
			{Name: "n", Kind: KindCount, Agg: &Aggregate{Of: "Comment", Into: "Post", Attribute: "commentCount"}},
			{Name: "m", Kind: KindCopy, Agg: &Aggregate{}},
		},
	}
	got := Validate(f).Error()
	want := `rule "m": kind "copy" does not match its sections`
	if !strings.Contains(got, want) || strings.Count(got, "\n") != 0 {
		t.Errorf("Validate = %s\nwant one problem: %s", got, want)
	}
}

func ExampleParse() {
	_, err := Parse("app.yaml", []byte(`version: 1
entities:
  User: {pk: "USER#{userId}", sk: PROFILE, attributes: [name]}
  Comment: {pk: "POST#{postId}", sk: "C#{commentId}", gsi1pk: "USER#{userId}", attributes: [userName]}
rules:
  - name: comment-author
    copy: {from: User, to: Comment, via: gsi1, set: {userName: nmae}}
`))
	fmt.Println(err)
	// Output:
	// app.yaml:7:54: rule "comment-author": copy.set userName: User has no attribute "nmae" (did you mean "name"?); declare it in User's attributes (it has: name, pk, sk)
}

// The rules file README.md shows is a valid one.
func TestReadmeExampleCompiles(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```yaml\n")
	if !ok {
		t.Fatal("README.md shows no rules file (```yaml)")
	}
	example, _, _ := strings.Cut(rest, "```")
	f, err := Parse("README.md", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(f); err != nil {
		t.Fatal(err)
	}
}
