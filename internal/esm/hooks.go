package esm

import "encoding/json"

// Hooks are optional fault-injection points around every invocation. They run on the
// goroutine delivering the batch; shards of unrelated lineages, and the lanes of one shard
// with ParallelizationFactor > 1, run concurrently, so hooks that keep state must lock it.
type Hooks struct {
	// BeforeInvoke receives the records about to be sent (encoded as in the event) and
	// returns the records to send instead: duplicated, reordered, altered or dropped. Batch
	// item failures are still resolved against the original batch.
	BeforeInvoke func(batch []json.RawMessage) []json.RawMessage
	// AfterInvoke receives the records sent and the function's outcome and returns the
	// outcome the mapping acts on: for example a success turned into an error, as if the
	// response had been lost.
	AfterInvoke func(batch []json.RawMessage, response []byte, err error) ([]byte, error)
	// DeliverTwice invokes the function twice with every batch; the second outcome decides,
	// as when Lambda re-delivers a batch whose first invocation succeeded unseen.
	DeliverTwice bool
}
