package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// A count or sum whose target is in another partition than its source (a user's post
// count) is relayed (rules.CompiledRule.Relay): the processor writes each source's deltas
// of a batch to a relay item, one idempotent UpdateItem guarded by the source's sequence
// number. All relay items of one target partition share the partition RelayPrefix + the
// target's partition key, so their stream records come in order on one shard, and reach
// the target's state item under its relay watermark. Exactly once follows from the two
// guards: a source's records come in order on one shard, so the relay item's sequence
// number says which of them it holds; and the relay watermark says which relay records the
// state holds.

// RelayGroup is one source item's deltas to one target, in record order: one relay write.
type RelayGroup struct {
	Target, Source Key
	Entries        []Entry // Rule, Amount, Rec and Seq of each delta
}

// Rec is the earliest record the group answers for.
func (g *RelayGroup) Rec() int { return g.Entries[0].Rec }

// After returns the group's deltas of records after seq ("" for all), coalesced per rule
// name, with the first and last sequence numbers taken.
func (g *RelayGroup) After(seq string) (amounts map[string]value.Number, minSeq, maxSeq string) {
	for _, e := range g.Entries {
		if seq != "" && record.CompareSeq(e.Seq, seq) <= 0 {
			continue
		}
		if amounts == nil {
			amounts = map[string]value.Number{}
			minSeq = e.Seq
		}
		maxSeq = e.Seq
		amounts[e.Rule.Name] = amounts[e.Rule.Name].Add(e.Amount)
	}
	return amounts, minSeq, maxSeq
}

// RelayKey is the key of the relay item that carries source's deltas to target: in the
// relay partition of the target's partition, its sort key a digest of both keys (which may
// together be longer than a sort key may be).
func RelayKey(target, source Key) Key {
	h := sha256.New()
	for _, s := range []string{target.SK, source.PK, source.SK} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return Key{PK: rules.RelayPrefix + target.PK, SK: hex.EncodeToString(h.Sum(nil)[:16])}
}

// relayed plans the record of a relay item: a write that took its sequence number forward
// carries deltas to the target it names, which the target takes under its watermark. The
// item's other records (its creation by a write that carried no delta, its expiry) carry
// nothing.
func (p *Planner) relayed(c *record.Change, rp RecordPlan) RecordPlan {
	if c.New == nil {
		return rp
	}
	newSeq := record.SeqOf(c.New[rules.RelaySeqAttr])
	if newSeq == "" || (c.Old != nil && seqBelow(c.New[rules.RelaySeqAttr], c.Old[rules.RelaySeqAttr]) >= 0) {
		return rp
	}
	tsk, _ := c.New[rules.RelayTargetAttr].(*types.AttributeValueMemberS)
	ds, _ := c.New[rules.RelayDeltasAttr].(*types.AttributeValueMemberM)
	if tsk == nil || ds == nil {
		return rp
	}
	target := Key{PK: strings.TrimPrefix(rp.PK, rules.RelayPrefix), SK: tsk.Value}
	for name, v := range ds.Value {
		r := p.set.Rule(name)
		amt := value.NumberOf(v)
		if r == nil || r.Agg == nil || r.Kind.Extreme() || amt.IsZero() {
			continue // a rule removed since the write (or now of a kind without deltas): its delta goes with it
		}
		// A rule still relayed takes the delta under the state's relay watermark; one moved
		// to transaction mode since (exactlyOnce, split) under the relay record's own
		// marker: a relay write made before the deploy still counts, once.
		rp.Deltas = append(rp.Deltas, Delta{Rule: r, Target: target, Amount: amt})
	}
	return rp
}
