package ops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/streams"
	"github.com/denorm/denorm/internal/table"
)

// A counter backfill is exact only on top of a stream processor that runs and keeps up:
// the totals it writes include every source write the table holds, and every delta of
// those writes must have reached the state items before the backfill reads them, or be
// seen landing (docs/operations.md, "Counters while the stream runs"). Deltas still on the
// stream when the processor starts later (a first start at TRIM_HORIZON replays 24 hours)
// or resumes (a disabled mapping) are applied on top of the totals again. So before it
// writes a count or sum, a backfill asks the processor, through the table: it writes a
// probe item, whose INSERT the processor answers (internal/apply, answerProbes) once it has
// applied the records before it, with the names of its rules.

// ProbeResult is what a probe found out.
type ProbeResult struct {
	// Answered is true when the stream processor answered within the wait.
	Answered bool
	// RoundTrip is how long the answer took: from the probe's write to reading the answer.
	RoundTrip time.Duration
	// Rules are the names of the rules the processor that answered runs.
	Rules []string
}

// Probe writes a probe item into table and waits up to wait for the stream processor to
// answer it, then deletes it. A probe the processor has not answered is deleted too (the
// processor, started later, finds it gone); it also carries the table's TTL attribute, an
// hour ahead, in case the delete does not happen. The table must have a stream
// (CheckProcessor makes sure it has, and that Denorm applies its records in this Region).
func Probe(ctx context.Context, api API, tbl string, spec table.Spec, wait time.Duration) (ProbeResult, error) {
	var res ProbeResult
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return res, err
	}
	d := &db{api: api, table: tbl, spec: spec, lim: newLimiter(0)}
	k := plan.Key{PK: rules.ProbePrefix + hex.EncodeToString(id[:])}
	if spec.SortKey != "" {
		k.SK = rules.ProbePrefix
	}
	ub := expression.Set(expression.Name(rules.ProbeTimeAttr), expression.Value(time.Now().UTC().Format(time.RFC3339Nano)))
	if spec.TTLAttribute != "" {
		ub = ub.Set(expression.Name(spec.TTLAttribute), val(&types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}))
	}
	start := time.Now()
	if err := d.update(ctx, k, ub, expression.AttributeNotExists(expression.Name(spec.PartitionKey))); err != nil {
		return res, fmt.Errorf("writing probe %s: %w", k.PK, err)
	}
	defer func() {
		// Not the caller's context: an interrupted wait still removes its probe.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = d.remove(dctx, k, expression.AttributeExists(expression.Name(spec.PartitionKey)))
	}()
	pause := 20 * time.Millisecond
	for {
		it, err := d.get(ctx, k)
		if err != nil {
			return res, err
		}
		if l, ok := it[rules.ProbeAnswerAttr].(*types.AttributeValueMemberL); ok {
			res.Answered, res.RoundTrip = true, time.Since(start)
			for _, v := range l.Value {
				if s, ok := v.(*types.AttributeValueMemberS); ok {
					res.Rules = append(res.Rules, s.Value)
				}
			}
			return res, nil
		}
		if time.Since(start) >= wait {
			return res, nil
		}
		if err := retry.Sleep(ctx, min(pause, wait-time.Since(start))); err != nil {
			return res, err
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// ErrNoProcessor is returned (wrapped) by CheckProcessor when the stream processor did
// not answer, or runs other rules: a counter backfill now would not be exact.
var ErrNoProcessor = errors.New("the stream processor is not ready for a counter backfill")

// CheckProcessor probes the stream processor of tbl before a backfill of ev's count and sum
// rules (nothing to check without them) and says, as an error wrapping ErrNoProcessor,
// why the backfill must not run now: no stream, a stream in this Region whose records
// Denorm does not apply (the stream registry's), no answer within wait, or an answer from
// a processor that does not run every rule backfilled. It returns the probe's round trip.
func CheckProcessor(ctx context.Context, api API, tbl string, ev *Evaluator, wait time.Duration) (time.Duration, error) {
	var counters []string
	for _, rs := range ev.rules {
		if rs.r.Kind.Aggregate() {
			counters = append(counters, rs.r.Name)
		}
	}
	if len(counters) == 0 {
		return 0, nil
	}
	desc, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	if err != nil {
		return 0, fmt.Errorf("describing table %s: %w", tbl, err)
	}
	if ss := desc.Table.StreamSpecification; ss == nil || !aws.ToBool(ss.StreamEnabled) {
		return 0, fmt.Errorf("%w: table %s has no stream, so no stream processor applies its writes: enable its NEW_AND_OLD_IMAGES stream and deploy the processor (denorm check-table prints the command), then backfill; a count backfilled now misses every write made before the processor starts", ErrNoProcessor, tbl)
	}
	// Before the probe: in a Region whose stream Denorm does not apply, an answer would
	// come from the current stream's Region and prove nothing here.
	if err := processedHere(ctx, api, tbl, ev.spec, aws.ToString(desc.Table.LatestStreamArn)); err != nil {
		return 0, err
	}
	res, err := Probe(ctx, api, tbl, ev.spec, wait)
	if err != nil {
		return 0, err
	}
	if !res.Answered {
		return 0, fmt.Errorf("%w: the stream processor did not answer a probe written to %s within %s: it is not deployed, its event source mapping is disabled, or it is that far behind (or it is a version that does not answer probes). "+
			"Counts and sums backfilled now are counted again when it applies the writes still on the stream (a first start at TRIM_HORIZON applies the last 24 hours). "+
			"Deploy or enable it, wait until its IteratorAge is near 0, and run the backfill again", ErrNoProcessor, tbl, wait)
	}
	var missing []string
	for _, n := range counters {
		found := false
		for _, m := range res.Rules {
			found = found || m == n
		}
		if !found {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return res.RoundTrip, fmt.Errorf("%w: the stream processor of %s does not run %q (it runs %q): deploy it with these rules first, wait until the old version's invocations are over, then backfill; a counter backfilled before misses every change made until the processor counts it",
			ErrNoProcessor, tbl, missing, res.Rules)
	}
	return res.RoundTrip, nil
}

// processedHere is nil when Denorm applies the records of tbl's stream in this Region
// (arn): the stream registry's current one, or the first of a table without a registry.
// Otherwise a backfill here would be a second writer beside the processor of the current
// stream, whose Region answers a probe written here once it has replicated there: an answer
// proves nothing about this Region.
func processedHere(ctx context.Context, api API, tbl string, spec table.Spec, arn string) error {
	out, err := api.GetItem(ctx, streams.Get(tbl, spec, true))
	if err != nil {
		return fmt.Errorf("reading the stream registry of %s: %w", tbl, err)
	}
	reg, err := streams.Parse(out.Item)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoProcessor, err)
	}
	if err := reg.Err(arn); err != nil {
		return fmt.Errorf("%w: Denorm does not apply the records of %s's stream in this Region, %s (%w): run it in the Region of the current stream", ErrNoProcessor, tbl, arn, err)
	}
	return nil
}
