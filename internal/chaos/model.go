package chaos

import (
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/workload"
)

// Key is an item's primary key.
type Key struct{ PK, SK string }

// Kind is the social example's entity of an item the application writes.
type Kind int

// Kinds of application items (Stats is the one global stats item); Other is anything the oracle does not model (poison files,
// sacrificial files in folders that do not exist).
const (
	Other Kind = iota
	User
	Post
	Comment
	Group
	Membership
	Folder
	File
	Stats
	numKinds
)

// KindOf classifies an application item by its keys and, for files, its size.
func KindOf(k Key, item record.Item) Kind {
	switch {
	case strings.HasPrefix(k.PK, "USER#") && k.SK == "PROFILE":
		return User
	case strings.HasPrefix(k.PK, "USER#") && strings.HasPrefix(k.SK, "GROUP#"):
		return Membership
	case strings.HasPrefix(k.PK, "POST#") && k.SK == "METADATA":
		return Post
	case strings.HasPrefix(k.PK, "POST#") && strings.HasPrefix(k.SK, "COMMENT#"):
		return Comment
	case strings.HasPrefix(k.PK, "GROUP#") && k.SK == "METADATA":
		return Group
	case k.PK == "STATS#global" && k.SK == "STATS":
		return Stats
	case isVoid(k.PK):
		return Other
	case strings.HasPrefix(k.PK, "FOLDER#") && k.SK == "METADATA":
		return Folder
	case strings.HasPrefix(k.PK, "FOLDER#") && strings.HasPrefix(k.SK, "FILE#"):
		if _, ok := item["size"].(*types.AttributeValueMemberN); ok || item["size"] == nil {
			return File
		}
	}
	return Other
}

// Model is what the application wrote: every item's attributes as the application last set
// them, replayed from the operations in order. Operations on one item keep their order when
// written (workload.Write), and items are independent, so the model's final state is the
// table's, minus what Denorm writes.
type Model struct {
	items map[Key]record.Item
	pools [numKinds]pool
	// Expired counts items the TTL process deleted (ttl in the past when removed).
	Expired int
	// Tombstones hold the last image of every deleted item.
	tombstones map[Key]record.Item
	// notes name the application-class cases (Faults.Application) that touched an item, so
	// the oracle's mismatches can say which case they come from.
	notes map[Key][]string
}

// NewModel returns an empty model.
func NewModel() *Model {
	m := &Model{items: map[Key]record.Item{}, tombstones: map[Key]record.Item{}, notes: map[Key][]string{}}
	for i := range m.pools {
		m.pools[i].pos = map[Key]int{}
	}
	return m
}

// Apply replays one operation. A read (see appWriter) changes nothing; a Put that reuses
// what a read saw holds, in the model, only the attributes the generator wrote: what it
// takes from the read is Denorm's (counters, _dn attributes), which the oracle computes.
func (m *Model) Apply(op workload.Op) {
	switch {
	case op.Put != nil && op.Put[readAttr] != nil:
	case op.Put != nil:
		k := keyOf(op.Put)
		m.remove(k)
		it := maps.Clone(op.Put)
		delete(it, staleAttr)
		m.add(k, it)
	case op.Del != nil:
		k := keyOf(op.Del)
		if it, ok := m.items[k]; ok {
			if n, ok := it["ttl"].(*types.AttributeValueMemberN); ok {
				if v, err := strconv.ParseInt(n.Value, 10, 64); err == nil && v < ttlLimit {
					m.Expired++
				}
			}
			m.tombstones[k] = it
		}
		m.remove(k)
	default:
		k := keyOf(op.Key)
		it, ok := m.items[k]
		if ok {
			m.remove(k)
			it = maps.Clone(it)
		} else {
			it = maps.Clone(op.Key)
		}
		maps.Copy(it, op.Set)
		for _, a := range op.Remove {
			delete(it, a)
		}
		m.add(k, it)
	}
}

func (m *Model) add(k Key, it record.Item) {
	m.items[k] = it
	m.pools[KindOf(k, it)].add(k)
}

func (m *Model) remove(k Key) {
	if it, ok := m.items[k]; ok {
		m.pools[KindOf(k, it)].remove(k)
		delete(m.items, k)
	}
}

// note records that case touched the item at k (once per case).
func (m *Model) note(k Key, c string) {
	for _, have := range m.notes[k] {
		if have == c {
			return
		}
	}
	m.notes[k] = append(m.notes[k], c)
}

// Cases returns the application-class cases that touched the item at k, in the order they
// first did.
func (m *Model) Cases(k Key) []string { return m.notes[k] }

// Item returns the live item at k.
func (m *Model) Item(k Key) (record.Item, bool) {
	it, ok := m.items[k]
	return it, ok
}

// Items calls f for every live item.
func (m *Model) Items(f func(Key, record.Item)) {
	for k, it := range m.items {
		f(k, it)
	}
}

// Live returns the live items of a kind, in no particular order.
func (m *Model) Live(kind Kind) []Key { return m.pools[kind].keys }

// Len is the number of live items.
func (m *Model) Len() int { return len(m.items) }

func (m *Model) pick(rng *rand.Rand, kind Kind) (Key, bool) {
	p := &m.pools[kind]
	if len(p.keys) == 0 {
		return Key{}, false
	}
	return p.keys[rng.IntN(len(p.keys))], true
}

func keyOf(item record.Item) Key {
	return Key{PK: str(item["pk"]), SK: str(item["sk"])}
}

// pool is a set of keys with O(1) add, remove and random pick.
type pool struct {
	keys []Key
	pos  map[Key]int
}

func (p *pool) add(k Key) {
	if _, ok := p.pos[k]; ok {
		return
	}
	p.pos[k] = len(p.keys)
	p.keys = append(p.keys, k)
}

func (p *pool) remove(k Key) {
	i, ok := p.pos[k]
	if !ok {
		return
	}
	last := p.keys[len(p.keys)-1]
	p.keys[i] = last
	p.pos[last] = i
	p.keys = p.keys[:len(p.keys)-1]
	delete(p.pos, k)
}
