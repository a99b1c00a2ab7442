package apply

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// folds moves, for every target that appeared in the batch, what was parked for it while it
// was missing. A fold may raise the target's watermark over the parked records, so it runs
// only once every record up to its INSERT is applied (the groups before it report their
// earliest unapplied record): a failure at or before the INSERT delivers the INSERT again,
// and the fold with it; a failure after it does not, so the fold runs now.
func (r *run) folds(fs []plan.FoldGroup) {
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	r.parallel(len(fs), func(i int) (int, error) {
		if failed >= 0 && fs[i].Rec >= failed {
			return -1, nil // delivered again from the failed record, this INSERT with it
		}
		return fs[i].Rec, r.fold(&fs[i])
	})
}

// fold moves what was parked for target g.Target into it: one consistent read of the park
// item (and, for same-partition parks, of the target), then one transaction that adds the
// parked amounts to the target (which must exist) and removes them from the park (which must
// be unchanged). Marker-mode parks hold sums, safe to move once each. Same-partition parks
// hold one entry per record: entries the target received itself (a batch delivered again
// once the target existed: its watermark range [_dn_wf, _dn_wm] covers them, or, when the
// application has written the target since, Denorm's writes of it after g's record in the
// stream show it: appliedSince) are dropped, not added, and the target's watermark is
// raised over the entries moved, so a later redelivery of them is a duplicate. Entries of
// records after g's INSERT stay.
func (r *run) fold(g *plan.FoldGroup) error {
	k := g.Target
	why := ""
	for attempt := 0; attempt < 4; attempt++ {
		park, err := r.consistentGet("reading the park of "+k.PK+" "+k.SK, parkKey(k))
		if err != nil || len(park) == 0 {
			return err
		}
		var target map[string]types.AttributeValue
		if hasEntries(park) {
			if target, err = r.consistentGet("reading "+k.PK+" "+k.SK+" to fold its park", k); err != nil || len(target) == 0 {
				return err // missing again: its re-creation folds the park
			}
		}
		items, err := r.foldItems(g, park, target, r.appliedSince(g))
		if err != nil || len(items) == 0 {
			return err
		}
		var cancel *types.TransactionCanceledException
		err = r.transactWrite("folding the park into "+k.PK+" "+k.SK, GuardFold, items)
		if err == nil {
			r.count(func(s *Stats) { s.Folded++ })
			return nil
		}
		if !errors.As(err, &cancel) || retryable(err) {
			return err
		}
		// The target went missing or was written, or the park changed, since the reads.
		why = reasons(cancel)
		if t, err := r.consistentGet("reading "+k.PK+" "+k.SK+" after a failed fold", k); err != nil || len(t) == 0 {
			return err // missing again (deleted, expired): its re-creation folds the park
		}
	}
	return fmt.Errorf("folding the park into %s %s: it kept changing (%s)", k.PK, k.SK, why)
}

func (r *run) consistentGet(what string, k plan.Key) (map[string]types.AttributeValue, error) {
	var item map[string]types.AttributeValue
	err := r.do(what, func(ctx context.Context) error {
		out, err := r.x.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(r.x.table), Key: r.x.key(k), ConsistentRead: aws.Bool(true),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if out != nil {
			r.consumed(false, out.ConsumedCapacity)
			item = out.Item
		} else {
			r.consumed(false)
		}
		return err
	})
	return item, err
}

func hasEntries(park map[string]types.AttributeValue) bool {
	for name := range park {
		if strings.HasPrefix(name, rules.ParkEntryPrefix) {
			return true
		}
	}
	return false
}

// foldItems is the transaction that moves park into g's target: the target's update and
// the park's delete (everything moved) or update (entries of later records stay).
func (r *run) foldItems(g *plan.FoldGroup, park, target map[string]types.AttributeValue, applied func(seq string) bool) ([]types.TransactWriteItem, error) {
	x := r.x
	spec := x.set.Table
	k := g.Target
	sums := map[string]plan.Number{}
	var consumed []string
	kept := 0
	wmT, wfT := record.SeqOf(target[WatermarkAttr]), record.SeqOf(target[rules.FirstAttr])
	maxMoved, minAdded := "", ""
	names := make([]string, 0, len(park))
	for name := range park {
		names = append(names, name)
	}
	sort.Strings(names)
	// A restore's entry (a deleted target's aggregates) covers the records its image
	// holds, as does the restore of g's own record: their parked entries were counted. So
	// does the restore of a delete before g's record applied onto the item put back: the
	// item says so, or, once written again, the stream (applied).
	covers := g.Covers
	if rd := record.SeqOf(target[rules.RestoredAttr]); rd != "" && record.CompareSeq(rd, g.Seq) < 0 {
		covers = plan.MaxSeq(covers, record.SeqOf(target[rules.RestoredCoversAttr]))
	}
	for _, name := range names {
		if seq, ok := strings.CutPrefix(name, rules.ParkEntryPrefix); ok && record.CompareSeq(seq, g.Seq) < 0 {
			if m, _ := park[name].(*types.AttributeValueMemberM); m != nil {
				covers = plan.MaxSeq(covers, record.SeqOf(m.Value[WatermarkAttr]))
			}
		}
	}
	for _, name := range names {
		v := park[name]
		if seq, ok := strings.CutPrefix(name, rules.ParkEntryPrefix); ok {
			m, _ := v.(*types.AttributeValueMemberM)
			if m == nil || record.CompareSeq(seq, g.Seq) >= 0 {
				kept++
				continue
			}
			consumed = append(consumed, name)
			if maxMoved == "" || record.CompareSeq(seq, maxMoved) > 0 {
				maxMoved = seq
			}
			if covers != "" && record.CompareSeq(seq, covers) <= 0 {
				continue // a restored image holds this record's deltas
			}
			if wmT != "" && record.CompareSeq(seq, wmT) <= 0 && (wfT == "" || record.CompareSeq(seq, wfT) >= 0) {
				continue // the target received this record itself
			}
			if applied(seq) {
				continue // and so did an item the application has replaced since
			}
			if minAdded == "" || record.CompareSeq(seq, minAdded) < 0 {
				minAdded = seq
			}
			for a, av := range m.Value {
				if !strings.HasPrefix(a, rules.ReservedPrefix) {
					addNumber(sums, a, av)
				}
			}
			continue
		}
		if name == spec.PartitionKey || name == spec.SortKey || name == spec.TTLAttribute || strings.HasPrefix(name, rules.ReservedPrefix) {
			continue
		}
		if addNumber(sums, name, v) {
			consumed = append(consumed, name)
		}
	}
	if len(consumed) == 0 {
		return nil, nil
	}
	var items []types.TransactWriteItem
	var ub expression.UpdateBuilder
	touch := false
	for _, a := range sortedKeys(sums) {
		if n := sums[a]; !n.IsZero() {
			ub = ub.Add(expression.Name(a), num(n.String()))
			touch = true
		}
	}
	cond := exists(spec.PartitionKey)
	if target != nil {
		// Same-partition entries: the target must be as read, and its watermark covers
		// what was moved.
		cond = cond.And(unchangedAttr(WatermarkAttr, target)).And(unchangedAttr(rules.FirstAttr, target))
		if maxMoved != "" && (wmT == "" || record.CompareSeq(maxMoved, wmT) > 0) {
			ub = ub.Set(expression.Name(WatermarkAttr), num(record.NormSeq(maxMoved)))
			touch = true
		}
		if minAdded != "" && (wfT == "" || record.CompareSeq(minAdded, wfT) < 0) {
			ub = ub.Set(expression.Name(rules.FirstAttr), num(record.NormSeq(minAdded)))
			touch = true
		}
		if minAdded != "" {
			ub = ub.Set(expression.Name(rules.LastFirstAttr), num(record.NormSeq(minAdded)))
		}
	}
	if touch {
		ub = ub.Add(expression.Name(rules.WritesAttr), num("1"))
		if target != nil {
			// Its stream record says it is a fold (plan.OwnWrite.Fold): a restore following
			// Denorm's writes takes nothing it moved for a repeat.
			n, _ := plan.WritesOf(target)
			ub = ub.Set(expression.Name(rules.FoldAttr), num(strconv.FormatUint(n+1, 10)))
			cond = cond.And(unchangedAttr(rules.WritesAttr, target))
		}
		e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
		if err != nil {
			return nil, fmt.Errorf("building fold: %w", err)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(x.table), Key: x.key(k),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}})
	}
	// The park is changed only as read: its write count says nothing was added since.
	pc := unchangedAttr(rules.WritesAttr, park)
	if kept == 0 {
		e, err := expression.NewBuilder().WithCondition(pc).Build()
		if err != nil {
			return nil, fmt.Errorf("building fold: %w", err)
		}
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(x.table), Key: x.key(parkKey(k)),
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}})
		return items, nil
	}
	var rb expression.UpdateBuilder
	for _, name := range consumed {
		rb = rb.Remove(expression.Name(name))
	}
	e, err := expression.NewBuilder().WithUpdate(rb).WithCondition(pc).Build()
	if err != nil {
		return nil, fmt.Errorf("building fold: %w", err)
	}
	items = append(items, types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(x.table), Key: x.key(parkKey(k)),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}})
	return items, nil
}

// addNumber adds a number attribute value to sums[name]; false when v is not a number.
func addNumber(sums map[string]plan.Number, name string, v types.AttributeValue) bool {
	nv, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	n, err := plan.ParseNumber(nv.Value)
	if err != nil {
		return false
	}
	sums[name] = sums[name].Add(n)
	return true
}

func sortedKeys(m map[string]plan.Number) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// unchangedAttr is the condition that attribute name still holds what item holds (or is
// still absent).
func unchangedAttr(name string, item map[string]types.AttributeValue) expression.ConditionBuilder {
	if v, ok := item[name]; ok {
		return expression.Name(name).Equal(val(v))
	}
	return expression.AttributeNotExists(expression.Name(name))
}

// reasons lists a canceled transaction's reasons, for messages.
func reasons(c *types.TransactionCanceledException) string {
	var out []string
	for _, r := range c.CancellationReasons {
		out = append(out, code(r.Code)+" "+aws.ToString(r.Message))
	}
	return strings.Join(out, "; ")
}

// appliedSince reports whether Denorm applied a parked record to g's target itself after
// g's record: a batch parked while the target was missing and delivered again once the
// application had put it back. The target's [_dn_wf, _dn_wm] shows it until the
// application writes the target again; a processor far behind reads the item only later.
// The stream keeps it: each of Denorm's writes of the target after g's record (but folds)
// applied every record from its _dn_wl to its watermark, and one that restored the image
// of a delete before g's record brought back every record up to that image's watermark
// (_dn_xd, _dn_xc). It is read on the first call,
// once per fold attempt, from the index of what was read before. Without a reader, or when
// the read fails, a record counts as not applied, as the item alone would say, and the
// fold is logged and counted as ambiguous.
func (r *run) appliedSince(g *plan.FoldGroup) func(seq string) bool {
	var ranges [][2]string
	read := false
	return func(seq string) bool {
		if !read {
			read = true
			ranges = r.appliedRanges(g)
		}
		for _, rg := range ranges {
			if (rg[0] == "" || record.CompareSeq(rg[0], seq) <= 0) && record.CompareSeq(seq, rg[1]) <= 0 {
				return true
			}
		}
		return false
	}
}

// appliedRanges is, for each of Denorm's writes of g's target after g's record in the
// stream but folds, the first and last record it applied; and for each of them that
// restored the image of a delete before g's record (applied alone, onto the item put
// back), every record up to that image's watermark ("" first), which the image held.
func (r *run) appliedRanges(g *plan.FoldGroup) [][2]string {
	if r.x.opt.Stream == nil || g.Source == "" {
		return nil
	}
	p := plan.New(r.x.set)
	var out [][2]string
	_, err := r.readStream(g.Source, g.Seq, g.Target, false, func(c *record.Change) bool {
		rp, err := p.Plan(c)
		if err != nil {
			return true
		}
		w, ok := rp.WriteOf(g.Target)
		if !ok || w == nil || w.Fold {
			return true
		}
		if w.First != "" {
			out = append(out, [2]string{w.First, w.NewWM})
		}
		if w.Restored != "" && w.Covers != "" && record.CompareSeq(w.Restored, g.Seq) < 0 {
			out = append(out, [2]string{"", w.Covers})
		}
		return true
	})
	if err != nil {
		r.count(func(s *Stats) { s.AmbiguousRestores++ })
		r.x.opt.Logger.Warn("fold of a park: reading on in the stream failed, entries outside the target's own range are added; verify this target",
			"pk", g.Target.PK, "sk", g.Target.SK, "error", err)
	}
	return out
}
