// Package bench measures Denorm against a naive, hand-written stream handler on DynamoDB
// Local, side by side in one run: write capacity, requests, records per second, lag from a
// source write to the visible copy, handler CPU per record, and the floor (one write per
// distinct target whose value changed in a batch). It also measures DynamoDB Local's own
// write ceiling on the machine, so pipeline throughput can be read as a fraction of it.
//
// Each run of a workload gets a fresh table and the same seeded operations. The setup
// (items whose derived state is empty by construction) is skipped on the stream; the
// measured operations are written while no mapping runs, so both systems drain the same
// backlog in the same batches; then a paced second part is written live to measure lag.
// Systems alternate (Denorm, baseline, Denorm, baseline ...), and every run ends with
// `denorm verify` (ops.Run) on its table: exactly once, or the run fails.
package bench
