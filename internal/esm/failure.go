package esm

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/denorm/denorm/internal/atomicfile"
)

// Condition says why a batch went to the on-failure destination.
type Condition string

// Conditions, as Lambda names them in on-failure records.
const (
	RetryAttemptsExhausted Condition = "RetryAttemptsExhausted"
	RecordAgeExceeded      Condition = "RecordAgeExceeded"
)

// FailureRecord is the on-failure record Lambda sends for a stream batch it gives up on. It
// names the records (shard and sequence range) rather than holding them: a replay tool reads
// them back from the stream.
type FailureRecord struct {
	RequestContext     FailureRequestContext  `json:"requestContext"`
	ResponseContext    FailureResponseContext `json:"responseContext"`
	Version            string                 `json:"version"`
	Timestamp          string                 `json:"timestamp"`
	DDBStreamBatchInfo DDBStreamBatchInfo     `json:"DDBStreamBatchInfo"`
}

// FailureRequestContext describes the invocation that failed.
type FailureRequestContext struct {
	RequestID              string    `json:"requestId"`
	FunctionARN            string    `json:"functionArn"`
	Condition              Condition `json:"condition"`
	ApproximateInvokeCount int       `json:"approximateInvokeCount"`
}

// FailureResponseContext is the last invocation's outcome (zero when the records expired
// before any invocation).
type FailureResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError"`
}

// DDBStreamBatchInfo locates the discarded records in the stream.
type DDBStreamBatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamARN                       string `json:"streamArn"`
}

// Function error kinds in FailureResponseContext.FunctionError.
const (
	// functionErrorUnhandled: the function returned an error or panicked.
	functionErrorUnhandled = "Unhandled"
	// functionErrorNone: the function answered, but reported batch item failures.
	functionErrorNone = ""
)

// outcome is what the last invocation of a batch returned, for the on-failure record.
type outcome struct {
	invoked       bool
	functionError string
}

// discard sends recs to the on-failure destination: one file per batch in OnFailureDir.
func (m *Mapping) discard(shardID string, recs []pending, cond Condition, invokes int, last outcome) error {
	m.stats.onFailure.Add(int64(len(recs)))
	first, end := recs[0], recs[len(recs)-1]
	m.log.Warn("esm: discarding batch", "shard", shardID, "condition", cond, "records", len(recs),
		"firstSeq", first.seq, "lastSeq", end.seq, "invocations", invokes)
	if m.cfg.OnFailureDir == "" {
		return nil
	}
	fr := FailureRecord{
		RequestContext: FailureRequestContext{
			RequestID: newRequestID(), FunctionARN: m.cfg.FunctionARN, Condition: cond, ApproximateInvokeCount: invokes,
		},
		Version:   "1.0",
		Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		DDBStreamBatchInfo: DDBStreamBatchInfo{
			ShardID: shardID, StartSequenceNumber: first.seq, EndSequenceNumber: end.seq,
			ApproximateArrivalOfFirstRecord: arrival(first.created), ApproximateArrivalOfLastRecord: arrival(end.created),
			BatchSize: len(recs), StreamARN: m.cfg.StreamARN,
		},
	}
	if last.invoked {
		fr.ResponseContext = FailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: last.functionError}
	}
	b, err := json.MarshalIndent(fr, "", "  ")
	if err != nil {
		return fmt.Errorf("esm: encoding on-failure record: %w", err)
	}
	// Time first, so a directory listing is in failure order; shard and sequence make it unique.
	name := fmt.Sprintf("%s-%s-%s.json", time.Now().UTC().Format("20060102T150405.000000000Z"), shardID, first.seq)
	if err := atomicfile.Write(filepath.Join(m.cfg.OnFailureDir, name), append(b, '\n')); err != nil {
		return fmt.Errorf("esm: writing on-failure record: %w", err)
	}
	return nil
}

func arrival(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// newRequestID returns a random UUID (version 4), the shape of Lambda request ids.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
