// Package tablecheck compares a live DynamoDB table with the table section of a rules file
// (table.Spec): the keys and their types, every local and global secondary index, the
// stream and TTL. It is pure: the caller describes the table (DescribeTable,
// DescribeTimeToLive) and prints the differences, each with what to do about it.
package tablecheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/table"
)

// Difference is one way the table differs from the rules: "<Subject> <Problem>: <Fix>".
type Difference struct {
	Subject string // what differs: "partition key", "sort key", "LSI lsi0", "GSI gsi2", "stream", "TTL"
	Problem string // how, e.g. "is KEYS_ONLY, Denorm needs NEW_AND_OLD_IMAGES"
	Fix     string // what to do about it, with the command when one exists
}

func (d Difference) String() string { return d.Subject + " " + d.Problem + ": " + d.Fix }

// Compare returns every difference between the rules' table spec and the table described by
// desc (DescribeTable's Table) and ttl (DescribeTimeToLive's description; nil is TTL off), in
// the order keys, LSIs, GSIs, stream, TTL. It returns nil when they match. Key attributes
// must be strings (S), as Denorm's key templates render them.
func Compare(spec table.Spec, desc *types.TableDescription, ttl *types.TimeToLiveDescription) []Difference {
	return CompareAt(spec, desc, ttl, "")
}

// CompareAt is Compare for a table behind endpoint (DynamoDB Local, LocalStack; "" for
// AWS): the aws commands it prints as fixes carry --endpoint-url.
func CompareAt(spec table.Spec, desc *types.TableDescription, ttl *types.TimeToLiveDescription, endpoint string) []Difference {
	c := &comparison{spec: spec, name: aws.ToString(desc.TableName), types: map[string]types.ScalarAttributeType{}, cli: "aws dynamodb"}
	if endpoint != "" {
		c.cli += " --endpoint-url " + endpoint
	}
	if c.name == "" {
		c.name = "TABLE"
	}
	for _, a := range desc.AttributeDefinitions {
		c.types[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	c.keys(desc.KeySchema)
	c.localIndexes(desc.LocalSecondaryIndexes)
	c.globalIndexes(desc.GlobalSecondaryIndexes)
	c.stream(desc.StreamSpecification)
	c.ttl(ttl)
	return c.diffs
}

type comparison struct {
	spec  table.Spec
	name  string
	cli   string // "aws dynamodb", with --endpoint-url when there is one
	types map[string]types.ScalarAttributeType
	diffs []Difference
}

func (c *comparison) add(subject, problem, fix string, args ...any) {
	c.diffs = append(c.diffs, Difference{Subject: subject, Problem: problem, Fix: fmt.Sprintf(fix, args...)})
}

// rebuild is the fix for what DynamoDB cannot change on an existing table.
const rebuild = "create a table from the rules (denorm local, the CDK stack) and copy the items into it"

func (c *comparison) keys(ks []types.KeySchemaElement) {
	pk, sk := keysOf(ks)
	if pk != c.spec.PartitionKey {
		c.add("partition key", fmt.Sprintf("is %s, the rules say %s", orNone(pk), c.spec.PartitionKey),
			"a table's keys cannot be changed: set partitionKey: %s in the rules' table section, or %s", pk, rebuild)
	}
	if sk != c.spec.SortKey {
		fix := "set sortKey: " + sk + " in the rules' table section"
		if sk == "" {
			fix = "remove sortKey (and the local indexes) from the rules' table section"
		}
		c.add("sort key", fmt.Sprintf("is %s, the rules say %s", orNone(sk), orNone(c.spec.SortKey)),
			"a table's keys cannot be changed: %s, or %s", fix, rebuild)
	}
	c.keyTypes("", pk, sk, "a table's key types cannot be changed: "+rebuild)
}

// keyTypes reports key attributes that are not strings; index names the index ("" for the table).
func (c *comparison) keyTypes(index, pk, sk, fix string) {
	for _, k := range []struct{ role, name string }{{"partition key", pk}, {"sort key", sk}} {
		if k.name == "" {
			continue
		}
		if t, ok := c.types[k.name]; ok && t != types.ScalarAttributeTypeS {
			subject := k.role + " " + k.name
			if index != "" {
				subject = index + " " + subject
			}
			c.add(subject, fmt.Sprintf("is of type %s, the rules' keys are strings (S)", t), "%s", fix)
		}
	}
}

// shape is an index reduced to what the rules say about it.
type shape struct {
	pk, sk  string
	proj    table.Projection
	include []string // sorted
}

func liveShape(ks []types.KeySchemaElement, p *types.Projection) shape {
	s := shape{proj: table.ProjectKeysOnly}
	s.pk, s.sk = keysOf(ks)
	if p != nil {
		s.proj = table.Projection(p.ProjectionType)
		s.include = sorted(p.NonKeyAttributes)
	}
	return s
}

func specShape(i table.Index) shape {
	s := shape{pk: i.PartitionKey, sk: i.SortKey, proj: i.Projection}
	if s.proj == "" {
		s.proj = table.ProjectAll
	}
	if s.proj == table.ProjectInclude {
		s.include = sorted(i.Include)
	}
	return s
}

// yaml renders the index as the rules' table section would declare it.
func (s shape) yaml(name string, global bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{name: %s", name)
	if global {
		fmt.Fprintf(&b, ", partitionKey: %s", s.pk)
	}
	if s.sk != "" {
		fmt.Fprintf(&b, ", sortKey: %s", s.sk)
	}
	fmt.Fprintf(&b, ", projection: %s", s.proj)
	if s.proj == table.ProjectInclude {
		fmt.Fprintf(&b, ", include: [%s]", strings.Join(s.include, ", "))
	}
	return b.String() + "}"
}

// differences lists, as problems, how the live index differs from the rules' one.
func (s shape) differences(want shape, global bool) []string {
	var out []string
	if global && s.pk != want.pk {
		out = append(out, fmt.Sprintf("has partition key %s, the rules say %s", orNone(s.pk), want.pk))
	}
	if s.sk != want.sk {
		out = append(out, fmt.Sprintf("has sort key %s, the rules say %s", orNone(s.sk), orNone(want.sk)))
	}
	if s.proj != want.proj {
		out = append(out, fmt.Sprintf("projects %s, the rules say %s", projText(s), projText(want)))
	} else if s.proj == table.ProjectInclude && !slices.Equal(s.include, want.include) {
		extra, missing := setDiff(s.include, want.include), setDiff(want.include, s.include)
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "lacks "+strings.Join(missing, ", "))
		}
		if len(extra) > 0 {
			parts = append(parts, "has "+strings.Join(extra, ", ")+" besides")
		}
		out = append(out, fmt.Sprintf("projects %s, the rules say %s (%s)", projText(s), projText(want), strings.Join(parts, "; ")))
	}
	return out
}

func (c *comparison) localIndexes(live []types.LocalSecondaryIndexDescription) {
	got := map[string]shape{}
	for _, l := range live {
		got[aws.ToString(l.IndexName)] = liveShape(l.KeySchema, l.Projection)
	}
	declared := map[string]bool{}
	for _, l := range c.spec.LocalIndexes {
		declared[l.Name] = true
		subject := "LSI " + l.Name
		s, ok := got[l.Name]
		if !ok {
			c.add(subject, "missing", "a local secondary index can only be created with the table: remove %s from the rules' table section, or %s", l.Name, rebuild)
			continue
		}
		want, _ := c.spec.Index(l.Name)
		for _, p := range s.differences(specShape(want), false) {
			c.add(subject, p, "an LSI cannot be changed: declare it as the table has it, %s, or %s", s.yaml(l.Name, false), rebuild)
		}
		c.keyTypes(subject, "", s.sk, "an LSI cannot be changed: "+rebuild)
	}
	for _, name := range sortedKeys(got) {
		if !declared[name] {
			c.add("LSI "+name, "is not in the rules", "add it to the rules' table section as %s (an LSI cannot be deleted)", got[name].yaml(name, false))
		}
	}
}

func (c *comparison) globalIndexes(live []types.GlobalSecondaryIndexDescription) {
	got := map[string]shape{}
	status := map[string]types.IndexStatus{}
	for _, g := range live {
		got[aws.ToString(g.IndexName)] = liveShape(g.KeySchema, g.Projection)
		status[aws.ToString(g.IndexName)] = g.IndexStatus
	}
	declared := map[string]bool{}
	for _, g := range c.spec.GlobalIndexes {
		declared[g.Name] = true
		subject := "GSI " + g.Name
		idx, _ := c.spec.Index(g.Name)
		want := specShape(idx)
		s, ok := got[g.Name]
		if !ok {
			c.add(subject, "missing", "add it (%s) or remove it from the rules' table section", c.createGSI(g.Name, want))
			continue
		}
		for _, p := range s.differences(want, true) {
			c.add(subject, p, "a GSI cannot be changed: delete it (%s), then add it as the rules say (%s); or declare it as the table has it, %s",
				c.deleteGSI(g.Name), c.createGSI(g.Name, want), s.yaml(g.Name, true))
		}
		c.keyTypes(subject, s.pk, s.sk, fmt.Sprintf("a GSI cannot be changed: delete it (%s) and add it with string keys (%s)",
			c.deleteGSI(g.Name), c.createGSI(g.Name, want)))
		// A GSI being created or backfilled answers no query yet: a copy that queries it
		// would miss targets.
		if st := status[g.Name]; st != "" && st != types.IndexStatusActive {
			c.add(subject, "is "+string(st)+", not ACTIVE yet",
				"wait until it is ACTIVE (%s describe-table --table-name %s --query 'Table.GlobalSecondaryIndexes[?IndexName==`%s`].IndexStatus') before deploying rules that query it",
				c.cli, c.name, g.Name)
		}
	}
	for _, name := range sortedKeys(got) {
		if !declared[name] {
			c.add("GSI "+name, "is not in the rules", "add it to the rules' table section as %s, or delete it (%s)",
				got[name].yaml(name, true), c.deleteGSI(name))
		}
	}
}

func (c *comparison) stream(ss *types.StreamSpecification) {
	enable := fmt.Sprintf("%s update-table --table-name %s --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES", c.cli, c.name)
	switch {
	case ss == nil || !aws.ToBool(ss.StreamEnabled):
		c.add("stream", "is disabled", "enable it with NEW_AND_OLD_IMAGES (%s)", enable)
	case ss.StreamViewType != types.StreamViewTypeNewAndOldImages:
		c.add("stream", fmt.Sprintf("is %s, Denorm needs NEW_AND_OLD_IMAGES", ss.StreamViewType),
			"a stream's view type cannot be changed: disable it (%s update-table --table-name %s --stream-specification StreamEnabled=false), "+
				"enable NEW_AND_OLD_IMAGES (%s), point the event source mapping at the new stream, and run denorm backfill for the writes in between", c.cli, c.name, enable)
	}
}

func (c *comparison) ttl(d *types.TimeToLiveDescription) {
	want := c.spec.TTLAttribute
	var got string
	status := types.TimeToLiveStatusDisabled
	if d != nil {
		got, status = aws.ToString(d.AttributeName), d.TimeToLiveStatus
	}
	on := status == types.TimeToLiveStatusEnabled || status == types.TimeToLiveStatusEnabling
	set := func(enabled bool, attr string) string {
		return fmt.Sprintf("%s update-time-to-live --table-name %s --time-to-live-specification Enabled=%t,AttributeName=%s", c.cli, c.name, enabled, attr)
	}
	switch {
	case want != "" && !on:
		problem := "is disabled"
		if status != types.TimeToLiveStatusDisabled {
			problem = "is " + string(status)
		}
		c.add("TTL", problem, "enable it on %s (%s): Denorm's markers and fan-out jobs expire through it", want, set(true, want))
	case want != "" && got != want:
		c.add("TTL", fmt.Sprintf("is on %s, the rules say %s", got, want),
			"set ttlAttribute: %s in the rules' table section, or disable TTL (%s) and enable it on %s (%s); DynamoDB allows one TTL change an hour",
			got, set(false, got), want, set(true, want))
	case want == "" && on:
		c.add("TTL", fmt.Sprintf("is on %s, the rules declare no ttlAttribute", got),
			"set ttlAttribute: %s in the rules' table section, so that Denorm's markers and fan-out jobs expire", got)
	}
}

func keysOf(ks []types.KeySchemaElement) (pk, sk string) {
	for _, k := range ks {
		switch k.KeyType {
		case types.KeyTypeHash:
			pk = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			sk = aws.ToString(k.AttributeName)
		}
	}
	return pk, sk
}

func projText(s shape) string {
	if s.proj == table.ProjectInclude {
		return fmt.Sprintf("INCLUDE [%s]", strings.Join(s.include, ", "))
	}
	return string(s.proj)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// setDiff returns the items of a not in b, in a's order.
func setDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
