package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/valid/extremes.yaml, the worked example of docs/rules.md, is valid, matches the
// schema, and each rule reads its sources with the query docs/rules.md says.
func TestExtremeExampleAndSchema(t *testing.T) {
	path := filepath.Join("testdata", "valid", "extremes.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	set, err := ParseSet(path, data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for name, want := range map[string]string{
		"post-last-comment":  `table POST#{postId} sk begins_with "COMMENT#"`,
		"post-first-comment": `table POST#{postId} sk begins_with "COMMENT#"`,
		"product-cheapest":   `gsi1 PRODUCT#{productId} gsi1sk begins_with "OFFER#"`,
		"product-highest":    `gsi1 PRODUCT#{productId} gsi1sk begins_with "OFFER#"`,
	} {
		q := set.Rule(name).Extreme
		got := q.Way() + " " + q.PK.String() + " " + q.SKAttr + ` begins_with "` + q.SKPrefix + `"`
		if got != want {
			t.Errorf("%s: query %s, want %s", name, got, want)
		}
	}
	s := compileSchema(t)
	if err := s.Validate(yamlToJSONValue(t, data)); err != nil {
		t.Errorf("%s does not match schema.json:\n%v", path, err)
	}
}

// A max whose sources only a local index tells apart uses it; one whose sources are in no
// queryable place is refused with the fix.
func TestExtremeQueryChoice(t *testing.T) {
	const head = `version: 1
table: {partitionKey: pk, sortKey: sk, localIndexes: [{name: lsi0, sortKey: lsi0_sk}]}
entities:
  Post: {pk: "POST#{postId}", sk: "P#{postId}", attributes: [last]}
  Comment: {pk: "POST#{postId}", sk: "{commentId}", lsi0_sk: "C#{commentId}", attributes: [at]}
`
	set, err := ParseSet("x.yaml", []byte(head+"rules:\n  - name: m\n    max: {of: Comment, into: Post, value: at, attribute: last}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if q := set.Rule("m").Extreme; q.Way() != "lsi0" || q.SKPrefix != "C#" {
		t.Errorf("query %s %q, want lsi0 \"C#\"", q.Way(), q.SKPrefix)
	}
	noLSI := strings.Replace(head, `, localIndexes: [{name: lsi0, sortKey: lsi0_sk}]`, "", 1)
	noLSI = strings.Replace(noLSI, `, lsi0_sk: "C#{commentId}"`, "", 1)
	_, err = ParseSet("x.yaml", []byte(noLSI+"rules:\n  - name: m\n    max: {of: Comment, into: Post, value: at, attribute: last}\n"))
	if err == nil || !strings.Contains(err.Error(), `x.yaml:8:15: rule "m": max cannot be recomputed`) ||
		!strings.Contains(err.Error(), "table: Comment's sk has no literal prefix") {
		t.Errorf("got %v", err)
	}
}
