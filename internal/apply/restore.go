package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// restore is a group's restore of a counter target the application wrote (docs/processor.md,
// "Targets the application writes"): the condition its counter update carries, and what it
// takes out of the group's deltas. There are two kinds:
//
//   - a replacement (Entry.Replaced): the update first expects the target as the
//     application left it. If Denorm wrote it since, those writes applied records before the
//     replacement again (a batch redelivered after the application's write, its watermark
//     gone): the ones the old watermark covers were counted already, and the restore takes
//     them back out, learning which from the records of those writes in the batch or, when
//     the batch does not settle it, read on in the stream (settleReplacement);
//   - a delete of the target the batch holds no re-put of: the update first expects the item
//     put back untouched by Denorm (no write count), or missing; only when Denorm wrote it is
//     the stream read for what that applied again (settleRemoval).
type restore struct {
	t       *plan.TargetDeltas
	rep     *plan.Replacement      // the group's last replacement; nil: none
	repSeq  string                 // its record's sequence number
	repRec  int                    // and index in the batch
	removed *plan.Entry            // the delete, when the group has no replacement
	expect  *string                // the watermark the target must hold ("" absent); nil: any below minSeq
	adjust  map[string]plan.Number // per attribute, taken out of the deltas
	fresh   bool                   // the target must carry no write count of Denorm's
	readOn  bool                   // the stream was read for the replacement
	prior   []priorRepeats         // earlier application writes of the group, closed by a later one
}

// priorRepeats is what Denorm's writes after an application's write that is not the group's
// last applied again (Since.Repeats, known to its end: the next write of the application's
// closes the chain). The image the next write brings back, or the image a delete restores,
// holds them, so they are taken out as the last replacement's are.
type priorRepeats struct {
	seq     string
	repeats map[string]plan.Number
}

func (r *run) newRestore(t *plan.TargetDeltas) *restore {
	rs := &restore{t: t}
	rs.rep, rs.repSeq, rs.repRec = replacement(t)
	switch {
	case rs.rep != nil && rs.rep.Since != nil && rs.rep.Since.Done:
		// The batch shows the chain of Denorm's writes after the application's to its
		// end: what repeated is known whatever the item holds now (another incarnation
		// of the target, even).
		rs.adjust = rs.rep.Since.Repeats
		if len(rs.adjust) > 0 {
			r.count(func(s *Stats) { s.Compensated++ })
		}
	case rs.rep != nil && rs.rep.Since != nil:
		// The batch shows Denorm wrote the item since the application's write, so the item
		// as that write left it is gone: a later write of the application that left the
		// same marks (its counters and _dn_* omitted again) must not pass for it. Expect
		// the item as the last of those writes left it, and take out what they repeated.
		rs.expect, rs.adjust = &rs.rep.Since.WM, rs.rep.Since.Repeats
	case rs.rep != nil:
		rs.expect = &rs.rep.NewWM
	default:
		if e := lastRemoval(t); e != nil && e.Covers != "" {
			rs.removed, rs.fresh = e, true
		}
	}
	for _, e := range t.Entries {
		if e.Replaced == nil || e.Seq == rs.repSeq || e.Replaced.Since == nil || !e.Replaced.Since.Done {
			continue
		}
		if n := len(rs.prior); n == 0 || rs.prior[n-1].seq != e.Seq { // one per record, not per rule
			rs.prior = append(rs.prior, priorRepeats{seq: e.Seq, repeats: e.Replaced.Since.Repeats})
		}
	}
	return rs
}

// appliedBelow drops the restore once the target's watermark shows it applied: every
// record from minSeq on is still to apply.
func (rs *restore) appliedBelow(minSeq string) {
	if rs.rep != nil && record.CompareSeq(rs.repSeq, minSeq) < 0 {
		rs.rep, rs.expect, rs.adjust = nil, nil, nil
	}
	if rs.removed != nil && record.CompareSeq(rs.removed.Seq, minSeq) < 0 {
		rs.dropRemoval()
	}
	rs.prior = slices.DeleteFunc(rs.prior, func(p priorRepeats) bool { return record.CompareSeq(p.seq, minSeq) < 0 })
}

// dropRemoval drops a delete's restore: the deltas apply as they are.
func (rs *restore) dropRemoval() {
	rs.removed, rs.adjust, rs.expect, rs.fresh = nil, nil, nil, false
}

// takeOut takes what repeated out of attrs.
func (rs *restore) takeOut(attrs []plan.AttrAmount) []plan.AttrAmount {
	sub := func(repeats map[string]plan.Number) {
		for i := range attrs {
			if d, ok := repeats[attrs[i].Attribute]; ok {
				attrs[i].Amount = attrs[i].Amount.Sub(d)
			}
		}
	}
	sub(rs.adjust)
	for _, p := range rs.prior {
		sub(p.repeats)
	}
	return attrs
}

// removalPending: a delete's restore whose update was refused by its condition still to
// settle.
func (rs *restore) removalPending() bool {
	return rs.rep == nil && rs.removed != nil && (rs.fresh || rs.expect != nil)
}

// settleRemoval follows a delete's restore refused because Denorm wrote the item put back
// (since the stream was last read): it reads the stream for what those writes applied
// again. After three reads, or when the stream does not settle it, the restore is given up,
// logged and counted, and the deltas apply as they are. Its error is ErrDeadline only
// (first is the batch's first record still to apply, as for settleReplacement).
func (r *run) settleRemoval(rs *restore, item map[string]types.AttributeValue, attempt, first int) error {
	if attempt < 3 {
		s, err := r.readOnRemoval(rs.t, rs.removed, first > 0)
		if err != nil {
			return err
		}
		if s != nil {
			rs.adjust, rs.expect, rs.fresh = s.Repeats, nil, false
			if !s.Done {
				// The stream shows no more writes of Denorm's yet: the item must agree.
				w := s.WM
				rs.expect = &w
			}
			if len(rs.adjust) > 0 {
				r.count(func(s *Stats) { s.Compensated++ })
			}
			return nil
		}
	}
	r.x.opt.Logger.Warn("restore of a deleted counter target: the item put back since changed while the stream was read; verify this target",
		"pk", rs.t.Target.PK, "sk", rs.t.Target.SK, "watermark", record.SeqOf(item[WatermarkAttr]))
	r.count(func(s *Stats) { s.AmbiguousRestores++ })
	rs.dropRemoval()
	return nil
}

// settleReplacement follows a replacement's restore refused because Denorm wrote the target
// (item) since the application did: it finds what those writes applied again, from the
// batch, read on in the stream, or from the item, and expects the target as it is now.
// The item is the last resort: it may be as another, later write of the application left
// it (a processor far behind), and its `_dn_wf` and watermark then say nothing of the
// writes after this one. The stream does: the chain of Denorm's writes after the
// application's record ends at the next record of another writer.
// When it cannot tell and the replacement is not the first record of its batch (first is
// the batch's first record still to apply), it returns errRestoreDeferred: the record fails
// alone and comes again first in a batch that reaches further, with the records after it
// if they are near. Once first, it is never deferred again, so a shard waits at most one
// delivery for it; it then applies, taking nothing out, logged and counted.
func (r *run) settleReplacement(rs *restore, item map[string]types.AttributeValue, first int) error {
	t, rep := rs.t, rs.rep
	var why, note string
	adjust, ok := r.chained(rep, item)
	if !ok && !rs.readOn {
		// The batch did not show those writes to their end: read on.
		rs.readOn = true
		at := rs.repSeq
		if rep.At != "" {
			at = rep.At // after the INSERT of a delete and re-put
		}
		s, straddle, found, err := r.readOn(t, rep, at, first > 0)
		if err != nil {
			return err
		}
		note = found
		switch {
		case s != nil && s.Done:
			rep.Since = s
			rs.adjust, rs.expect = s.Repeats, nil
			r.count(func(s *Stats) { s.Compensated++ })
			return nil
		case s != nil && s.N != rep.NewN:
			rep.Since = s
			adjust, ok = r.chained(rep, item)
		case straddle:
			why = note
		}
	}
	if !ok && why == "" {
		if adjust, why = r.fromItem(t, rep, item); why != "" && note != "" {
			why += " (" + note + ")"
		}
	}
	rs.adjust = adjust
	if why != "" {
		if rs.repRec > 0 && first == rs.repRec {
			r.count(func(s *Stats) { s.RestoresDeferred++ })
			return errRestoreDeferred
		}
		r.ambiguous(t, rep, record.SeqOf(item[WatermarkAttr]), why)
	}
	now := record.SeqOf(item[WatermarkAttr])
	rs.expect = &now
	return nil
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
// for now. The executor makes one read at a time.
type StreamReader interface {
	// It returns how many records after seq it read, of every key.
	After(ctx context.Context, streamARN, seq string, key map[string]string, each func(*record.Change) bool) (int, error)
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
// when no reader is configured, the record is gone, or no write of Denorm's followed;
// straddle when one of them applied records on both sides of the old watermark; and what
// the read found, for the warning of a restore it does not settle. Its error is
// ErrDeadline only: the invocation has no time left to read (readOnContext; retry: the
// record is not the first of its batch).
func (r *run) readOn(t *plan.TargetDeltas, rep *plan.Replacement, seq string, retry bool) (since *plan.Since, straddle bool, note string, err error) {
	if r.x.opt.Stream == nil || rep.Source == "" || rep.OldWM == "" {
		return nil, false, "", nil
	}
	since, straddle, writes, read, err := r.followStream(t, rep.Source, seq, retry, func(*record.Change) (*plan.Replacement, bool) { return rep, false })
	switch {
	case errors.Is(err, ErrDeadline):
		return nil, false, "", err
	case err != nil:
		return nil, false, fmt.Sprintf("reading on in the stream: %v", err), nil
	case straddle:
		return nil, true, fmt.Sprintf("read on %d records: one of Denorm's writes of it straddles the old watermark", read), nil
	case since == nil:
		return nil, false, fmt.Sprintf("read on %d records: no write of it", read), nil
	}
	return since, false, fmt.Sprintf("read on %d records: %d writes of it", read, writes), nil
}

// followStream reads on in the stream after seq for the records of t's target: start gives,
// at the first of them, the replacement the chain follows (nil: stop, none) and whether
// that record only starts it; then the chain of Denorm's writes (plan.Replacement.Follow)
// runs until it is settled. read is how many records of the stream it went through; err
// is ErrDeadline when the invocation's deadline cut the read short.
func (r *run) followStream(t *plan.TargetDeltas, source, seq string, retry bool, start func(*record.Change) (*plan.Replacement, bool)) (since *plan.Since, straddle bool, writes, read int, err error) {
	p := plan.New(r.x.set)
	var rep *plan.Replacement
	var chain []*plan.OwnWrite
	read, err = r.readStream(source, seq, t.Target, retry, func(c *record.Change) bool {
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
	return since, straddle, len(chain), read, err
}

// readStream calls each with the records of target after seq in the stream source, in
// order, until it returns false or the stream has nothing more for now: one read at a time
// per executor, bounded by readOnContext (retry as there). read is how many records of the
// stream it went through; err is ErrDeadline when the invocation's deadline cut it short.
func (r *run) readStream(source, seq string, target plan.Key, retry bool, each func(*record.Change) bool) (read int, err error) {
	wait, cancel := r.beforeMargin()
	defer cancel()
	select {
	case r.x.readingOn <- struct{}{}:
		defer func() { <-r.x.readingOn }()
	case <-wait.Done():
		return 0, fmt.Errorf("%w: waiting to read on in the stream: %v", ErrDeadline, wait.Err())
	}
	ctx, stop := r.readOnContext(retry)
	read, err = r.x.opt.Stream.After(ctx, source, seq, r.keyOf(target), each)
	err = stop(err)
	r.count(func(s *Stats) { s.StreamFollows++; s.StreamFollowRecords += read })
	return read, err
}

// readOnContext bounds one read on in the stream: ReadOnBudget, and no more than half the
// time left before the deadline margin, so the writes that follow it still fit. The
// returned stop turns a read cut short by this invocation's deadline into ErrDeadline,
// when retry (the record is not the first of its batch) and the budget was under half
// what the batch had for it when it started: the record then fails and comes again first,
// rather than being settled without what the read would show. Once first, a cut read is
// final, as a deferral is: the work before it may take as long again, and failing the
// record at every delivery would send it to the on-failure destination.
func (r *run) readOnContext(retry bool) (ctx context.Context, stop func(err error) error) {
	budget, cut := r.x.opt.ReadOnBudget, false
	if dl, ok := r.ctx.Deadline(); ok {
		half := func(from time.Time) time.Duration { return max(dl.Sub(from)-r.x.opt.DeadlineMargin, 0) / 2 }
		fresh := min(budget, half(r.start))
		budget = min(budget, half(time.Now()))
		cut = retry && budget < fresh/2
	}
	ctx, cancel := context.WithTimeout(r.ctx, budget)
	return ctx, func(err error) error {
		cancel()
		if err != nil && errors.Is(err, context.DeadlineExceeded) && (cut || r.ctx.Err() != nil) {
			return fmt.Errorf("%w: %v", ErrDeadline, err)
		}
		return err
	}
}

// beforeMargin is r.ctx, done DeadlineMargin before its deadline: no write starts after.
func (r *run) beforeMargin() (context.Context, context.CancelFunc) {
	if dl, ok := r.ctx.Deadline(); ok {
		return context.WithDeadline(r.ctx, dl.Add(-r.x.opt.DeadlineMargin))
	}
	return context.WithCancel(r.ctx)
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
// too. Nil when there is no reader, no INSERT yet, or the chain is not settled. Its error
// is ErrDeadline only, as readOn's.
func (r *run) readOnRemoval(t *plan.TargetDeltas, e *plan.Entry, retry bool) (*plan.Since, error) {
	if r.x.opt.Stream == nil || e.Source == "" {
		return nil, nil
	}
	var put *plan.Replacement
	since, _, writes, _, err := r.followStream(t, e.Source, e.Seq, retry, func(c *record.Change) (*plan.Replacement, bool) {
		if c.Op != record.Insert {
			return nil, false // not put back (yet)
		}
		n, _ := plan.WritesOf(c.New)
		put = &plan.Replacement{OldWM: e.Covers, NewWM: record.SeqOf(c.New[rules.WatermarkAttr]), NewN: n}
		return put, true
	})
	if errors.Is(err, ErrDeadline) {
		return nil, err
	}
	if err != nil || put == nil {
		return nil, nil
	}
	if since == nil && writes == 0 {
		// Put back (with Denorm's attributes as the application read them), and nothing of
		// Denorm's on it yet that the stream shows: nothing repeated, if the item agrees.
		return &plan.Since{N: put.NewN, WM: put.NewWM, Repeats: map[string]plan.Number{}}, nil
	}
	return since, nil
}

// errRestoreDeferred: a restore that cannot yet tell which of Denorm's writes since the
// application's write repeated records waits for a batch that holds their records.
var errRestoreDeferred = errors.New("restore of a replaced counter target deferred: it comes again first in a batch that holds the records after it")

// chained is what Denorm's writes since the application's replacement applied again, per
// attribute, when the chain of their records (rep.Since, from the batch or the stream)
// accounts for the item: it holds all of them, or the last of them is past the old
// watermark (any later write applied only records after it).
func (r *run) chained(rep *plan.Replacement, item map[string]types.AttributeValue) (map[string]plan.Number, bool) {
	s := rep.Since
	if s == nil {
		return nil, false
	}
	n, _ := plan.WritesOf(item)
	if n == s.N || (n > s.N && record.CompareSeq(s.WM, rep.OldWM) >= 0) {
		r.count(func(st *Stats) { st.Compensated++ })
		return s.Repeats, true
	}
	return nil, false
}

// fromItem is what Denorm's writes since the application's replacement applied again, per
// attribute, as the item shows it, for when the stream cannot say: those writes applied
// the records from the first one after the replacement (`_dn_wf` when the write dropped the
// watermark, else just above the watermark it left) up to the current watermark. The old
// watermark covers records that were counted before the replacement. All of them covered:
// everything they added is taken out. None: nothing is. Some (the writes straddle the old
// watermark): which ones cannot be told, and why says so; nothing is taken out. It holds
// only while the application has not written the target again since.
func (r *run) fromItem(t *plan.TargetDeltas, rep *plan.Replacement, item map[string]types.AttributeValue) (adjust map[string]plan.Number, why string) {
	cur := record.SeqOf(item[WatermarkAttr])
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
