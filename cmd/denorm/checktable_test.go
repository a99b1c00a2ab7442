package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/rules"
)

// TestCheckTableCommand runs `denorm check-table` on DynamoDB Local: exit 0 on the table
// provision makes from the rules, exit 1 with every difference and its fix on a table that
// lacks a GSI, has a KEYS_ONLY stream and no TTL, and exit 1 on a table that does not exist.
// (Each kind of difference is tested in internal/tablecheck.)
func TestCheckTableCommand(t *testing.T) {
	ep := ddbtest.Endpoint(t)
	db, _ := ddbtest.Clients(t)
	f, err := rules.Load(socialRules)
	if err != nil {
		t.Fatal(err)
	}

	good, _ := ddbtest.NewTable(t, db, f.Table)
	code, out, errOut := denorm(t, "check-table", socialRules, "--table", good, "--endpoint", ep)
	want := "table " + good + " matches the rules: keys pk/sk, 5 local and 2 global secondary indexes, stream NEW_AND_OLD_IMAGES, TTL on ttl\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("matching table: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0 and\n%s", code, out, errOut, want)
	}

	lacking := f.Table
	lacking.GlobalIndexes = lacking.GlobalIndexes[:1]
	in := lacking.CreateTableInput("")
	in.StreamSpecification.StreamViewType = types.StreamViewTypeKeysOnly
	bad := ddbtest.NewRawTable(t, db, in, "")
	code, out, errOut = denorm(t, "check-table", "--rules", socialRules, "--table", bad, "--endpoint", ep)
	wantLines := []string{
		"table " + bad + " differs from the rules' table section:",
		"  GSI gsi2 missing: add it (aws dynamodb --endpoint-url " + ep + " update-table --table-name " + bad + " --attribute-definitions AttributeName=gsi2pk,AttributeType=S AttributeName=gsi2sk,AttributeType=S --global-secondary-index-updates ",
		"  stream is KEYS_ONLY, Denorm needs NEW_AND_OLD_IMAGES: a stream's view type cannot be changed: disable it (aws dynamodb --endpoint-url " + ep + " update-table --table-name " + bad + " --stream-specification StreamEnabled=false)",
		"  TTL is disabled: enable it on ttl (aws dynamodb --endpoint-url " + ep + " update-time-to-live --table-name " + bad + " --time-to-live-specification Enabled=true,AttributeName=ttl)",
	}
	t.Logf("denorm check-table on a differing table:\n%s%s", out, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	ok := code == 1 && len(lines) == len(wantLines) && errOut == "denorm check-table: 3 differences\n"
	for i := 0; ok && i < len(lines); i++ {
		ok = strings.HasPrefix(lines[i], wantLines[i])
	}
	if !ok {
		t.Errorf("differing table: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1 and lines starting\n%s", code, out, errOut, strings.Join(wantLines, "\n"))
	}

	code, _, errOut = denorm(t, "check-table", socialRules, "--table", "no-such-table-"+good, "--endpoint", ep)
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("missing table: exit %d, stderr %q", code, errOut)
	}
}
