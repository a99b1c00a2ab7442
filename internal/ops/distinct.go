package ops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/exprval"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/rulesdiff"
	"github.com/denorm/denorm/internal/value"
)

// A distinct rule's state is its reference items (plan.DistinctRef: how many sources of a
// target hold a value) and the target's state item, which holds how many of them are above
// zero. The sources pass totals the reference items (Expected.Totals, keyed by reference
// item). A verify reports each reference item whose number differs, and each target whose
// copy differs from the number of its values.
//
// A repair decides each target with its reference items, in one transaction: it reads the
// state and the reference items (one consistent Query of the target's relay partition),
// and writes the reference items that differ from the scan together with the state's
// number, each on condition that its version is the one it read; the reference items'
// writes raise rules.RefRepairAttr, so that the processor does not move the state again
// for their records. As for counts, a target whose state or reference items moved since
// the states pass read them (a delta landed during the run) is left as a conflict.

// distinctIndex is, per distinct rule, its targets' reference items and numbers of
// values, worked out once from Expected.Totals after the sources pass.
type distinctIndex struct {
	once   sync.Once
	refs   []map[plan.Key]map[plan.Key]value.Number // target -> reference item -> number
	counts []map[plan.Key]int64                     // target -> values with sources
}

func (e *Expected) distinctOf() *distinctIndex {
	x := &e.distinct
	x.once.Do(func() {
		x.refs = make([]map[plan.Key]map[plan.Key]value.Number, len(e.Totals))
		x.counts = make([]map[plan.Key]int64, len(e.Totals))
		for j, refs := range e.Totals {
			if e.kinds[j] != rules.KindDistinct {
				continue
			}
			x.refs[j], x.counts[j] = map[plan.Key]map[plan.Key]value.Number{}, map[plan.Key]int64{}
			for ref, n := range refs {
				t, _, ok := plan.ParseDistinctRef(ref)
				if !ok || n.Sign() <= 0 {
					continue
				}
				if x.refs[j][t] == nil {
					x.refs[j][t] = map[plan.Key]value.Number{}
				}
				x.refs[j][t][ref] = n
				x.counts[j][t]++
			}
		}
	})
	return x
}

// DistinctTotal is how many different values the sources of distinct rule i's target k
// hold.
func (e *Expected) DistinctTotal(i int, k plan.Key) value.Number {
	return value.Int(e.distinctOf().counts[i][k])
}

// distinctTargets are the targets of distinct rule i that some source holds a value for.
func (e *Expected) distinctTargets(i int) []plan.Key {
	var out []plan.Key
	for t := range e.distinctOf().refs[i] {
		out = append(out, t)
	}
	sort.Slice(out, func(a, b int) bool { return keyLess(out[a], out[b]) })
	return out
}

// refRule returns the distinct rule among which whose reference item item is, and its
// key.
func (w *Worker) refRule(item record.Item, which []int) (int, plan.Key, bool) {
	k := itemKey(w.ev.spec, item)
	_, name, ok := plan.ParseDistinctRef(k)
	if !ok {
		return 0, k, false
	}
	for _, i := range which {
		if r := w.ev.rules[i].r; r.Kind == rules.KindDistinct && r.Name == name {
			return i, k, true
		}
	}
	return 0, k, false
}

// errDistinctMoved is the note of a distinct target whose state or reference items a delta
// moved during the run.
var errDistinctMoved = errors.New("written during the run (its state or a reference item moved since the states pass): run again when its sources are not written")

// maxRefWrites bounds the reference items one transaction sets beside the state (100
// items per TransactWriteItems).
const maxRefWrites = 99

// decideDistinct is the repair of one distinct target (see above). found reports whether
// it was wrong (or could not be confirmed), to be shown as drift.
func (rp *repairer) decideDistinct(ctx context.Context, d *Drift, exp *Expected, sv stateVersions) (o Outcome, found bool, err error) {
	r := rp.w.ev.rules[d.Rule].r
	attr := r.Agg.Attribute
	state, err := rp.db.getState(ctx, d.Key)
	if err != nil {
		return Failed, true, err
	}
	read, err := rp.db.query(ctx, "", rp.db.spec.PartitionKey, rules.RelayPrefix+d.Key.PK, rp.db.spec.SortKey,
		rules.DistinctRefPrefix+r.Name+"#", true)
	if err != nil {
		return Failed, true, err
	}
	refs := map[plan.Key]record.Item{}
	for _, it := range read {
		k := itemKey(rp.db.spec, it)
		if t, _, ok := plan.ParseDistinctRef(k); ok && t == d.Key {
			refs[k] = it
		}
	}
	want := exp.distinctOf().refs[d.Rule][d.Key]
	stateV := counter.Version(state[rules.StateVersionAttr])
	moved := sv.read != nil && stateV != sv.read[d.Key] && !sv.ours(d.Key, stateV)
	for k, it := range refs {
		v := counter.Version(it[rules.StateVersionAttr])
		moved = moved || sv.read != nil && v != sv.read[k] && !sv.ours(k, v)
	}
	if moved {
		if decided(state, []*rules.CompiledRule{r}) {
			// Moved, but a run set the state and its reference items (an interrupted run
			// of this one, its write not yet in the checkpoint, or an earlier one) and only
			// the processor's exactly-once deltas moved them since: as exact as that run's
			// decision, as for counts (counters.go).
			return rp.distinctCopy(ctx, d, r, state)
		}
		return Conflict, true, errDistinctMoved
	}
	// The reference items that differ from the scan, in key order.
	var change []plan.Key
	for k, it := range refs {
		if !value.NumberOf(it[attr]).Sub(want[k]).IsZero() {
			change = append(change, k)
		}
	}
	for k := range want {
		if _, ok := refs[k]; !ok {
			change = append(change, k)
		}
	}
	sort.Slice(change, func(a, b int) bool { return keyLess(change[a], change[b]) })
	held := int64(0) // reference items above zero, as they will be
	for _, it := range refs {
		if value.NumberOf(it[attr]).Sign() > 0 {
			held++
		}
	}
	stateRight := value.NumberOf(state[attr]).Sub(value.Int(held)).IsZero()
	if len(change) == 0 && stateRight {
		return rp.distinctCopy(ctx, d, r, state)
	}
	version := state[rules.StateVersionAttr]
	for len(change) > 0 || !stateRight {
		n := min(len(change), maxRefWrites)
		var items []types.TransactWriteItem
		written := change[:n]
		for _, k := range written {
			before := refs[k]
			w := want[k]
			held += sign(w) - sign(value.NumberOf(before[attr]))
			ub := expression.Set(expression.Name(attr), val(numberAV(w))).
				Add(expression.Name(rules.StateVersionAttr), one()).
				Add(expression.Name(rules.RefRepairAttr), one())
			cond := unchanged(rules.StateVersionAttr, before[rules.StateVersionAttr])
			if before == nil {
				cond = expression.AttributeNotExists(expression.Name(rp.db.spec.PartitionKey))
			}
			it, err := rp.db.txUpdate(k, ub, cond)
			if err != nil {
				return Failed, true, err
			}
			items = append(items, it)
		}
		change = change[n:]
		ub := expression.Set(expression.Name(attr), val(numberAV(value.Int(held)))).
			Add(expression.Name(rules.StateVersionAttr), one()).
			Add(expression.Name(rules.StateDecidedAttr), exprval.Of(&types.AttributeValueMemberSS{Value: []string{rulesdiff.Digest(r)}}))
		it, err := rp.db.txUpdate(counter.StateKey(d.Key), ub, unchanged(rules.StateVersionAttr, version))
		if err != nil {
			return Failed, true, err
		}
		items = append(items, it)
		if err := rp.db.transact(ctx, "setting the distinct state of "+d.Key.PK+" "+d.Key.SK, items); err != nil {
			var cancel *types.TransactionCanceledException
			if errors.As(err, &cancel) {
				return Conflict, true, errDistinctMoved
			}
			return Failed, true, err
		}
		v := counter.Version(version) + 1
		version = numberAV(value.Int(int64(v)))
		sv.wrote(d.Key, v)
		for _, k := range written { // a page handled again after an interruption knows them
			sv.wrote(k, counter.Version(refs[k][rules.StateVersionAttr])+1)
		}
		stateRight = true
	}
	state, err = rp.db.getState(ctx, d.Key)
	if err != nil {
		return Failed, true, err
	}
	if _, _, err := rp.distinctCopy(ctx, d, r, state); err != nil {
		return Failed, true, err
	}
	return Repaired, true, nil
}

// distinctCopy copies state onto the target when the target as scanned differs from it.
func (rp *repairer) distinctCopy(ctx context.Context, d *Drift, r *rules.CompiledRule, state record.Item) (Outcome, bool, error) {
	if d.Got == nil {
		return Resolved, false, nil // no target: it gets the copy when it is inserted
	}
	if _, drift := counterDiff(r, d.Got, value.NumberOf(state[r.Agg.Attribute])); !drift && len(d.Attrs) == 0 {
		return Resolved, false, nil
	}
	if err := rp.db.copyState(ctx, []*rules.CompiledRule{r}, d.Key, state); err != nil {
		return Failed, true, err
	}
	return Repaired, true, nil
}

// one is the number 1 as an ADD operand.
func one() expression.ValueBuilder { return expression.Value(raw{numberAV(value.Int(1))}) }

func sign(n value.Number) int64 {
	if n.Sign() > 0 {
		return 1
	}
	return 0
}

// decideDistinct decides every distinct target in ds (repairer.decideDistinct) and reports
// those that were wrong or could not be confirmed as drift. The rules of one target are
// decided one after the other, each on the state the one before left (its version is the
// round's own), and the targets in parallel.
func (r *runner) decideDistinct(ctx context.Context, pool chan *repairer, ds []Drift, exp *Expected, sv stateVersions, stats map[string]*RuleStats) error {
	outs := make([]Outcome, len(ds))
	found := make([]bool, len(ds))
	errs := make([]error, len(ds))
	byTarget := map[plan.Key][]int{}
	var order []plan.Key
	for i := range ds {
		if _, ok := byTarget[ds[i].Key]; !ok {
			order = append(order, ds[i].Key)
		}
		byTarget[ds[i].Key] = append(byTarget[ds[i].Key], i)
	}
	var wg sync.WaitGroup
	for _, k := range order {
		rp := <-pool
		wg.Add(1)
		go func() {
			defer func() { pool <- rp; wg.Done() }()
			for _, i := range byTarget[k] {
				outs[i], found[i], errs[i] = rp.decideDistinct(ctx, &ds[i], exp, sv)
			}
		}()
	}
	wg.Wait()
	for i := range ds {
		if err := errs[i]; err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return err
		}
	}
	for i := range ds {
		d := &ds[i]
		s := r.stats(stats, d.Rule)
		if !found[i] || d.NoTarget && (outs[i] == Repaired || outs[i] == Resolved) {
			continue // a target away whose state is now decided: nothing shows it
		}
		s.Drift++
		s.outcome(outs[i])
		if len(d.Attrs) == 0 {
			attr := r.cfg.Eval.rules[d.Rule].r.Agg.Attribute
			var got types.AttributeValue
			if d.Got != nil {
				got = d.Got[attr]
			}
			d.Attrs = []AttrDiff{{Name: attr, Got: got, Want: numberAV(d.Total)}}
		}
		note := outs[i].String()
		if errs[i] != nil {
			note = errs[i].Error()
		}
		if d.NoTarget {
			note = "no target; its state item: " + note
		}
		r.exampleDrift(d, note)
	}
	return nil
}

// txUpdate is one conditional update of a transaction.
func (d *db) txUpdate(k plan.Key, ub expression.UpdateBuilder, cond expression.ConditionBuilder) (types.TransactWriteItem, error) {
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("building update of %s %s: %w", k.PK, k.SK, err)
	}
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(d.table), Key: d.key(k),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()}}, nil
}

// transact runs one TransactWriteItems, paced and retried as single writes are, billed at
// 2 WCU per item.
func (d *db) transact(ctx context.Context, what string, items []types.TransactWriteItem) error {
	return withRetry(ctx, what, func(ctx context.Context) error {
		if err := d.lim.Wait(ctx, float64(2*len(items))); err != nil {
			return err
		}
		_, err := d.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		units := float64(2 * len(items))
		d.consumed(true, &types.ConsumedCapacity{CapacityUnits: &units})
		return err
	})
}
