package reliability

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/chaos"
	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/rules"
)

// poisonBatch writes a folder, one poison record and four files of the folder before the
// mapping starts, so they arrive in one batch: [folder, poison, file x4]. It returns the
// folder as the pipeline left it, the on-failure records and the poison sequence numbers.
func poisonBatch(t *testing.T, poison []string) (map[string]types.AttributeValue, []esm.FailureRecord, map[string]string) {
	t.Helper()
	db, _ := ddbtest.Clients(t)
	table := ddbtest.TableName(t)
	t.Cleanup(func() { _ = provision.Delete(context.Background(), db, table) })
	set, err := rules.LoadSet(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provision.Ensure(context.Background(), db, table, set.Table); err != nil {
		t.Fatal(err)
	}
	put := func(kv ...any) {
		item := map[string]types.AttributeValue{}
		for i := 0; i+1 < len(kv); i += 2 {
			switch v := kv[i+1].(type) {
			case string:
				item[kv[i].(string)] = &types.AttributeValueMemberS{Value: v}
			case int:
				item[kv[i].(string)] = &types.AttributeValueMemberN{Value: itoa(v)}
			}
		}
		if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put("pk", "FOLDER#f1", "sk", "METADATA", "name", "f1")
	put(toAny(poison)...)
	for i := 1; i <= 4; i++ {
		put("pk", "FOLDER#f1", "sk", "FILE#2025-01-01#x"+itoa(i), "name", "x", "size", i)
	}
	hooks := chaos.NewHooks(chaos.Faults{Poison: true}, 1)
	dir := t.TempDir()
	cfg := local.Config{Endpoint: ddbtest.Endpoint(t), Table: table, RulesPath: rulesPath, Logger: quiet(),
		Mapping: esm.Config{BatchSize: 10, MaximumRetryAttempts: esm.Int(2), BisectBatchOnFunctionError: true,
			ReportBatchItemFailures: true, OnFailureDir: dir, RetryBackoff: 5 * time.Millisecond,
			PollInterval: 20 * time.Millisecond, Hooks: hooks.ESM()}}
	p, err := local.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	drainLocal(t, p)
	frs, err := chaos.ReadFailures(dir)
	if err != nil {
		t.Fatal(err)
	}
	return getItemDB(t, db, table, "FOLDER#f1", "METADATA"), frs, hooks.Poison()
}

// checkIsolated: the four files behind the poison record were applied, and the poison
// record alone is in the on-failure destination.
func checkIsolated(t *testing.T, folder map[string]types.AttributeValue, frs []esm.FailureRecord, poison map[string]string) {
	t.Helper()
	if len(poison) != 1 {
		t.Fatalf("%d poison records seen, want 1", len(poison))
	}
	if n := attrN(folder, "fileCount"); n != "4" || attrN(folder, "totalBytes") != "10" {
		t.Errorf("folder fileCount %s totalBytes %s, want 4 and 10: records behind the poison record were not applied", n, attrN(folder, "totalBytes"))
	}
	for _, p := range chaos.CheckFailures(frs, poison) {
		t.Error(p)
	}
}

// Each kind of record that can never be applied goes to the on-failure destination alone,
// and the records behind it in its batch are applied: a truncated record and one without a
// sequence number fail the invocation (the mapping bisects down to them); an unknown
// attribute type and a sum value that is a string fail the invocation as well when they
// are the first record of a batch of several (handler.Handle), so the mapping bisects
// down to them too.
func TestPoisonIsIsolated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		poison []string
	}{
		{"truncated", []string{"pk", chaos.VoidFolder + "1", "sk", "FILE#2025-01-01#v1" + string(rune(chaos.PoisonTruncated)), "size", "1"}},
		{"no sequence number", []string{"pk", chaos.VoidFolder + "1", "sk", "FILE#2025-01-01#v1" + string(rune(chaos.PoisonNoSeq)), "size", "1"}},
		{"unknown attribute type", []string{"pk", chaos.VoidFolder + "1", "sk", "FILE#2025-01-01#v1" + string(rune(chaos.PoisonBadType)), "size", "1"}},
		{"sum value is a string", []string{"pk", "FOLDER#f1", "sk", "FILE#2025-01-01#bad", "size", "12 kB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			folder, frs, poison := poisonBatch(t, tc.poison)
			checkIsolated(t, folder, frs, poison)
		})
	}
}

// A poison record at the head of a batch: the handler returns a function error rather than
// a batch item failure for the first record, so the mapping bisects the batch and the four
// files behind the poison record are applied; only the poison record is discarded.
func TestPoisonAtHeadKeepsTheRecordsBehindIt(t *testing.T) {
	folder, frs, poison := poisonBatch(t, []string{"pk", "FOLDER#f1", "sk", "FILE#2025-01-01#bad", "size", "12 kB"})
	checkIsolated(t, folder, frs, poison)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
