package esm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/denorm/denorm/internal/record"
)

// verdict is how the mapping judges one delivery of a batch, by Lambda's rules.
type verdict struct {
	ok bool
	// failedAt is the index of the lowest record the function reported as failed, or -1
	// when the whole batch failed.
	failedAt int
	out      outcome
}

// invokeBatch delivers recs once (twice with Hooks.DeliverTwice) and judges the outcome.
func (m *Mapping) invokeBatch(ctx context.Context, recs []pending) verdict {
	batch := make([]json.RawMessage, len(recs))
	for i, r := range recs {
		batch[i] = r.raw
	}
	h := m.cfg.Hooks
	if h.BeforeInvoke != nil {
		batch = h.BeforeInvoke(batch)
	}
	payload := record.EncodeEvent(batch)
	deliveries := 1
	if h.DeliverTwice {
		deliveries = 2
	}
	var resp []byte
	var err error
	for range deliveries {
		resp, err = m.call(ctx, payload)
		if h.AfterInvoke != nil {
			resp, err = h.AfterInvoke(batch, resp, err)
		}
	}
	v := m.judge(recs, resp, err)
	if !v.ok {
		m.stats.failures.Add(1)
		m.log.Debug("esm: invocation failed", "records", len(recs), "failedAt", v.failedAt, "error", err)
	}
	return v
}

// call invokes the function. A panic in an in-process handler is a function error, as a
// crashed runtime is for Lambda, rather than the end of the emulator.
func (m *Mapping) call(ctx context.Context, payload []byte) (resp []byte, err error) {
	m.stats.invocations.Add(1)
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, fmt.Errorf("esm: function panicked: %v", r)
		}
	}()
	return m.inv.Invoke(ctx, payload)
}

// judge applies Lambda's rules: an error fails the whole batch; with ReportBatchItemFailures
// the response may name failed records; an empty or null response, or an empty list, is
// success; invalid JSON, an empty itemIdentifier or one not in the batch fails it all.
func (m *Mapping) judge(recs []pending, resp []byte, err error) verdict {
	if err != nil {
		return verdict{failedAt: -1, out: outcome{invoked: true, functionError: functionErrorUnhandled}}
	}
	ok := verdict{ok: true, out: outcome{invoked: true}}
	whole := verdict{failedAt: -1, out: outcome{invoked: true, functionError: functionErrorNone}}
	if !m.cfg.ReportBatchItemFailures {
		return ok
	}
	body := bytes.TrimSpace(resp)
	if len(body) == 0 || bytes.Equal(body, []byte("null")) {
		return ok
	}
	if !json.Valid(body) {
		return whole
	}
	if body[0] != '{' {
		return ok // a JSON value that is no response object reports nothing
	}
	var r events.DynamoDBEventResponse
	if json.Unmarshal(body, &r) != nil {
		return whole
	}
	if len(r.BatchItemFailures) == 0 {
		return ok
	}
	index := make(map[string]int, len(recs))
	for i, p := range recs {
		index[p.seq] = i
	}
	lowest := len(recs)
	for _, f := range r.BatchItemFailures {
		i, found := index[f.ItemIdentifier]
		if f.ItemIdentifier == "" || !found {
			return whole
		}
		lowest = min(lowest, i)
	}
	return verdict{failedAt: lowest, out: outcome{invoked: true, functionError: functionErrorNone}}
}
