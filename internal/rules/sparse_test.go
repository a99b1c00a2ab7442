package rules

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/table"
)

// sparseDoc has a Task whose assignee index keys may be absent (lines 7..13).
const sparseDoc = `version: 1
entities:
  Project:
    pk: "PROJECT#{projectId}"
    sk: METADATA
    attributes: [taskCount]
  Task:
    pk: "PROJECT#{projectId}"
    sk: "TASK#{taskId}"
    gsi1pk: "USER#{assigneeId}"
    gsi1sk: "TASK#{taskId}"
    sparse: [gsi1pk, gsi1sk]
    attributes: [title]
rules:
  - name: project-task-count
    count: {of: Task, into: Project, attribute: taskCount}
`

func TestParseSparse(t *testing.T) {
	f, err := Parse("t.yaml", []byte(sparseDoc))
	if err != nil {
		t.Fatal(err)
	}
	task := f.Entities[1]
	if !reflect.DeepEqual(task.Sparse, []string{"gsi1pk", "gsi1sk"}) {
		t.Errorf("Sparse = %q", task.Sparse)
	}
	for path, want := range map[string]Pos{"sparse": {12, 13}, "sparse.0": {12, 14}, "sparse.1": {12, 22}} {
		if got := task.Fields[path]; got != want {
			t.Errorf("Fields[%q] = %v, want %v", path, got, want)
		}
	}
	if _, ok := task.Keys["sparse"]; ok {
		t.Error("sparse was read as a key template")
	}
}

func TestValidateSparse(t *testing.T) {
	const user = "  User: {pk: \"USER#{userId}\", sk: PROFILE}\n" // line 3
	for _, tc := range []struct {
		name string
		ents string // from line 3
		want []want
	}{
		{"valid", user + `  Task: {pk: "T#{taskId}", sk: T, gsi1pk: "USER#{assigneeId}", gsi1sk: "T#{taskId}", sparse: [gsi1pk, gsi1sk]}
`, nil},
		{"table keys", user + `  Task: {pk: "T#{taskId}", sk: T, sparse: [pk, sk]}
`, []want{
			{`4:44: entity "Task"`, `sparse: "pk" is the table's partition key, which every item has, so it cannot be sparse; list only index keys (lsi0_sk, lsi1_sk, lsi2_sk, lsi3_sk, lsi4_sk, gsi1pk, gsi1sk, gsi2pk, gsi2sk)`},
			{`4:48: entity "Task"`, `sparse: "sk" is the table's sort key`},
		}},
		{"not an index key", user + `  Task: {pk: "T#{taskId}", sk: T, gsi1pk: "U#{a}", sparse: [gsi1kp, title, ""]}
`, []want{
			{`4:61: entity "Task"`, `sparse: "gsi1kp" is not a key attribute of the table's indexes (lsi0_sk, lsi1_sk, lsi2_sk, lsi3_sk, lsi4_sk, gsi1pk, gsi1sk, gsi2pk, gsi2sk) (did you mean "gsi1pk"?)`},
			{`4:69: entity "Task"`, `sparse: "title" is not a key attribute`},
			{`4:76: entity "Task"`, `sparse: a key attribute name is empty`},
		}},
		{"no template", user + `  Task: {pk: "T#{taskId}", sk: T, sparse: [gsi2pk]}
`, []want{{`4:44: entity "Task"`, `sparse: Task has no gsi2pk template; give it one (gsi2pk: "...") or remove gsi2pk from sparse`}}},
		{"listed twice", user + `  Task: {pk: "T#{taskId}", sk: T, gsi1pk: "U#{a}", sparse: [gsi1pk, gsi1pk]}
`, []want{{`4:69: entity "Task"`, `sparse lists "gsi1pk" twice`}}},
		{"not a list", user + `  Task: {pk: "T#{taskId}", sk: T, gsi1pk: "U#{a}", sparse: gsi1pk}
`, []want{{`4:60: entity "Task"`, `sparse must be a list, e.g. [a, b], found "gsi1pk"`}}},
		{"template of the wrong shape", user + `  Task: {pk: "T#{taskId}", sk: T, gsi1pk: {a}, sparse: [gsi1pk]}
`, []want{{`4:43: entity "Task"`, "key template gsi1pk must be a string"}}},
		// An item without gsi1pk matches both: the differing templates do not tell them apart.
		{"sparse in both is ambiguous", `  Open: {pk: "T#{id}", sk: T, gsi1pk: "OPEN#{a}", sparse: [gsi1pk]}
  Done: {pk: "T#{id}", sk: T, gsi1pk: "DONE#{a}", sparse: [gsi1pk]}
`, []want{{`4:3: entity "Done"`, `may match the same items as entity "Open" (line 3): their pk "T#{id}" and "T#{id}", sk "T" and "T" can match the same value, and an item without gsi1pk (sparse in both) matches both`}}},
		// An item without gsi1pk is only an Open; one with it is only a Done.
		{"sparse in one is told apart", `  Open: {pk: "T#{id}", sk: T, gsi1pk: "OPEN#{a}", sparse: [gsi1pk]}
  Done: {pk: "T#{id}", sk: T, gsi1pk: "DONE#{a}"}
`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "version: 1\nentities:\n" + tc.ents
			checkProblems(t, doc, problemsOf(t, doc), tc.want)
		})
	}
}

// No entity could give a key attribute named like an entity field a template.
func TestValidateTableKeyNamedSparse(t *testing.T) {
	doc := `version: 1
table: {partitionKey: pk, globalIndexes: [{name: g, partitionKey: sparse}]}
entities:
  User: {pk: "USER#{userId}"}
`
	checkProblems(t, doc, problemsOf(t, doc), []want{
		{`2:67: table`, `key attribute "sparse" has the name of an entity field (type, attributes, sparse)`},
	})
}

func strItem(kv ...string) record.Item {
	item := record.Item{}
	for i := 0; i+1 < len(kv); i += 2 {
		item[kv[i]] = &types.AttributeValueMemberS{Value: kv[i+1]}
	}
	return item
}

func TestMatchSparse(t *testing.T) {
	set, err := ParseSet("t.yaml", []byte(sparseDoc))
	if err != nil {
		t.Fatal(err)
	}
	task := set.Entities[1]
	for _, k := range task.Keys {
		if want := k.Attr == "gsi1pk" || k.Attr == "gsi1sk"; k.Sparse != want {
			t.Errorf("key %s: Sparse = %v, want %v", k.Attr, k.Sparse, want)
		}
	}
	user := keys.MustParse("USER#{assigneeId}")
	for _, tc := range []struct {
		name     string
		item     record.Item
		entity   string // "" for none
		assignee string // "" for unbound
	}{
		{"sparse keys present and matching",
			strItem("pk", "PROJECT#p1", "sk", "TASK#t1", "gsi1pk", "USER#u1", "gsi1sk", "TASK#t1"), "Task", "u1"},
		{"sparse key present, not matching",
			strItem("pk", "PROJECT#p1", "sk", "TASK#t1", "gsi1pk", "TEAM#x", "gsi1sk", "TASK#t1"), "", ""},
		{"sparse key present, not a string",
			record.Item{"pk": &types.AttributeValueMemberS{Value: "PROJECT#p1"}, "sk": &types.AttributeValueMemberS{Value: "TASK#t1"},
				"gsi1pk": &types.AttributeValueMemberNULL{Value: true}}, "", ""},
		{"sparse keys absent", strItem("pk", "PROJECT#p1", "sk", "TASK#t1"), "Task", ""},
		{"one sparse key absent", strItem("pk", "PROJECT#p1", "sk", "TASK#t1", "gsi1pk", "USER#u2"), "Task", "u2"},
		{"absent, a plain attribute fills the variable",
			strItem("pk", "PROJECT#p1", "sk", "TASK#t1", "assigneeId", "u3"), "Task", "u3"},
		{"a table key absent", strItem("pk", "PROJECT#p1", "gsi1pk", "USER#u1"), "", ""},
		{"the other entity", strItem("pk", "PROJECT#p1", "sk", "METADATA"), "Project", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, b := set.Match(tc.item, nil)
			name := ""
			if e != nil {
				name = e.Name
			}
			if name != tc.entity {
				t.Fatalf("Match = %q, want %q", name, tc.entity)
			}
			if e != task {
				return
			}
			if p, ok := b.Get("projectId"); !ok || p != "p1" {
				t.Errorf("projectId = %q, %v; want p1", p, ok)
			}
			got, ok := b.Get("assigneeId")
			if got != tc.assignee || ok != (tc.assignee != "") {
				t.Errorf("Get(assigneeId) = %q, %v; want %q", got, ok, tc.assignee)
			}
			_, err := b.Render(user)
			if noValue := errors.Is(err, keys.ErrNoValue); noValue != (tc.assignee == "") {
				t.Errorf("Render(%s) error = %v; want ErrNoValue only when unbound", user, err)
			}
		})
	}
}

// Without sparse, an item lacking an index key the entity declares is not the entity.
func TestMatchWithoutSparse(t *testing.T) {
	set, err := ParseSet("t.yaml", []byte(strings.Replace(sparseDoc, "    sparse: [gsi1pk, gsi1sk]\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := set.Match(strItem("pk", "PROJECT#p1", "sk", "TASK#t1"), nil); e != nil {
		t.Errorf("Match = %s, want none", e.Name)
	}
}

// A File built in code (no KeyOrder) compiles its keys and sparse list too.
func TestCompileHandBuiltSparse(t *testing.T) {
	f := &File{Version: 1, Table: table.Default(), Entities: []Entity{{Name: "Task",
		Keys:   map[string]string{"pk": "T#{id}", "sk": "T", "gsi1pk": "U#{a}"},
		Sparse: []string{"gsi1pk"}}}}
	set, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := set.Match(strItem("pk", "T#1", "sk", "T"), nil); e == nil {
		t.Error("item without the sparse key: no match")
	}
	if e, _ := set.Match(strItem("pk", "T#1", "sk", "X"), nil); e != nil {
		t.Error("item with another sk matched")
	}
}

// Event filters test the partition key only: an item that drops its sparse keys (a REMOVE
// of the assignee) still reaches the function.
func TestFilterPatternsSparse(t *testing.T) {
	set, err := ParseSet("t.yaml", []byte(sparseDoc))
	if err != nil {
		t.Fatal(err)
	}
	got, err := set.FilterPatterns()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"PROJECT#"},{"prefix":"_dn#job#"},{"prefix":"_dn#probe#"}]}}}}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FilterPatterns = %q\nwant %q", got, want)
	}
	for _, p := range got {
		if strings.Contains(p, "gsi1") {
			t.Errorf("pattern requires a sparse key: %s", p)
		}
	}
}

func TestSchemaSparse(t *testing.T) {
	s := compileSchema(t)
	if err := s.Validate(yamlToJSONValue(t, []byte(sparseDoc))); err != nil {
		t.Errorf("schema rejects sparse: %v", err)
	}
	for name, doc := range map[string]string{
		"not a list":   "version: 1\nentities:\n  T: {pk: \"T#{id}\", gsi1pk: \"U#{a}\", sparse: gsi1pk}\n",
		"listed twice": "version: 1\nentities:\n  T: {pk: \"T#{id}\", gsi1pk: \"U#{a}\", sparse: [gsi1pk, gsi1pk]}\n",
	} {
		if err := s.Validate(yamlToJSONValue(t, []byte(doc))); err == nil {
			t.Errorf("%s: schema accepted:\n%s", name, doc)
		}
	}
}

func ExampleEntityType_Match() {
	set, _ := ParseSet("app.yaml", []byte(`version: 1
entities:
  Task:
    pk: "PROJECT#{projectId}"
    sk: "TASK#{taskId}"
    gsi1pk: "USER#{assigneeId}"
    sparse: [gsi1pk]
`))
	task := set.Entities[0]
	for _, item := range []record.Item{
		strItem("pk", "PROJECT#p1", "sk", "TASK#t1", "gsi1pk", "USER#u1"),
		strItem("pk", "PROJECT#p1", "sk", "TASK#t2"),
		strItem("pk", "PROJECT#p1", "sk", "TASK#t3", "gsi1pk", "TEAM#x"),
	} {
		b, ok := task.Match(item, nil)
		assignee, bound := b.Get("assigneeId")
		fmt.Println(ok, assignee, bound)
	}
	// Output:
	// true u1 true
	// true  false
	// false  false
}
