// Package handler is the stream processor's Lambda handler: decode, plan, coalesce, apply,
// and answer with the first record not fully applied so Lambda resumes there.
package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/streams"
)

// Handler processes DynamoDB stream batches. Build it once per process.
type Handler struct {
	set     *rules.Set
	exec    *apply.Executor
	log     *slog.Logger
	metrics io.Writer // CloudWatch Embedded Metric Format lines; nil for none
	name    string
	now     func() time.Time
}

// Options configure a Handler.
type Options struct {
	Logger *slog.Logger
	// Metrics receives one EMF JSON line per invocation (Lambda: os.Stdout).
	Metrics io.Writer
	// FunctionName is the metrics dimension.
	FunctionName string
}

// New returns a handler applying set's rules through exec.
func New(set *rules.Set, exec *apply.Executor, opt Options) *Handler {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.FunctionName == "" {
		opt.FunctionName = "denorm-streamproc"
	}
	return &Handler{set: set, exec: exec, log: opt.Logger, metrics: opt.Metrics, name: opt.FunctionName, now: time.Now}
}

// Outcome is what one invocation did, for logs, metrics and tests.
type Outcome struct {
	Records int
	Applied int // records before the first failure
	Effects int
	Failed  string // sequence number reported as the batch item failure ("" for none)
	Reason  error
	Stats   apply.Stats
	Age     time.Duration // age of the oldest record
	// NoImage counts records with neither image: a REMOVE without OldImage, which DynamoDB
	// Local emits when several clients delete one item at once. Nothing to apply.
	NoImage int
	// Unlinked counts rule effects left out because the item does not carry a variable of
	// the target's key (plan.RecordPlan.Unlinked): linked to no target, not a failure.
	Unlinked int
	// Skipped is set when the table's stream registry says the batch's stream is not the
	// current one: retired (another stream took over: a global table processed in another
	// Region now) or not registered (`denorm takeover` has not been run for it). The batch
	// is skipped whole and nothing is written; Reason says which stream is current.
	Skipped bool
}

// Handle is the Lambda handler. It returns an error (a whole-batch failure, which Lambda
// retries and bisects) only when the event envelope is unreadable or a bad record carries
// no sequence number to report; every other problem becomes a batch item failure.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (events.DynamoDBEventResponse, error) {
	out, err := h.Process(ctx, payload)
	h.emit(ctx, out, err)
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	if out.Failed != "" && out.Applied == 0 && out.Records > 1 {
		// Nothing applied: the first record failed. A batch item failure there would make
		// Lambda retry the same batch until its retries run out and then discard every
		// record in it, the good ones behind the failed one too. A function error makes an
		// event source mapping with BisectBatchOnFunctionError split the batch instead,
		// down to the failing record alone, which then fails by itself.
		return events.DynamoDBEventResponse{}, fmt.Errorf("first record %s of %d failed, returned as a function error so the batch is bisected: %w",
			out.Failed, out.Records, out.Reason)
	}
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	if out.Failed != "" {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: out.Failed})
	}
	return resp, nil
}

// Process runs one batch and reports what happened.
func (h *Handler) Process(ctx context.Context, payload json.RawMessage) (Outcome, error) {
	raws, err := record.SplitEvent(payload)
	if err != nil {
		return Outcome{}, fmt.Errorf("reading event: %w", err)
	}
	o := Outcome{Records: len(raws)}
	planner := plan.New(h.set)
	plans := make([]plan.RecordPlan, 0, len(raws))
	seqs := make([]string, 0, len(raws))
	stop := len(raws)
	epoch, known, stream := 0, false, ""
	for i, raw := range raws {
		c, err := record.Decode(raw)
		if err == nil && i == 0 && !c.Created.IsZero() {
			o.Age = h.now().Sub(c.Created)
		}
		if err == nil && known && c.Source != stream {
			err = fmt.Errorf("record %s is of stream %q in a batch of stream %q", c.EventID, c.Source, stream)
		}
		if err == nil && !known {
			stream = c.Source
			// Every record of a batch comes from one stream: its epoch is read once.
			var st apply.Stats
			st, epoch, err = h.exec.StreamEpoch(ctx, c.Source)
			o.Stats.Add(st)
			if errors.Is(err, streams.ErrRetired) || errors.Is(err, streams.ErrUnregistered) {
				o.Skipped, o.Reason = true, err
				return o, nil
			}
			known = err == nil
		}
		c.Epoch = epoch
		var rp plan.RecordPlan
		if err == nil {
			rp, err = planner.Plan(&c)
		}
		if err != nil {
			seq := c.Seq
			if seq == "" {
				seq = record.RawSeq(raw)
			}
			if seq == "" {
				return o, fmt.Errorf("record %d of %d: %w (and no SequenceNumber to report it by)", i+1, len(raws), err)
			}
			stop, o.Failed, o.Reason = i, seq, err
			seqs = append(seqs, seq)
			break
		}
		o.Effects += len(rp.Deltas) + len(rp.Writes) + len(rp.FanOuts) + len(rp.Pulls) + len(rp.Extremes) + len(rp.Refreshes)
		if rp.NoImage || (c.Old == nil && c.New == nil) {
			o.NoImage++
		}
		o.Unlinked += rp.Unlinked
		if rp.Job != nil {
			o.Effects++
		}
		plans = append(plans, rp)
		seqs = append(seqs, c.Seq)
	}
	res := h.exec.Apply(ctx, plan.Coalesce(plans))
	o.Stats.Add(res.Stats)
	o.Applied = stop
	if res.Failed >= 0 && res.Failed < stop {
		o.Applied, o.Failed, o.Reason = res.Failed, seqs[res.Failed], res.Err
	}
	return o, nil
}

func (h *Handler) emit(ctx context.Context, o Outcome, err error) {
	level := slog.LevelInfo
	attrs := []any{
		slog.Int("records", o.Records), slog.Int("applied", o.Applied), slog.Int("effects", o.Effects),
		slog.Int("writes", o.Stats.Requests), slog.Float64("wcu", o.Stats.WCU), slog.Int("duplicates", o.Stats.Duplicates),
		slog.Int("retries", o.Stats.Retries), slog.Int("conflicts", o.Stats.Conflicts), slog.Int("fanOutPages", o.Stats.FanOutPages), slog.Duration("oldestAge", o.Age),
		slog.Int("noImage", o.NoImage), slog.Int("unlinked", o.Unlinked),
	}
	if o.Stats.RefusedTotal() > 0 {
		var refused []any
		for g, n := range o.Stats.Refused {
			if n > 0 {
				refused = append(refused, slog.Int(apply.Guard(g).String(), n))
			}
		}
		attrs = append(attrs, slog.Group("refused", refused...))
	}
	if o.Stats.PullsSkipped > 0 {
		attrs = append(attrs, slog.Int("pullsSkipped", o.Stats.PullsSkipped))
	}
	if o.Stats.ExtremeRecomputes > 0 {
		attrs = append(attrs, slog.Int("extremeRecomputes", o.Stats.ExtremeRecomputes))
	}
	msg := "batch applied"
	switch {
	case err != nil:
		level, msg = slog.LevelError, "batch failed"
		attrs = append(attrs, slog.String("error", err.Error()))
	case o.Skipped:
		level, msg = slog.LevelError, "batch skipped: not the current stream of the table's stream registry; this processor writes nothing"
		attrs = append(attrs, slog.String("reason", o.Reason.Error()))
	case o.Failed != "":
		level, msg = slog.LevelWarn, "record not applied"
		attrs = append(attrs, slog.String("sequenceNumber", o.Failed), slog.String("reason", reason(o.Reason)))
	}
	h.log.Log(ctx, level, msg, attrs...)
	if h.metrics != nil {
		writeEMF(h.metrics, h.name, h.now(), o, err != nil)
	}
}

func reason(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, apply.ErrDeadline) {
		return "deadline: " + err.Error()
	}
	return err.Error()
}
