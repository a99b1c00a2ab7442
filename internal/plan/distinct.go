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

// A distinct rule counts the different values of an attribute among a target's sources in
// two steps, both count deltas that the machinery of counts makes exactly once:
//
//  1. a source entering or leaving adds +1 or -1 to its value's reference item (DistinctRef:
//     how many sources of the target hold the value), which is its own state item: in the
//     target's relay partition, under the watermark of the source's partition, a relay, or
//     the event's marker, as the rule's mode says for any count;
//  2. the reference item's stream record, when its number went from 0 to 1 (or back), adds
//     +1 (-1) to the target's state, under the relay watermark (all reference and relay
//     items of a target partition share a partition, so their records come in order) or,
//     without local indexes, the record's marker; the state is then copied as a count's.
//
// A redelivered source record is refused by the reference item's guard and never reaches
// step 2; a redelivered reference record is refused by the state's. Denorm's state is in
// reserved items only; the target shows a copy.

// DistinctRef is the key of rule's reference item for the value with DistinctKey vk among
// target's sources. Its sort key names the rule and the target, so that its record alone
// says which count it moves.
func DistinctRef(target Key, rule, vk string) Key {
	h := sha256.Sum256([]byte(vk))
	return Key{PK: rules.RelayPrefix + target.PK,
		SK: rules.DistinctRefPrefix + rule + "#" + hex.EncodeToString(h[:16]) + "#" + target.SK}
}

// ParseDistinctRef returns the target and the rule of the reference item at k; false when
// k is no reference item's key.
func ParseDistinctRef(k Key) (target Key, rule string, ok bool) {
	pk, ok := strings.CutPrefix(k.PK, rules.RelayPrefix)
	if !ok {
		return Key{}, "", false
	}
	rest, ok := strings.CutPrefix(k.SK, rules.DistinctRefPrefix)
	if !ok {
		return Key{}, "", false
	}
	parts := strings.SplitN(rest, "#", 3)
	if len(parts) != 3 || parts[0] == "" || len(parts[1]) != 32 {
		return Key{}, "", false
	}
	return Key{PK: pk, SK: parts[2]}, parts[0], true
}

// IsDistinctRef reports whether k is a reference item's key (its own state item).
func IsDistinctRef(k Key) bool {
	_, _, ok := ParseDistinctRef(k)
	return ok
}

// distinct emits step 1: -1 to the reference item of the value the item held, +1 to the
// one of the value it holds, when it entered, left, moved or changed its value.
func (e *eval) distinct(r *rules.CompiledRule, wasSrc, isSrc bool) error {
	a := r.Agg
	if e.c.TTL && a.OnExpiry == rules.OnExpiryIgnore {
		return nil
	}
	inOld, inNew := e.members(r, wasSrc, isSrc)
	ref := func(old bool, item record.Item) (Key, types.AttributeValue, bool, error) {
		t, err := e.render(old, r.Target)
		if err != nil {
			if e.unlinked(err) {
				return Key{}, nil, false, nil
			}
			return Key{}, nil, false, err
		}
		v, ok := r.SourceValue(item, r.Agg.Value)
		if !ok {
			return Key{}, nil, false, nil // no value: counted nowhere
		}
		vk, ok := value.DistinctKey(v)
		if !ok {
			return Key{}, nil, false, nil // a value of no type a distinct counts
		}
		return DistinctRef(t, r.Name, vk), v, true, nil
	}
	var oldRef, newRef Key
	var oldV, newV types.AttributeValue
	var err error
	if inOld {
		if oldRef, oldV, inOld, err = ref(true, e.c.Old); err != nil {
			return err
		}
	}
	if inNew {
		if newRef, newV, inNew, err = ref(false, e.c.New); err != nil {
			return err
		}
	}
	if inOld && inNew && oldRef == newRef {
		return nil
	}
	if inOld {
		e.addDelta(Delta{Rule: r, Target: oldRef, Amount: value.Int(-1), Value: oldV})
	}
	if inNew {
		e.addDelta(Delta{Rule: r, Target: newRef, Amount: value.Int(1), Value: newV})
	}
	return nil
}

// distinctRef plans step 2 for a reference item's record: the number of sources holding
// the value went from none to some (+1 to the target's count) or from some to none (-1).
// Any other write of it (a number that stays above zero, a watermark moved by deltas that
// summed to zero) moves nothing.
func (p *Planner) distinctRef(c *record.Change, rp RecordPlan) RecordPlan {
	target, name, ok := ParseDistinctRef(Key{PK: rp.PK, SK: rp.SK})
	r := p.set.Rule(name)
	if !ok || r == nil || r.Kind != rules.KindDistinct {
		return rp // a rule removed since: `denorm cleanup` deletes its items
	}
	if c.New != nil && !value.Equal(c.Old[rules.RefRepairAttr], c.New[rules.RefRepairAttr]) {
		return rp // a repair's write: it set the target's state with it, in one transaction
	}
	held := func(item record.Item) int64 {
		if item != nil && value.NumberOf(item[r.Agg.Attribute]).Sign() > 0 {
			return 1
		}
		return 0
	}
	if d := held(c.New) - held(c.Old); d != 0 {
		rp.Deltas = append(rp.Deltas, Delta{Rule: r, Target: target, Amount: value.Int(d)})
	}
	return rp
}
