package tablecheck

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The AWS CLI commands the fixes quote. Names of tables and indexes are [A-Za-z0-9_.-], so
// they need no quoting; the JSON argument is in single quotes.

type keyElement struct {
	AttributeName string
	KeyType       string
}

type projection struct {
	ProjectionType   string
	NonKeyAttributes []string `json:",omitempty"`
}

type gsiCreate struct {
	IndexName  string
	KeySchema  []keyElement
	Projection projection
}

// createGSI is the update-table command that adds the index as the rules declare it.
func (c *comparison) createGSI(name string, s shape) string {
	create := gsiCreate{IndexName: name, KeySchema: []keyElement{{s.pk, "HASH"}}, Projection: projection{ProjectionType: string(s.proj)}}
	defs := []string{"AttributeName=" + s.pk + ",AttributeType=S"}
	if s.sk != "" {
		create.KeySchema = append(create.KeySchema, keyElement{s.sk, "RANGE"})
		defs = append(defs, "AttributeName="+s.sk+",AttributeType=S")
	}
	create.Projection.NonKeyAttributes = s.include
	return fmt.Sprintf("%s update-table --table-name %s --attribute-definitions %s --global-secondary-index-updates '%s'",
		c.cli, c.name, strings.Join(defs, " "), jsonOf([]map[string]any{{"Create": create}}))
}

// deleteGSI is the update-table command that deletes the index.
func (c *comparison) deleteGSI(name string) string {
	return fmt.Sprintf("%s update-table --table-name %s --global-secondary-index-updates '%s'",
		c.cli, c.name, jsonOf([]map[string]any{{"Delete": map[string]string{"IndexName": name}}}))
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings always marshal
	}
	return string(b)
}
