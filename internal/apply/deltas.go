package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// WatermarkAttr is rules.WatermarkAttr: on a counter target that shares its sources'
// partition, the sequence number of the last record whose deltas it received.
const WatermarkAttr = rules.WatermarkAttr

// MarkerPrefix starts the partition key of idempotency markers.
const MarkerPrefix = rules.ReservedPrefix + "#m#"

// watermarked applies one target's deltas with one conditional UpdateItem: the deltas of
// every record after the target's watermark, and the watermark advanced to the last of
// them, even when they sum to zero. A replayed record is at or below the watermark and is
// left out. A missing target gets its create-rule deltas (which create it, the rest with
// them) or, when none would create it, has the deltas parked until it appears.
//
// A group that restores a target the application replaced (Entry.Replaced) first expects
// the target to be as the application left it. If Denorm wrote it since, those writes
// applied records before the replacement again (a batch redelivered after the application's
// write, its watermark gone): the ones the old watermark covers were counted already, and
// the restore takes them back out (compensation), learning which from the records of those
// writes in the batch or, when the batch does not settle it, read on in the stream (readOn).
func (r *run) watermarked(t *plan.TargetDeltas) (int, error) {
	wm := ""
	create := false // the target is missing and a delta creates it
	rep, repSeq, repRec := replacement(t)
	var expect *string                // the watermark the target must hold ("" absent); nil: any below minSeq
	var adjust map[string]plan.Number // per attribute, taken out of the restore
	if rep != nil {
		if rep.Since != nil && rep.Since.Done {
			// The batch shows the chain of Denorm's writes after the application's to its
			// end: what repeated is known whatever the item holds now (another incarnation
			// of the target, even).
			adjust = rep.Since.Repeats
			if len(adjust) > 0 {
				r.count(func(s *Stats) { s.Compensated++ })
			}
		} else {
			expect = &rep.NewWM
		}
	}
	readOn := false // the stream was read for this restore
	if t.Await >= 0 && firstRec(t, "") == t.Await {
		// A delete of the target ends the batch: an INSERT of it (the application putting
		// it back) makes it a replacement, which needs both records in one batch.
		r.count(func(s *Stats) { s.RestoresDeferred++ })
		return t.Await, errRestoreDeferred
	}
	// A delete of the target the batch holds no re-put of: its restore first expects the
	// item put back untouched by Denorm (no write count), or missing; only when Denorm wrote
	// it is the stream read for what that applied again (readOnRemoval).
	var removed *plan.Entry
	fresh := false
	if rep == nil {
		if e := lastRemoval(t); e != nil && e.Covers != "" {
			removed, fresh = e, true
		}
	}
	removedSince := func() bool {
		s := r.readOnRemoval(t, removed)
		if s == nil {
			return false
		}
		adjust, expect, fresh = s.Repeats, nil, false
		if !s.Done {
			// The stream shows no more writes of Denorm's yet: the item must agree.
			w := s.WM
			expect = &w
		}
		if len(adjust) > 0 {
			r.count(func(s *Stats) { s.Compensated++ })
		}
		return true
	}
	for attempt := 0; attempt < 5; attempt++ {
		raw, minSeq, maxSeq, _ := t.Sum(wm)
		rec := firstRec(t, wm)
		if maxSeq == "" || len(raw) == 0 {
			return -1, nil // every record is at or below the watermark
		}
		if rep != nil && record.CompareSeq(repSeq, minSeq) < 0 {
			rep, expect, adjust = nil, nil, nil // the restore itself is applied already
		}
		if removed != nil && record.CompareSeq(removed.Seq, minSeq) < 0 {
			removed, adjust, expect, fresh = nil, nil, nil, false
		}
		attrs := mergeAttrs(raw)
		for i := range attrs {
			if d, ok := adjust[attrs[i].Attribute]; ok {
				attrs[i].Amount = attrs[i].Amount.Sub(d)
			}
		}
		zero := allZero(attrs)
		// A create rule's target is written as it may be missing: a time bucket is missing
		// before its first source, and asking first cost a refused write (1 WCU) per new
		// bucket. A restore expects the target the application left, so it asks first.
		if !create && rep == nil && anyCreate(raw) {
			create = true
		}
		// Until it is found missing, the target must exist; a zero net never creates it.
		err := r.updateCounters(r.x.key(t.Target), "updating counters on "+t.Target.PK+" "+t.Target.SK,
			attrs, minSeq, maxSeq, !create || zero, expect, fresh)
		cf, ok := isCondFailed(err)
		if !ok {
			return rec, err
		}
		if len(cf.Item) == 0 {
			// The target is missing: a zero net has nothing to keep.
			r.count(func(s *Stats) { s.MissingTarget++ })
			if zero {
				return -1, nil
			}
			if !create && anyCreate(raw) {
				create = true
				continue
			}
			return rec, r.parkWatermarked(t, wm)
		}
		cur, _ := cf.Item[WatermarkAttr].(*types.AttributeValueMemberN)
		if cur != nil && record.CompareSeq(cur.Value, minSeq) >= 0 {
			r.count(func(s *Stats) { s.Duplicates++ })
			wm = cur.Value
			continue
		}
		if rep == nil && removed != nil && (fresh || expect != nil) {
			// Denorm wrote the item put back (since the stream was read): read it.
			if attempt < 3 && removedSince() {
				continue
			}
			r.x.opt.Logger.Warn("restore of a deleted counter target: the item put back since changed while the stream was read; verify this target",
				"pk", t.Target.PK, "sk", t.Target.SK, "watermark", record.SeqOf(cf.Item[WatermarkAttr]))
			r.count(func(s *Stats) { s.AmbiguousRestores++ })
			removed, adjust, expect, fresh = nil, nil, nil, false
			continue
		}
		if rep == nil || expect == nil {
			return rec, fmt.Errorf("counter update on %s %s failed its condition with watermark %v below %s", t.Target.PK, t.Target.SK, cur, minSeq)
		}
		// Denorm wrote the replaced target before this restore: find what it applied again.
		var why string
		adjust, why = r.compensation(t, rep, cf.Item)
		if why != "" && !readOn {
			// The records of those writes follow the application's record in the stream:
			// the batch did not show them to their end, so read on.
			readOn = true
			at := repSeq
			if rep.At != "" {
				at = rep.At // after the INSERT of a delete and re-put
			}
			s, note := r.readOn(t, rep, at)
			if s != nil && (s.Done || s.N != rep.NewN) {
				rep.Since = s
				if s.Done {
					adjust, expect = s.Repeats, nil
					r.count(func(s *Stats) { s.Compensated++ })
					continue
				}
				adjust, why = r.compensation(t, rep, cf.Item)
			}
			if why != "" && note != "" {
				why += " (" + note + ")"
			}
		}
		if why != "" {
			// The records of those writes follow the application's record in the stream.
			// When it is not the first record of its batch, it fails alone and comes again
			// first in a batch that reaches further: with them, if they are near. Once first,
			// it is never deferred again, so a shard waits at most one delivery for it.
			if repRec > 0 && firstRec(t, wm) == repRec {
				r.count(func(s *Stats) { s.RestoresDeferred++ })
				return repRec, errRestoreDeferred
			}
			r.ambiguous(t, rep, record.SeqOf(cf.Item[WatermarkAttr]), why)
		}
		now := ""
		if cur != nil {
			now = cur.Value
		}
		expect = &now
	}
	return firstRec(t, wm), fmt.Errorf("counter update on %s %s: watermark kept moving", t.Target.PK, t.Target.SK)
}

// replacement returns the group's last restore of an application's write: the target
// should be as that write left it. (Earlier ones in the group are covered by it: their
// records are in the image it brings back, or were applied before it.)
func replacement(t *plan.TargetDeltas) (*plan.Replacement, string, int) {
	var rep *plan.Replacement
	seq, rec := "", -1
	for _, e := range t.Entries {
		if e.Replaced != nil {
			rep, seq, rec = e.Replaced, e.Seq, e.Rec
		}
	}
	return rep, seq, rec
}

// StreamReader reads on in a stream from one of its records (streamfollow.Reader): each is
// called with every later record of the record's partition whose keys hold key (attribute
// name to string value), in order, until it returns false or the stream has nothing more
// for now.
type StreamReader interface {
	After(ctx context.Context, streamARN, seq string, key map[string]string, each func(*record.Change) bool) error
}

// keyOf is target's key as StreamReader.After filters by it.
func (r *run) keyOf(k plan.Key) map[string]string {
	spec := r.x.set.Table
	out := map[string]string{spec.PartitionKey: k.PK}
	if spec.SortKey != "" {
		out[spec.SortKey] = k.SK
	}
	return out
}

// readOn follows Denorm's own writes of t's target after the application's record at seq
// in the stream itself, when the batch did not hold them: what they applied again, or nil
// when no reader is configured, the record is gone, or no write of Denorm's followed; and
// what the read found, for the warning of a restore it does not settle.
func (r *run) readOn(t *plan.TargetDeltas, rep *plan.Replacement, seq string) (*plan.Since, string) {
	if r.x.opt.Stream == nil || rep.Source == "" || rep.OldWM == "" {
		return nil, ""
	}
	since, straddle, writes, read, err := r.followStream(t, rep.Source, seq, func(*record.Change) (*plan.Replacement, bool) { return rep, false })
	switch {
	case err != nil:
		return nil, fmt.Sprintf("reading on in the stream: %v", err)
	case straddle:
		return nil, fmt.Sprintf("read on %d records: one of Denorm's writes of it straddles the old watermark", read)
	case since == nil:
		return nil, fmt.Sprintf("read on %d records: no write of it", read)
	}
	return since, fmt.Sprintf("read on %d records: %d writes of it", read, writes)
}

// followStream reads on in the stream after seq for the records of t's target: start gives,
// at the first of them, the replacement the chain follows (nil: stop, none) and whether
// that record only starts it; then the chain of Denorm's writes (plan.Replacement.Follow)
// runs until it is settled.
func (r *run) followStream(t *plan.TargetDeltas, source, seq string, start func(*record.Change) (*plan.Replacement, bool)) (since *plan.Since, straddle bool, writes, read int, err error) {
	p := plan.New(r.x.set)
	var rep *plan.Replacement
	var chain []*plan.OwnWrite
	err = r.x.opt.Stream.After(r.ctx, source, seq, r.keyOf(t.Target), func(c *record.Change) bool {
		read++
		if rep == nil {
			var only bool
			if rep, only = start(c); rep == nil {
				return false
			} else if only {
				return true // the chain starts after this record
			}
		}
		rp, err := p.Plan(c)
		if err != nil {
			return true
		}
		w, ok := rp.WriteOf(t.Target)
		if !ok {
			return true
		}
		chain = append(chain, w)
		since, straddle = rep.Follow(chain)
		return since != nil && !since.Done
	})
	r.count(func(s *Stats) { s.StreamFollows++; s.StreamFollowRecords += read })
	return since, straddle, len(chain), read, err
}

// lastRemoval is the group's last delete of the target itself that no INSERT of the batch
// made a replacement (nil for none).
func lastRemoval(t *plan.TargetDeltas) *plan.Entry {
	var out *plan.Entry
	for i := range t.Entries {
		if t.Entries[i].Removal {
			out = &t.Entries[i]
		}
	}
	return out
}

// readOnRemoval reads on in the stream after a delete of t's target whose batch ended
// before the target was put back: when the next record of the target is its INSERT, the
// chain of Denorm's writes of the new item after it says what they applied again of the
// records the deleted image holds (up to e.Covers), which the delete's restore brings back
// too. Nil when there is no reader, no INSERT yet, or the chain is not settled.
func (r *run) readOnRemoval(t *plan.TargetDeltas, e *plan.Entry) *plan.Since {
	if r.x.opt.Stream == nil || e.Source == "" {
		return nil
	}
	var put *plan.Replacement
	since, _, writes, _, err := r.followStream(t, e.Source, e.Seq, func(c *record.Change) (*plan.Replacement, bool) {
		if c.Op != record.Insert {
			return nil, false // not put back (yet)
		}
		n, _ := plan.WritesOf(c.New)
		put = &plan.Replacement{OldWM: e.Covers, NewWM: record.SeqOf(c.New[rules.WatermarkAttr]), NewN: n}
		return put, true
	})
	if err != nil || put == nil {
		return nil
	}
	if since == nil && writes == 0 {
		// Put back (with Denorm's attributes as the application read them), and nothing of
		// Denorm's on it yet that the stream shows: nothing repeated, if the item agrees.
		return &plan.Since{N: put.NewN, WM: put.NewWM, Repeats: map[string]plan.Number{}}
	}
	return since
}

// errRestoreDeferred: a restore that cannot yet tell which of Denorm's writes since the
// application's write repeated records waits for a batch that holds their records.
var errRestoreDeferred = errors.New("restore of a replaced counter target deferred: it comes again first in a batch that holds the records after it")

// compensation is what Denorm's writes since the application's replacement applied again,
// per attribute: those writes applied the records from the first one after the
// replacement (`_dn_wf` when the write dropped the watermark, else just above the watermark
// it left) up to the current watermark. The old watermark covers records that were counted
// before the replacement. All of them covered: everything they added is taken out. None:
// nothing is. Some (the writes straddle the old watermark): which ones cannot be told, and
// why says so; nothing is taken out.
func (r *run) compensation(t *plan.TargetDeltas, rep *plan.Replacement, item map[string]types.AttributeValue) (adjust map[string]plan.Number, why string) {
	cur := record.SeqOf(item[WatermarkAttr])
	if s := rep.Since; s != nil {
		// The batch holds the records of Denorm's writes since: exact when they are all
		// of them, or when the last of them is past the old watermark (any later write
		// applied only records after it).
		n, _ := plan.WritesOf(item)
		if n == s.N || (n > s.N && record.CompareSeq(s.WM, rep.OldWM) >= 0) {
			r.count(func(st *Stats) { st.Compensated++ })
			return s.Repeats, ""
		}
	}
	from := rep.NewWM // exclusive
	if from == "" {
		from = record.SeqOf(item[rules.FirstAttr]) // inclusive
		if from != "" && rep.OldWM != "" && record.CompareSeq(from, rep.OldWM) > 0 {
			return nil, "" // every record since is new
		}
	} else if rep.OldWM != "" && record.CompareSeq(from, rep.OldWM) >= 0 {
		return nil, ""
	}
	switch {
	case rep.OldWM == "" && rep.NewWM == "":
		return nil, "" // nothing was counted before the replacement
	case rep.OldWM == "":
		// A watermark written onto an item that had none (read from it before a delete):
		// records of the item before the delete that Denorm applied since cannot be told
		// from new ones.
		return nil, "the application wrote a watermark read earlier onto an item that had none"
	case cur != "" && record.CompareSeq(cur, rep.OldWM) > 0:
		return nil, "Denorm's writes since the replacement straddle its old watermark"
	}
	out := map[string]plan.Number{}
	for _, e := range t.Entries {
		if e.Replaced == nil {
			continue
		}
		a := e.Rule.Agg.Attribute
		out[a] = plan.NumberOf(item[a]).Sub(e.Replaced.New)
	}
	r.count(func(s *Stats) { s.Compensated++ })
	return out, ""
}

// ambiguous counts and logs a restore that cannot tell which of Denorm's writes since the
// application's write were repeats: it takes nothing out, and the target is left to verify.
func (r *run) ambiguous(t *plan.TargetDeltas, rep *plan.Replacement, cur, why string) {
	r.count(func(s *Stats) { s.AmbiguousRestores++ })
	r.x.opt.Logger.Warn("restore of a replaced counter target: "+why+"; verify this target",
		"pk", t.Target.PK, "sk", t.Target.SK, "oldWatermark", rep.OldWM, "writtenBack", rep.NewWM, "watermark", cur)
}

// updateCounters ADDs attrs to the target at key and advances its watermark to maxSeq, on
// condition that the watermark is absent or below minSeq (with expect, that it is exactly
// that, "" for absent; without needExists, a missing item is created). It records the first
// sequence number applied since the item was written by the application, which a later
// restore or fold needs, and adds one to the write count, which tells this write from the
// application's in the stream.
func (r *run) updateCounters(key map[string]types.AttributeValue, what string, attrs []plan.AttrAmount, minSeq, maxSeq string, needExists bool, expect *string, fresh bool) error {
	x := r.x
	var ub expression.UpdateBuilder
	for _, a := range attrs {
		if !a.Amount.IsZero() {
			ub = ub.Add(expression.Name(a.Attribute), num(a.Amount.String()))
		}
	}
	ub = withBucketTTL(ub, x.set.Table, key, attrs)
	ub = ub.Set(expression.Name(WatermarkAttr), num(record.NormSeq(maxSeq)))
	ub = ub.Set(expression.Name(rules.FirstAttr), expression.IfNotExists(expression.Name(rules.FirstAttr), num(record.NormSeq(minSeq))))
	ub = ub.Set(expression.Name(rules.LastFirstAttr), num(record.NormSeq(minSeq)))
	ub = ub.Add(expression.Name(rules.WritesAttr), num("1"))
	// A target without a watermark (one the application wrote, or one that predates Denorm)
	// takes the write and is stamped by it.
	cond := expression.AttributeNotExists(expression.Name(WatermarkAttr)).
		Or(expression.Name(WatermarkAttr).LessThan(num(record.NormSeq(minSeq))))
	switch {
	case expect != nil && *expect == "":
		cond = expression.AttributeNotExists(expression.Name(WatermarkAttr))
	case expect != nil:
		cond = cond.And(expression.Name(WatermarkAttr).Equal(num(*expect)))
	}
	if needExists {
		cond = cond.And(exists(x.set.Table.PartitionKey))
	}
	if fresh {
		cond = cond.And(expression.AttributeNotExists(expression.Name(rules.WritesAttr)))
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("building counter update: %w", err)
	}
	return r.do(what, func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(x.table), Key: key,
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardWatermark, out, err)
		return err
	})
}

// parkWatermarked keeps a missing target's deltas in its park item, one attribute per
// record (`_dn_pe_<seq>`, a map of attribute to amount): writing a record's entry again is
// a no-op, so redelivery needs no guard, and the fold can leave out the records the target
// itself received (a batch delivered again once the target existed).
func (r *run) parkWatermarked(t *plan.TargetDeltas, wm string) error {
	x := r.x
	bySeq := map[string]map[string]plan.Number{}
	covers := map[string]string{}
	var order []string
	for _, e := range t.Entries {
		if wm != "" && record.CompareSeq(e.Seq, wm) <= 0 {
			continue
		}
		m := bySeq[e.Seq]
		if m == nil {
			m = map[string]plan.Number{}
			bySeq[e.Seq] = m
			order = append(order, e.Seq)
		}
		m[e.Rule.Agg.Attribute] = m[e.Rule.Agg.Attribute].Add(e.Amount)
		covers[e.Seq] = plan.MaxSeq(covers[e.Seq], e.Covers)
	}
	var ub expression.UpdateBuilder
	n := 0
	for _, seq := range order {
		entry := map[string]types.AttributeValue{}
		for a, amt := range bySeq[seq] {
			if !amt.IsZero() {
				entry[a] = &types.AttributeValueMemberN{Value: amt.String()}
			}
		}
		if c := covers[seq]; c != "" {
			// A restore's entry: the fold leaves out the records its image holds.
			entry[WatermarkAttr] = &types.AttributeValueMemberN{Value: record.NormSeq(c)}
		}
		if len(entry) == 0 {
			continue
		}
		ub = ub.Set(expression.Name(rules.ParkEntryPrefix+record.NormSeq(seq)), val(&types.AttributeValueMemberM{Value: entry}))
		n++
	}
	if n == 0 {
		return nil
	}
	ub = ub.Add(expression.Name(rules.WritesAttr), num("1"))
	e, err := expression.NewBuilder().WithUpdate(ub).Build()
	if err != nil {
		return fmt.Errorf("building park: %w", err)
	}
	err = r.do("parking counters of "+t.Target.PK+" "+t.Target.SK, func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(x.table), Key: x.key(parkKey(t.Target)),
			UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		r.written(GuardNone, out, err)
		return err
	})
	if err == nil {
		r.count(func(s *Stats) { s.Parked++ })
	}
	return err
}

// parkKey is where a missing target's deltas wait for it.
func parkKey(k plan.Key) plan.Key { return plan.Key{PK: rules.ParkPrefix + k.PK, SK: k.SK} }

// mergeAttrs merges amounts to the same attribute (deltas that may create a target and
// deltas that may not are kept apart until the target is found).
func mergeAttrs(attrs []plan.AttrAmount) []plan.AttrAmount {
	var out []plan.AttrAmount
	for _, a := range attrs {
		out = mergeAmount(out, a)
	}
	return out
}

func anyCreate(attrs []plan.AttrAmount) bool {
	for _, a := range attrs {
		if a.Create && !a.Amount.IsZero() {
			return true
		}
	}
	return false
}

func firstRec(t *plan.TargetDeltas, wm string) int {
	for _, e := range t.Entries {
		if wm == "" || record.CompareSeq(e.Seq, wm) > 0 {
			return e.Rec
		}
	}
	return -1
}

func allZero(attrs []plan.AttrAmount) bool {
	for _, a := range attrs {
		if !a.Amount.IsZero() {
			return false
		}
	}
	return true
}

// marked applies deltas that need a per-event marker: each event's marker and deltas go in
// one transaction, events packed into transactions of at most 100 distinct items with their
// deltas to a shared target merged. A duplicate event (its marker exists) is dropped from
// the transaction and the rest retried. It returns the earliest event left unapplied.
func (r *run) marked(events []plan.EventDeltas) (int, error) {
	for len(events) > 0 {
		n := packCount(events, maxTransactItems)
		err := r.transact(events[:n])
		for errors.Is(err, errTooManyItems) && n > 1 {
			// Parking a missing target's deltas adds a check item: halve the group.
			n /= 2
			err = r.transact(events[:n])
		}
		if err != nil {
			return events[0].Rec, err
		}
		events = events[n:]
	}
	return -1, nil
}

// errTooManyItems: a transaction would exceed DynamoDB's 100 items; nothing was written.
var errTooManyItems = errors.New("more than 100 items in one transaction")

const maxTransactItems = 100

// packCount returns how many leading events fit one transaction.
func packCount(events []plan.EventDeltas, max int) int {
	targets := map[plan.Key]bool{}
	items := 0
	for i, ev := range events {
		add := 1
		for _, t := range ev.Targets {
			if !targets[t.Target] {
				add++
			}
		}
		if i > 0 && items+add > max {
			return i
		}
		items += add
		for _, t := range ev.Targets {
			targets[t.Target] = true
		}
	}
	return len(events)
}

// transact applies events in one TransactWriteItems, dropping duplicates and parking the
// deltas of missing targets as the cancellation reasons reveal them.
func (r *run) transact(events []plan.EventDeltas) error {
	x := r.x
	events = append([]plan.EventDeltas(nil), events...)
	missing := map[plan.Key]bool{} // targets found missing: their deltas are parked
	ttl := strconv.FormatInt(x.opt.Now().Add(x.opt.MarkerTTL).Unix(), 10)
	// Each failed attempt removes an event or flips a target between present and missing;
	// a target created and deleted again meanwhile can flip it back, which this bounds.
	maxAttempts := 2*len(events) + 8
	for attempt := 0; attempt < maxAttempts; attempt++ {
		items, owners, err := r.buildTransaction(events, missing, ttl)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		if len(items) > maxTransactItems {
			return errTooManyItems
		}
		var cancel *types.TransactionCanceledException
		err = r.transactWrite("applying counter transaction", GuardMarker, items)
		if err == nil {
			parked := 0
			for _, o := range owners {
				if o.park {
					parked++
				}
			}
			r.count(func(s *Stats) { s.Parked += parked })
			return nil
		}
		if !errors.As(err, &cancel) || retryable(err) {
			return err
		}
		progressed := false
		dup := map[int]bool{}
		for i, reason := range cancel.CancellationReasons {
			if code(reason.Code) != "ConditionalCheckFailed" || i >= len(owners) {
				continue
			}
			o := owners[i]
			switch {
			case o.marker >= 0:
				dup[o.marker] = true // this event was applied before
			case o.check:
				missing[o.target] = false // the target appeared meanwhile
				progressed = true
			case !missing[o.target]:
				missing[o.target] = true
				r.count(func(s *Stats) { s.MissingTarget++ })
				progressed = true
			}
		}
		if len(dup) > 0 {
			kept := events[:0]
			for i, ev := range events {
				if !dup[i] {
					kept = append(kept, ev)
				}
			}
			events = kept
			r.count(func(s *Stats) { s.Duplicates += len(dup) })
			progressed = true
		}
		if !progressed {
			return fmt.Errorf("counter transaction canceled: %w", err)
		}
	}
	return fmt.Errorf("counter transaction: too many attempts")
}

// owner tells what a transaction item is: an event's marker, a target's update, a park of
// a missing target's deltas, or the check that the target is still missing.
type owner struct {
	marker int // index into events, or -1
	target plan.Key
	park   bool
	check  bool
}

func (r *run) buildTransaction(events []plan.EventDeltas, missing map[plan.Key]bool, ttl string) ([]types.TransactWriteItem, []owner, error) {
	x := r.x
	spec := x.set.Table
	var items []types.TransactWriteItem
	var owners []owner
	merged := map[plan.Key][]plan.AttrAmount{}
	var order []plan.Key
	for i, ev := range events {
		marker := x.key(plan.Key{PK: MarkerPrefix + ev.EventID, SK: MarkerPrefix})
		if spec.TTLAttribute != "" {
			marker[spec.TTLAttribute] = &types.AttributeValueMemberN{Value: ttl}
		}
		marker["seq"] = &types.AttributeValueMemberN{Value: record.NormSeq(ev.Seq)}
		e, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(spec.PartitionKey))).Build()
		if err != nil {
			return nil, nil, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(x.table), Item: marker,
			ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(),
		}})
		owners = append(owners, owner{marker: i})
		for _, t := range ev.Targets {
			if _, ok := merged[t.Target]; !ok {
				order = append(order, t.Target)
			}
			for _, at := range t.Attrs {
				merged[t.Target] = mergeAmount(merged[t.Target], at)
			}
		}
	}
	for _, k := range order {
		attrs := merged[k]
		if allZero(attrs) {
			continue
		}
		// A missing target is created by a create rule's delta, the others' with it;
		// without one, the deltas wait in the park item, on condition that the target is
		// still missing (it may appear on another shard at any time).
		park := missing[k] && !anyCreate(attrs)
		var ub expression.UpdateBuilder
		for _, a := range attrs {
			if !a.Amount.IsZero() {
				ub = ub.Add(expression.Name(a.Attribute), num(a.Amount.String()))
			}
		}
		if !park {
			ub = withBucketTTL(ub, spec, x.key(k), attrs)
		}
		// The write count tells Denorm's writes from the application's in the stream.
		ub = ub.Add(expression.Name(rules.WritesAttr), num("1"))
		b := expression.NewBuilder().WithUpdate(ub)
		if !missing[k] {
			b = b.WithCondition(exists(spec.PartitionKey))
		}
		e, err := b.Build()
		if err != nil {
			return nil, nil, err
		}
		key := k
		if park {
			key = parkKey(k)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(x.table), Key: x.key(key),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}})
		owners = append(owners, owner{marker: -1, target: k, park: park})
		if park {
			c, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(spec.PartitionKey))).Build()
			if err != nil {
				return nil, nil, err
			}
			items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
				TableName: aws.String(x.table), Key: x.key(k),
				ConditionExpression: c.Condition(), ExpressionAttributeNames: c.Names(),
			}})
			owners = append(owners, owner{marker: -1, target: k, check: true})
		}
	}
	return items, owners, nil
}

func mergeAmount(list []plan.AttrAmount, a plan.AttrAmount) []plan.AttrAmount {
	for i := range list {
		if list[i].Attribute == a.Attribute {
			list[i].Amount = list[i].Amount.Add(a.Amount)
			return list
		}
	}
	return append(list, a)
}

func ccPtrs(cc []types.ConsumedCapacity) []*types.ConsumedCapacity {
	out := make([]*types.ConsumedCapacity, len(cc))
	for i := range cc {
		out[i] = &cc[i]
	}
	return out
}

// transactWrite runs one TransactWriteItems with retries, metering its capacity.
func (r *run) transactWrite(what string, g Guard, items []types.TransactWriteItem) error {
	err := r.do(what, func(ctx context.Context) error {
		out, err := r.x.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: items, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if out != nil {
			r.consumed(true, ccPtrs(out.ConsumedCapacity)...)
		} else {
			r.consumed(true)
		}
		var cancel *types.TransactionCanceledException
		if errors.As(err, &cancel) && !retryable(err) {
			r.count(func(s *Stats) { s.Refused[g]++ })
		}
		return err
	})
	r.count(func(s *Stats) { s.Transactions++ })
	return err
}
