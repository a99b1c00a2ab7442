// Package table describes the single table Denorm manages: its keys, local and global
// secondary indexes and TTL attribute. One Spec feeds the CreateTable call of the local
// runner and the tests, validation of the rules file, and the CDK table.
package table

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Projection is what a secondary index copies from the base table.
type Projection string

// Projection types, as DynamoDB names them.
const (
	ProjectAll      Projection = "ALL"
	ProjectKeysOnly Projection = "KEYS_ONLY"
	ProjectInclude  Projection = "INCLUDE"
)

// Limits DynamoDB imposes on a table's indexes.
const (
	MaxLocalIndexes  = 5
	MaxGlobalIndexes = 20
)

// LocalIndex is a local secondary index: the table's partition key with another sort key.
type LocalIndex struct {
	Name       string     `yaml:"name" json:"name"`
	SortKey    string     `yaml:"sortKey" json:"sortKey"`
	Projection Projection `yaml:"projection,omitempty" json:"projection,omitempty"`
	Include    []string   `yaml:"include,omitempty" json:"include,omitempty"`
}

// GlobalIndex is a global secondary index with its own partition and optional sort key.
type GlobalIndex struct {
	Name         string     `yaml:"name" json:"name"`
	PartitionKey string     `yaml:"partitionKey" json:"partitionKey"`
	SortKey      string     `yaml:"sortKey,omitempty" json:"sortKey,omitempty"`
	Projection   Projection `yaml:"projection,omitempty" json:"projection,omitempty"`
	Include      []string   `yaml:"include,omitempty" json:"include,omitempty"`
}

// Spec is the table layout. All key attributes are strings, as in the seeds' designs.
type Spec struct {
	PartitionKey  string        `yaml:"partitionKey" json:"partitionKey"`
	SortKey       string        `yaml:"sortKey" json:"sortKey"`
	TTLAttribute  string        `yaml:"ttlAttribute,omitempty" json:"ttlAttribute,omitempty"`
	LocalIndexes  []LocalIndex  `yaml:"localIndexes,omitempty" json:"localIndexes,omitempty"`
	GlobalIndexes []GlobalIndex `yaml:"globalIndexes,omitempty" json:"globalIndexes,omitempty"`
}

// Default is the seeds' layout: pk and sk, lsi0..lsi4 on lsi0_sk..lsi4_sk, gsi1 and gsi2 on
// gsiNpk/gsiNsk with every attribute projected, and ttl.
func Default() Spec {
	s := Spec{PartitionKey: "pk", SortKey: "sk", TTLAttribute: "ttl"}
	for i := 0; i < MaxLocalIndexes; i++ {
		s.LocalIndexes = append(s.LocalIndexes, LocalIndex{
			Name: fmt.Sprintf("lsi%d", i), SortKey: fmt.Sprintf("lsi%d_sk", i), Projection: ProjectAll,
		})
	}
	for i := 1; i <= 2; i++ {
		s.GlobalIndexes = append(s.GlobalIndexes, GlobalIndex{
			Name: fmt.Sprintf("gsi%d", i), PartitionKey: fmt.Sprintf("gsi%dpk", i),
			SortKey: fmt.Sprintf("gsi%dsk", i), Projection: ProjectAll,
		})
	}
	return s
}

// KeyAttributes lists every key attribute of the table and its indexes, table keys first,
// without duplicates.
func (s Spec) KeyAttributes() []string {
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	add(s.PartitionKey)
	add(s.SortKey)
	for _, l := range s.LocalIndexes {
		add(l.SortKey)
	}
	for _, g := range s.GlobalIndexes {
		add(g.PartitionKey)
		add(g.SortKey)
	}
	return out
}

// IsKeyAttribute reports whether name is a key attribute of the table or one of its indexes.
func (s Spec) IsKeyAttribute(name string) bool {
	for _, a := range s.KeyAttributes() {
		if a == name {
			return true
		}
	}
	return false
}

// Index is an index (or the base table, Name "") seen uniformly: where to query and what it holds.
type Index struct {
	Name         string // "" for the base table
	PartitionKey string
	SortKey      string
	Projection   Projection
	Include      []string
}

// Index returns the named index; "" or "table" is the base table.
func (s Spec) Index(name string) (Index, bool) {
	if name == "" || name == "table" {
		return Index{PartitionKey: s.PartitionKey, SortKey: s.SortKey, Projection: ProjectAll}, true
	}
	for _, l := range s.LocalIndexes {
		if l.Name == name {
			return Index{Name: l.Name, PartitionKey: s.PartitionKey, SortKey: l.SortKey, Projection: projOrAll(l.Projection), Include: l.Include}, true
		}
	}
	for _, g := range s.GlobalIndexes {
		if g.Name == name {
			return Index{Name: g.Name, PartitionKey: g.PartitionKey, SortKey: g.SortKey, Projection: projOrAll(g.Projection), Include: g.Include}, true
		}
	}
	return Index{}, false
}

// Indexes returns the base table followed by every secondary index.
func (s Spec) Indexes() []Index {
	out := []Index{}
	t, _ := s.Index("")
	out = append(out, t)
	for _, l := range s.LocalIndexes {
		i, _ := s.Index(l.Name)
		out = append(out, i)
	}
	for _, g := range s.GlobalIndexes {
		i, _ := s.Index(g.Name)
		out = append(out, i)
	}
	return out
}

// Projects reports whether the index holds attribute attr for every item it contains.
// The base table's and the index's own key attributes are always projected.
func (i Index) Projects(attr string, s Spec) bool {
	if attr == s.PartitionKey || attr == s.SortKey || attr == i.PartitionKey || attr == i.SortKey {
		return true
	}
	switch i.Projection {
	case ProjectAll, "":
		return true
	case ProjectInclude:
		for _, a := range i.Include {
			if a == attr {
				return true
			}
		}
	}
	return false
}

func projOrAll(p Projection) Projection {
	if p == "" {
		return ProjectAll
	}
	return p
}

// Validate reports every problem with the spec at once.
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.PartitionKey == "" {
		bad("table: partitionKey is required")
	}
	if s.SortKey == "" && len(s.LocalIndexes) > 0 {
		bad("table: local secondary indexes need a table sort key")
	}
	if len(s.LocalIndexes) > MaxLocalIndexes {
		bad("table: %d local secondary indexes, DynamoDB allows at most %d", len(s.LocalIndexes), MaxLocalIndexes)
	}
	if len(s.GlobalIndexes) > MaxGlobalIndexes {
		bad("table: %d global secondary indexes, DynamoDB allows at most %d", len(s.GlobalIndexes), MaxGlobalIndexes)
	}
	names := map[string]bool{}
	checkName := func(n string) {
		switch {
		case n == "" || n == "table":
			bad("table: index name %q is not allowed", n)
		case names[n]:
			bad("table: index name %q is used twice", n)
		case strings.HasPrefix(n, "_dn"):
			bad("table: index name %q uses the reserved prefix _dn", n)
		}
		names[n] = true
	}
	checkProj := func(idx string, p Projection, inc []string) {
		switch p {
		case "", ProjectAll, ProjectKeysOnly:
			if len(inc) > 0 {
				bad("table: index %q lists include attributes but its projection is %s", idx, projOrAll(p))
			}
		case ProjectInclude:
			if len(inc) == 0 {
				bad("table: index %q has projection INCLUDE but no include attributes", idx)
			}
		default:
			bad("table: index %q has projection %q, want ALL, KEYS_ONLY or INCLUDE", idx, p)
		}
	}
	for _, l := range s.LocalIndexes {
		checkName(l.Name)
		if l.SortKey == "" {
			bad("table: local index %q needs a sortKey", l.Name)
		}
		if l.SortKey == s.SortKey || l.SortKey == s.PartitionKey {
			bad("table: local index %q sort key %q repeats a table key", l.Name, l.SortKey)
		}
		checkProj(l.Name, l.Projection, l.Include)
	}
	for _, g := range s.GlobalIndexes {
		checkName(g.Name)
		if g.PartitionKey == "" {
			bad("table: global index %q needs a partitionKey", g.Name)
		}
		checkProj(g.Name, g.Projection, g.Include)
	}
	for _, a := range s.KeyAttributes() {
		if strings.HasPrefix(a, "_dn") {
			bad("table: key attribute %q uses the reserved prefix _dn", a)
		}
	}
	return errors.Join(errs...)
}

// CreateTableInput is the CreateTable request for this spec: on-demand billing, a
// NEW_AND_OLD_IMAGES stream and every index. TTL is set separately (UpdateTimeToLive).
func (s Spec) CreateTableInput(name string) *dynamodb.CreateTableInput {
	attrs := []types.AttributeDefinition{}
	for _, a := range s.KeyAttributes() {
		attrs = append(attrs, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
	}
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: attrs,
		KeySchema:            keySchema(s.PartitionKey, s.SortKey),
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	}
	for _, l := range s.LocalIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{
			IndexName: aws.String(l.Name), KeySchema: keySchema(s.PartitionKey, l.SortKey),
			Projection: projection(l.Projection, l.Include),
		})
	}
	for _, g := range s.GlobalIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName: aws.String(g.Name), KeySchema: keySchema(g.PartitionKey, g.SortKey),
			Projection: projection(g.Projection, g.Include),
		})
	}
	return in
}

func keySchema(pk, sk string) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}}
	if sk != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	return ks
}

func projection(p Projection, include []string) *types.Projection {
	pr := &types.Projection{ProjectionType: types.ProjectionType(projOrAll(p))}
	if p == ProjectInclude {
		pr.NonKeyAttributes = include
	}
	return pr
}
