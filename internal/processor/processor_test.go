package processor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/processor"
	"github.com/denorm/denorm/internal/rules"
)

// An empty batch needs no DynamoDB, yet logs its line and its metrics where Options say.
func TestOptionsReachTheHandler(t *testing.T) {
	var logs, metrics bytes.Buffer
	set, err := rules.LoadSet("../../rules/social.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := processor.New(nil, "t", set, processor.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Metrics: &metrics, FunctionName: "fn"})
	resp, err := h.Handle(context.Background(), json.RawMessage(`{"Records":[]}`))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("empty batch: %v %v", err, resp.BatchItemFailures)
	}
	if !strings.Contains(logs.String(), "batch applied") {
		t.Errorf("log = %q, want the batch's line", logs.String())
	}
	var line struct{ Function string }
	if err := json.Unmarshal(metrics.Bytes(), &line); err != nil || line.Function != "fn" {
		t.Errorf("metrics = %q (%v), want one EMF line for function fn", metrics.String(), err)
	}
}
