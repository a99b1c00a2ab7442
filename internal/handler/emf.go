package handler

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/denorm/denorm/internal/apply"
)

// value is one metric of the line.
type value struct {
	name, unit string
	v          any
}

// writeEMF writes one CloudWatch Embedded Metric Format line: CloudWatch turns it into
// metrics without any API call from the function.
func writeEMF(w io.Writer, function string, now time.Time, o Outcome, batchFailed bool) {
	failures := 0
	if o.Failed != "" || batchFailed {
		failures = 1
	}
	skipped := 0
	if o.Skipped {
		skipped = o.Records
	}
	values := []value{
		{"Records", "Count", o.Records},
		{"Effects", "Count", o.Effects},
		{"Writes", "Count", o.Stats.Requests},
		{"ConsumedWCU", "Count", o.Stats.WCU},
		{"DuplicatesSkipped", "Count", o.Stats.Duplicates},
		{"Retries", "Count", o.Stats.Retries},
		{"Failures", "Count", failures},
		{"FanOutPages", "Count", o.Stats.FanOutPages},
		{"OldestRecordAge", "Milliseconds", o.Age.Milliseconds()},
		{"RecordsWithoutImage", "Count", o.NoImage},
		{"UnlinkedEffects", "Count", o.Unlinked},
		{"MissingTargets", "Count", o.Stats.MissingTarget},
		{"DeltasRelayed", "Count", o.Stats.Relayed},
		{"CopiesWritten", "Count", o.Stats.Copies},
		{"TargetsRefreshed", "Count", o.Stats.Refreshes},
		{"WritesRefused", "Count", o.Stats.RefusedTotal()},
		{"PullWritesSkipped", "Count", o.Stats.PullsSkipped},
		{"ExtremeRaises", "Count", o.Stats.ExtremeRaises},
		{"ExtremesKept", "Count", o.Stats.ExtremesKept},
		{"ExtremeRecomputes", "Count", o.Stats.ExtremeRecomputes},
		{"RecordsOfOtherStreams", "Count", skipped},
	}
	for g, n := range o.Stats.Refused {
		if apply.Guard(g) != apply.GuardNone {
			name := apply.Guard(g).String()
			values = append(values, value{"WritesRefusedBy" + strings.ToUpper(name[:1]) + name[1:], "Count", n})
		}
	}
	metrics := make([]map[string]string, 0, len(values))
	line := map[string]any{"Function": function}
	for _, v := range values {
		metrics = append(metrics, map[string]string{"Name": v.name, "Unit": v.unit})
		line[v.name] = v.v
	}
	line["_aws"] = map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace": "Denorm", "Dimensions": [][]string{{"Function"}}, "Metrics": metrics,
		}},
	}
	b, _ := json.Marshal(line)
	_, _ = w.Write(append(b, '\n'))
}
