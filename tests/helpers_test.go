package tests

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/provision"
	"github.com/denorm/denorm/internal/rules"
)

func deleteTable(db *dynamodb.Client, table string) {
	_ = provision.Delete(context.Background(), db, table)
}

// assertConverged runs `denorm verify`'s engine over the table: every copy, mirror,
// counter and sum must equal what its sources say.
func assertConverged(t *testing.T, p *local.Pipeline) {
	t.Helper()
	f, err := rules.Load(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ops.NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ops.Run(context.Background(), ops.Config{API: p.DB, Table: p.Table, Eval: ev, Examples: 5})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_ = rep.WriteText(&buf)
	checked := int64(0)
	for _, r := range rep.Rules {
		checked += r.Checked
	}
	if !rep.Clean() {
		t.Fatalf("not converged:\n%s", buf.String())
	}
	if checked == 0 {
		t.Fatalf("verify checked nothing:\n%s", buf.String())
	}
	t.Logf("converged: %d targets checked over %d rules", checked, len(rep.Rules))
}
