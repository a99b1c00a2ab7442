package tablecheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/table"
)

// spec is the rules' table section the cases compare with: keys, two LSIs, two GSIs (one
// INCLUDE), TTL.
func spec() table.Spec {
	return table.Spec{PartitionKey: "pk", SortKey: "sk", TTLAttribute: "ttl",
		LocalIndexes: []table.LocalIndex{
			{Name: "lsi0", SortKey: "lsi0_sk", Projection: table.ProjectAll},
			{Name: "lsi1", SortKey: "lsi1_sk", Projection: table.ProjectKeysOnly},
		},
		GlobalIndexes: []table.GlobalIndex{
			{Name: "gsi1", PartitionKey: "gsi1pk", SortKey: "gsi1sk"},
			{Name: "gsi2", PartitionKey: "gsi2pk", Projection: table.ProjectInclude, Include: []string{"name", "title"}},
		},
	}
}

// describe is what DescribeTable returns for a table CreateTable made from s.
func describe(s table.Spec) *types.TableDescription {
	in := s.CreateTableInput("Social")
	d := &types.TableDescription{TableName: in.TableName, AttributeDefinitions: in.AttributeDefinitions, KeySchema: in.KeySchema,
		StreamSpecification: in.StreamSpecification, TableStatus: types.TableStatusActive}
	for _, l := range in.LocalSecondaryIndexes {
		d.LocalSecondaryIndexes = append(d.LocalSecondaryIndexes, types.LocalSecondaryIndexDescription{
			IndexName: l.IndexName, KeySchema: l.KeySchema, Projection: l.Projection})
	}
	for _, g := range in.GlobalSecondaryIndexes {
		d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection, IndexStatus: types.IndexStatusActive})
	}
	return d
}

func ttlOn(attr string) *types.TimeToLiveDescription {
	return &types.TimeToLiveDescription{AttributeName: aws.String(attr), TimeToLiveStatus: types.TimeToLiveStatusEnabled}
}

// edit changes the table from the rules' one: the spec it is created from, then its
// description.
type edit struct {
	spec func(*table.Spec)
	desc func(*types.TableDescription)
}

func onSpec(f func(*table.Spec)) edit             { return edit{spec: f} }
func onDesc(f func(*types.TableDescription)) edit { return edit{desc: f} }

// live is the description of a table made from the rules' spec and changed by e.
func live(e edit) *types.TableDescription {
	s := spec()
	if e.spec != nil {
		e.spec(&s)
	}
	d := describe(s)
	if e.desc != nil {
		e.desc(d)
	}
	return d
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit edit
		ttl  *types.TimeToLiveDescription
		want []string // "subject problem" of every difference, in order, then ": " and a fragment of the fix
	}{
		{"matches", edit{}, ttlOn("ttl"), nil},
		{"TTL still enabling", edit{}, &types.TimeToLiveDescription{AttributeName: aws.String("ttl"), TimeToLiveStatus: types.TimeToLiveStatusEnabling}, nil},
		{"no stream", onDesc(func(d *types.TableDescription) { d.StreamSpecification = nil }), ttlOn("ttl"), []string{
			"stream is disabled: enable it with NEW_AND_OLD_IMAGES (aws dynamodb update-table --table-name Social --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES)"}},
		{"stream off", onDesc(func(d *types.TableDescription) { d.StreamSpecification.StreamEnabled = aws.Bool(false) }), ttlOn("ttl"), []string{
			"stream is disabled: "}},
		{"stream keys only", onDesc(func(d *types.TableDescription) { d.StreamSpecification.StreamViewType = types.StreamViewTypeKeysOnly }), ttlOn("ttl"), []string{
			"stream is KEYS_ONLY, Denorm needs NEW_AND_OLD_IMAGES: a stream's view type cannot be changed: disable it (aws dynamodb update-table --table-name Social --stream-specification StreamEnabled=false), " +
				"enable NEW_AND_OLD_IMAGES (aws dynamodb update-table --table-name Social --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES)"}},
		{"GSI missing", onSpec(func(s *table.Spec) { s.GlobalIndexes = s.GlobalIndexes[:1] }), ttlOn("ttl"), []string{
			`GSI gsi2 missing: add it (aws dynamodb update-table --table-name Social --attribute-definitions AttributeName=gsi2pk,AttributeType=S --global-secondary-index-updates ` +
				`'[{"Create":{"IndexName":"gsi2","KeySchema":[{"AttributeName":"gsi2pk","KeyType":"HASH"}],"Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["name","title"]}}}]') ` +
				`or remove it from the rules' table section`}},
		{"GSI projection", onSpec(func(s *table.Spec) { s.GlobalIndexes[0].Projection = table.ProjectKeysOnly }), ttlOn("ttl"), []string{
			`GSI gsi1 projects KEYS_ONLY, the rules say ALL: a GSI cannot be changed: delete it (aws dynamodb update-table --table-name Social --global-secondary-index-updates '[{"Delete":{"IndexName":"gsi1"}}]'), ` +
				`then add it as the rules say (aws dynamodb update-table --table-name Social --attribute-definitions AttributeName=gsi1pk,AttributeType=S AttributeName=gsi1sk,AttributeType=S --global-secondary-index-updates ` +
				`'[{"Create":{"IndexName":"gsi1","KeySchema":[{"AttributeName":"gsi1pk","KeyType":"HASH"},{"AttributeName":"gsi1sk","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}}]'); ` +
				`or declare it as the table has it, {name: gsi1, partitionKey: gsi1pk, sortKey: gsi1sk, projection: KEYS_ONLY}`}},
		{"GSI projects an extra and lacks an attribute", onSpec(func(s *table.Spec) { s.GlobalIndexes[1].Include = []string{"title", "avatar"} }), ttlOn("ttl"), []string{
			"GSI gsi2 projects INCLUDE [avatar, title], the rules say INCLUDE [name, title] (lacks name; has avatar besides): a GSI cannot be changed: delete it",
		}},
		{"GSI keys", onSpec(func(s *table.Spec) { s.GlobalIndexes[0].PartitionKey, s.GlobalIndexes[0].SortKey = "byUser", "" }), ttlOn("ttl"), []string{
			"GSI gsi1 has partition key byUser, the rules say gsi1pk: a GSI cannot be changed",
			"GSI gsi1 has sort key none, the rules say gsi1sk: a GSI cannot be changed",
		}},
		{"GSI not in the rules", onSpec(func(s *table.Spec) {
			s.GlobalIndexes = append(s.GlobalIndexes, table.GlobalIndex{Name: "byEmail", PartitionKey: "email", Projection: table.ProjectKeysOnly})
		}), ttlOn("ttl"), []string{
			`GSI byEmail is not in the rules: add it to the rules' table section as {name: byEmail, partitionKey: email, projection: KEYS_ONLY}, or delete it (aws dynamodb update-table --table-name Social --global-secondary-index-updates '[{"Delete":{"IndexName":"byEmail"}}]')`,
		}},
		{"LSI missing", onSpec(func(s *table.Spec) { s.LocalIndexes = s.LocalIndexes[:1] }), ttlOn("ttl"), []string{
			"LSI lsi1 missing: a local secondary index can only be created with the table: remove lsi1 from the rules' table section, or create a table from the rules (denorm local, the CDK stack) and copy the items into it",
		}},
		{"LSI differs", onSpec(func(s *table.Spec) {
			s.LocalIndexes[0].SortKey, s.LocalIndexes[0].Projection = "createdAt", table.ProjectKeysOnly
		}), ttlOn("ttl"), []string{
			"LSI lsi0 has sort key createdAt, the rules say lsi0_sk: an LSI cannot be changed: declare it as the table has it, {name: lsi0, sortKey: createdAt, projection: KEYS_ONLY}, or create a table",
			"LSI lsi0 projects KEYS_ONLY, the rules say ALL: an LSI cannot be changed",
		}},
		{"LSI not in the rules", onSpec(func(s *table.Spec) {
			s.LocalIndexes = append(s.LocalIndexes, table.LocalIndex{Name: "byDate", SortKey: "date", Projection: table.ProjectInclude, Include: []string{"b", "a"}})
		}), ttlOn("ttl"), []string{
			"LSI byDate is not in the rules: add it to the rules' table section as {name: byDate, sortKey: date, projection: INCLUDE, include: [a, b]} (an LSI cannot be deleted)",
		}},
		{"partition key", onSpec(func(s *table.Spec) { s.PartitionKey = "id" }), ttlOn("ttl"), []string{
			"partition key is id, the rules say pk: a table's keys cannot be changed: set partitionKey: id in the rules' table section, or create a table from the rules",
		}},
		{"no sort key", onSpec(func(s *table.Spec) { s.SortKey, s.LocalIndexes = "", nil }), ttlOn("ttl"), []string{
			"sort key is none, the rules say sk: a table's keys cannot be changed: remove sortKey (and the local indexes) from the rules' table section, or create",
			"LSI lsi0 missing",
			"LSI lsi1 missing",
		}},
		{"key types", onDesc(func(d *types.TableDescription) {
			for i, a := range d.AttributeDefinitions {
				if n := aws.ToString(a.AttributeName); n == "sk" || n == "gsi2pk" {
					d.AttributeDefinitions[i].AttributeType = types.ScalarAttributeTypeN
				}
			}
		}), ttlOn("ttl"), []string{
			"sort key sk is of type N, the rules' keys are strings (S): a table's key types cannot be changed",
			"GSI gsi2 partition key gsi2pk is of type N, the rules' keys are strings (S): a GSI cannot be changed: delete it",
		}},
		{"no TTL", edit{}, nil, []string{
			"TTL is disabled: enable it on ttl (aws dynamodb update-time-to-live --table-name Social --time-to-live-specification Enabled=true,AttributeName=ttl): Denorm's markers and fan-out jobs expire through it",
		}},
		{"TTL disabling", edit{}, &types.TimeToLiveDescription{AttributeName: aws.String("ttl"), TimeToLiveStatus: types.TimeToLiveStatusDisabling}, []string{
			"TTL is DISABLING: enable it on ttl",
		}},
		{"TTL on another attribute", edit{}, ttlOn("expiresAt"), []string{
			"TTL is on expiresAt, the rules say ttl: set ttlAttribute: expiresAt in the rules' table section, or disable TTL (aws dynamodb update-time-to-live --table-name Social --time-to-live-specification Enabled=false,AttributeName=expiresAt) " +
				"and enable it on ttl (aws dynamodb update-time-to-live --table-name Social --time-to-live-specification Enabled=true,AttributeName=ttl)",
		}},
		{"GSI still being created", onDesc(func(d *types.TableDescription) { d.GlobalSecondaryIndexes[1].IndexStatus = types.IndexStatusCreating }), ttlOn("ttl"), []string{
			"GSI gsi2 is CREATING, not ACTIVE yet: wait until it is ACTIVE (aws dynamodb describe-table --table-name Social --query 'Table.GlobalSecondaryIndexes[?IndexName==`gsi2`].IndexStatus') before deploying rules that query it",
		}},
		{"every difference at once", edit{
			spec: func(s *table.Spec) { s.LocalIndexes, s.GlobalIndexes = s.LocalIndexes[:1], s.GlobalIndexes[:1] },
			desc: func(d *types.TableDescription) { d.StreamSpecification.StreamViewType = types.StreamViewTypeNewImage },
		}, nil, []string{"LSI lsi1 missing", "GSI gsi2 missing", "stream is NEW_IMAGE", "TTL is disabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(spec(), live(tc.edit), tc.ttl)
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i].String(), tc.want[i])
			}
			if !ok {
				var b strings.Builder
				for _, d := range got {
					fmt.Fprintf(&b, "\n  %s", d)
				}
				t.Errorf("differences:%s\nwant, as prefixes:\n  %s", b.String(), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// The fixes name the endpoint the table was described at, so they can be run as printed.
func TestCompareAtAnEndpoint(t *testing.T) {
	got := CompareAt(spec(), live(onSpec(func(s *table.Spec) { s.GlobalIndexes = s.GlobalIndexes[:1] })), nil, "http://localhost:8000")
	if len(got) != 2 {
		t.Fatalf("differences %v, want the missing GSI and TTL", got)
	}
	for _, d := range got {
		if !strings.Contains(d.Fix, "aws dynamodb --endpoint-url http://localhost:8000 update-") {
			t.Errorf("fix without the endpoint: %s", d)
		}
	}
}

// Without a ttlAttribute the rules expect TTL off; a table expiring items on some
// attribute is a difference, and a table without TTL is not.
func TestCompareNoTTLInRules(t *testing.T) {
	s := spec()
	s.TTLAttribute = ""
	if got := Compare(s, describe(s), nil); got != nil {
		t.Errorf("TTL off: %v", got)
	}
	got := Compare(s, describe(s), ttlOn("expiresAt"))
	want := "TTL is on expiresAt, the rules declare no ttlAttribute: set ttlAttribute: expiresAt in the rules' table section"
	if len(got) != 1 || !strings.HasPrefix(got[0].String(), want) {
		t.Errorf("differences %v, want %q", got, want)
	}
}

func ExampleCompare() {
	s := table.Spec{PartitionKey: "pk", SortKey: "sk", TTLAttribute: "ttl"}
	desc := &types.TableDescription{TableName: aws.String("Social"),
		KeySchema:           []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}}
	for _, d := range Compare(s, desc, nil) {
		fmt.Println(d)
	}
	// Output:
	// TTL is disabled: enable it on ttl (aws dynamodb update-time-to-live --table-name Social --time-to-live-specification Enabled=true,AttributeName=ttl): Denorm's markers and fan-out jobs expire through it
}
