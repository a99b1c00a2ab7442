package esm

import "sync/atomic"

// Stats counts what a mapping did since New.
type Stats struct {
	// Batches formed from the stream (before any retry or bisection).
	Batches int64
	// Records read from the stream that passed the filter.
	Records int64
	// Invocations of the function, retries and second deliveries included.
	Invocations int64
	// Failures are invocations that failed: a function error, an invalid response or
	// reported batch item failures.
	Failures int64
	// Retries are invocations that repeated records after a failure.
	Retries int64
	// Bisects are batches split in halves after a function error.
	Bisects int64
	// OnFailure counts records sent to the on-failure destination (written or not).
	OnFailure int64
	// Filtered counts records the filter criteria dropped.
	Filtered int64
}

type counters struct {
	batches, records, invocations, failures, retries, bisects, onFailure, filtered atomic.Int64
}

// Stats returns a snapshot of the counters.
func (m *Mapping) Stats() Stats {
	c := &m.stats
	return Stats{
		Batches: c.batches.Load(), Records: c.records.Load(), Invocations: c.invocations.Load(),
		Failures: c.failures.Load(), Retries: c.retries.Load(), Bisects: c.bisects.Load(),
		OnFailure: c.onFailure.Load(), Filtered: c.filtered.Load(),
	}
}
