package tablecheck_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/tablecheck"
)

// rulesSpec is the table section the live tables are checked against.
func rulesSpec() table.Spec {
	return table.Spec{PartitionKey: "pk", SortKey: "sk", TTLAttribute: "ttl",
		LocalIndexes: []table.LocalIndex{
			{Name: "lsi0", SortKey: "lsi0_sk", Projection: table.ProjectAll},
			{Name: "lsi1", SortKey: "lsi1_sk", Projection: table.ProjectKeysOnly},
		},
		GlobalIndexes: []table.GlobalIndex{
			{Name: "gsi1", PartitionKey: "gsi1pk", SortKey: "gsi1sk", Projection: table.ProjectAll},
			{Name: "gsi2", PartitionKey: "gsi2pk", SortKey: "gsi2sk", Projection: table.ProjectInclude, Include: []string{"name", "title"}},
		},
	}
}

// TestCheckTableOnDynamoDBLocal compares tables DynamoDB Local built with the rules: one
// made by provision from the rules' spec matches; each of the others differs in one way, and
// exactly that difference is reported.
func TestCheckTableOnDynamoDBLocal(t *testing.T) {
	db, _ := ddbtest.Clients(t)
	for _, tc := range []struct {
		name   string
		spec   func(*table.Spec)                // the table is provisioned from the rules' spec changed so
		create func(*dynamodb.CreateTableInput) // or created raw from the rules' CreateTable request changed so
		want   []string                         // prefixes of the differences
	}{
		{name: "matches"},
		{name: "no stream", create: func(in *dynamodb.CreateTableInput) { in.StreamSpecification = nil },
			want: []string{"stream is disabled: enable it with NEW_AND_OLD_IMAGES (aws dynamodb update-table --table-name "}},
		{name: "keys-only stream", create: func(in *dynamodb.CreateTableInput) {
			in.StreamSpecification.StreamViewType = types.StreamViewTypeKeysOnly
		}, want: []string{"stream is KEYS_ONLY, Denorm needs NEW_AND_OLD_IMAGES: a stream's view type cannot be changed: disable it"}},
		{name: "new-image stream", create: func(in *dynamodb.CreateTableInput) {
			in.StreamSpecification.StreamViewType = types.StreamViewTypeNewImage
		}, want: []string{"stream is NEW_IMAGE, Denorm needs NEW_AND_OLD_IMAGES"}},
		{name: "missing GSI", spec: func(s *table.Spec) { s.GlobalIndexes = s.GlobalIndexes[:1] },
			want: []string{"GSI gsi2 missing: add it (aws dynamodb update-table"}},
		{name: "extra GSI", spec: func(s *table.Spec) {
			s.GlobalIndexes = append(s.GlobalIndexes, table.GlobalIndex{Name: "byEmail", PartitionKey: "email", Projection: table.ProjectKeysOnly})
		}, want: []string{"GSI byEmail is not in the rules: add it to the rules' table section as {name: byEmail, partitionKey: email, projection: KEYS_ONLY}, or delete it"}},
		{name: "wrong projection", spec: func(s *table.Spec) { s.GlobalIndexes[0].Projection = table.ProjectKeysOnly },
			want: []string{"GSI gsi1 projects KEYS_ONLY, the rules say ALL: a GSI cannot be changed: delete it"}},
		{name: "extra projected attribute", spec: func(s *table.Spec) { s.GlobalIndexes[1].Include = []string{"title", "name", "avatar"} },
			want: []string{"GSI gsi2 projects INCLUDE [avatar, name, title], the rules say INCLUDE [name, title] (has avatar besides)"}},
		{name: "wrong sort key", spec: func(s *table.Spec) { s.SortKey = "sortKey" },
			want: []string{"sort key is sortKey, the rules say sk: a table's keys cannot be changed"}},
		{name: "numeric sort key", create: func(in *dynamodb.CreateTableInput) {
			for i, a := range in.AttributeDefinitions {
				if aws.ToString(a.AttributeName) == "sk" {
					in.AttributeDefinitions[i].AttributeType = types.ScalarAttributeTypeN
				}
			}
		}, want: []string{"sort key sk is of type N, the rules' keys are strings (S)"}},
		{name: "no TTL", spec: func(s *table.Spec) { s.TTLAttribute = "" },
			want: []string{"TTL is disabled: enable it on ttl (aws dynamodb update-time-to-live --table-name "}},
		{name: "TTL on another attribute", spec: func(s *table.Spec) { s.TTLAttribute = "expiresAt" },
			want: []string{"TTL is on expiresAt, the rules say ttl: set ttlAttribute: expiresAt in the rules' table section, or disable TTL"}},
		{name: "missing LSI", spec: func(s *table.Spec) { s.LocalIndexes = s.LocalIndexes[:1] },
			want: []string{"LSI lsi1 missing: a local secondary index can only be created with the table"}},
		{name: "LSI projection", spec: func(s *table.Spec) { s.LocalIndexes[1].Projection = table.ProjectAll },
			want: []string{"LSI lsi1 projects ALL, the rules say KEYS_ONLY: an LSI cannot be changed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			live := rulesSpec()
			var name string
			switch {
			case tc.create != nil:
				in := live.CreateTableInput("")
				tc.create(in)
				name = ddbtest.NewRawTable(t, db, in, live.TTLAttribute)
			default:
				if tc.spec != nil {
					tc.spec(&live)
				}
				name, _ = ddbtest.NewTable(t, db, live)
			}
			got := compare(t, db, name)
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], tc.want[i])
			}
			if !ok {
				t.Errorf("differences:\n  %s\nwant, as prefixes:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// compare describes the table and compares it with rulesSpec.
func compare(t *testing.T, db *dynamodb.Client, name string) []string {
	t.Helper()
	ctx := context.Background()
	dt, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range tablecheck.Compare(rulesSpec(), dt.Table, ttl.TimeToLiveDescription) {
		if !strings.Contains(d.Fix, "--table-name "+name) && (d.Subject == "stream" || d.Subject == "TTL") {
			t.Errorf("%s: the command does not name table %s", d, name)
		}
		out = append(out, d.String())
	}
	return out
}
