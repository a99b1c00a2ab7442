package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

func init() {
	register(command{name: "explain", summary: "show what rules a stream event fires and the writes they make (no table touched)", run: runExplain})
}

func runExplain(_ context.Context, args []string) error {
	fs := newFlags("explain", "(FILE | --rules FILE) --event EVENT.json")
	rulesFlag := fs.String("rules", "", "rules file (or give it as the argument FILE)")
	eventPath := fs.String("event", "", "a Lambda DynamoDB stream event (JSON); - for standard input")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	rulesPath, err := rulesArg(fs, *rulesFlag, pos, "")
	if err != nil {
		return err
	}
	if *eventPath == "" {
		return usageError(fs, "--event is required")
	}
	set, err := rules.LoadSet(rulesPath)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	var data []byte
	if *eventPath == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(*eventPath)
	}
	if err != nil {
		return fmt.Errorf("reading event: %w", err)
	}
	return explain(os.Stdout, set, data)
}

// explain prints each record's plan, then the coalesced batch. A record that cannot be
// decoded is shown in its place, and makes the error (exit status 1): the stream processor
// would fail it, so the event does not explain cleanly.
func explain(w io.Writer, set *rules.Set, event []byte) error {
	raws, err := record.SplitEvent(event)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	p := plan.New(set)
	var plans []plan.RecordPlan
	var undecoded []error
	for i, raw := range raws {
		c, err := record.Decode(raw)
		if err != nil {
			fmt.Fprintf(w, "record %d: cannot be decoded: %v\n", i+1, err)
			undecoded = append(undecoded, fmt.Errorf("record %d cannot be decoded: %w", i+1, err))
			continue
		}
		fmt.Fprintf(w, "record %d: %s seq %s %s\n", i+1, c.Op, c.Seq, keyOf(set, c))
		if c.TTL {
			fmt.Fprintln(w, "  removed by TTL")
		}
		rp, err := p.Explain(&c)
		if err != nil {
			fmt.Fprintf(w, "  cannot be applied: %v\n", err)
			continue
		}
		rp.Describe(w)
		explainBuckets(w, set, &c, &rp)
		plans = append(plans, rp)
	}
	b := plan.Coalesce(plans)
	fmt.Fprintf(w, "batch: %d version-guarded writes, %d fan-outs, %d pulls, %d watermarked counter states (one UpdateItem each, then the copy onto the target), %d relay writes (one UpdateItem per source and target in another partition), %d events with marker-guarded deltas (TransactWriteItems), %d counter targets the application wrote (one read of the state, a copy when it differs), %d fan-out jobs to continue\n",
		len(b.Writes), len(b.FanOuts), len(b.Pulls), len(b.Watermarked), len(b.Relays), len(b.Marked), len(b.Refreshes), len(b.Jobs))
	if len(b.Probes) > 0 {
		fmt.Fprintf(w, "batch: %d probes to answer (one UpdateItem each, after the batch's other writes)\n", len(b.Probes))
	}
	tops := 0
	for _, g := range b.Extremes {
		if g.Rule.Kind == rules.KindTop {
			tops++
		}
	}
	if n := len(b.Extremes) - tops; n > 0 {
		fmt.Fprintf(w, "batch: %d max/min/latest targets (one conditional UpdateItem per raise; a consistent read, and one query only when the extreme may have left)\n", n)
	}
	if tops > 0 {
		fmt.Fprintf(w, "batch: %d top lists (per list: one consistent read, one versioned UpdateItem when it changed, and one query only when a listed source left a full list or fell)\n", tops)
	}
	if len(undecoded) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d records cannot be decoded: %w", len(undecoded), len(raws), errors.Join(undecoded...))}
	}
	return nil
}

func keyOf(set *rules.Set, c record.Change) string {
	k := plan.Key{}
	if v, ok := c.Keys[set.Table.PartitionKey]; ok {
		k.PK = attrText(v)
	}
	if v, ok := c.Keys[set.Table.SortKey]; ok {
		k.SK = attrText(v)
	}
	return k.String()
}

func attrText(v any) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	}
	return fmt.Sprint(v)
}
