package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/rules"
)

// TestTakeOverCommand runs `denorm takeover` on DynamoDB Local: on a table without a stream
// registry the table's stream takes epoch 1 (guards written before registries existed are
// epoch 0); run again it writes nothing; another stream then takes epoch 2 and retires it;
// and the retired stream cannot take over again.
func TestTakeOverCommand(t *testing.T) {
	ep := ddbtest.Endpoint(t)
	db, _ := ddbtest.Clients(t)
	f, err := rules.Load(socialRules)
	if err != nil {
		t.Fatal(err)
	}
	name, desc := ddbtest.NewTable(t, db, f.Table)
	arn := aws.ToString(desc.LatestStreamArn)
	other := arn + "-another-region"
	for _, step := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, 0, "stream " + arn + " is now the current stream of " + name + ", at epoch 1 (the table had no stream registry)"},
		{nil, 0, "stream " + arn + " is already the current stream of " + name + ", at epoch 1: nothing written"},
		{[]string{"--stream", other}, 0, "stream " + other + " is now the current stream of " + name + ", at epoch 2; " + arn + " (epoch 1) is retired"},
		{nil, 1, "denorm takeover: stream " + arn + " was retired when " + other + " took over"},
	} {
		code, out, errOut := denorm(t, append([]string{"takeover", socialRules, "--table", name, "--endpoint", ep}, step.args...)...)
		if code != step.code || !strings.HasPrefix(out+errOut, step.out) {
			t.Fatalf("takeover %v: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d and output starting\n%s", step.args, code, out, errOut, step.code, step.out)
		}
	}
}
