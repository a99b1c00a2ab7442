package counter

import (
	"hash/fnv"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/value"
)

// A hot target's state is split (rules.Aggregate.Split): besides its state item, n parts,
// each in a partition of its own (rules.StatePartPrefix), so that no item and no partition
// takes more than its share of the target's writes. A split rule's transaction adds its
// deltas to one part; the target's exact values are the state item's plus every part's,
// and its version is the sum of theirs. Each item's version only rises, so the sum rises
// with every write of any of them, and a copy made from a later read of all of them is
// never older than one made from an earlier read: the copy's guard (CopyWrite) holds as
// for an unsplit state.

// StateKeys are the keys of every item that holds target t's exact values: its state item,
// then its n parts (none when n is 0).
func StateKeys(t plan.Key, n int) []plan.Key {
	out := make([]plan.Key, 0, n+1)
	out = append(out, StateKey(t))
	for i := range n {
		out = append(out, plan.PartKey(t, i))
	}
	return out
}

// PartOf picks the part of n that a transaction's deltas go to, from the key of its first
// event's source. Any part is right (the markers make each event exactly once wherever
// it lands); a hash spreads the transactions over the parts, and the same batch delivered
// again picks the same ones.
func PartOf(source string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(source))
	return int(h.Sum32() % uint32(n))
}

// Combine is a split target's state as one item: the state item's attributes (its
// watermarks and decided marks), each aggregate attribute and the version summed over the
// state item and the parts. Missing items (nil) hold nothing; nil when none exists.
func Combine(spec table.Spec, items []record.Item) record.Item {
	var out record.Item
	sums := map[string]value.Number{}
	var version uint64
	for i, it := range items {
		if it == nil {
			continue
		}
		if out == nil {
			out = record.Item{}
		}
		if i == 0 {
			for name, v := range it {
				out[name] = v
			}
		}
		version += Version(it[rules.StateVersionAttr])
		for _, name := range Values(spec, it) {
			sums[name] = sums[name].Add(value.NumberOf(it[name]))
		}
	}
	if out == nil {
		return nil
	}
	for name, n := range sums {
		out[name] = &types.AttributeValueMemberN{Value: n.String()}
	}
	out[rules.StateVersionAttr] = &types.AttributeValueMemberN{Value: strconv.FormatUint(version, 10)}
	return out
}
