package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/record"
)

// Poison kinds of the sacrificial files in folders that do not exist (VoidFolder): the last
// character of the file's sort key says what the hooks turn its record into. The file's own
// effect is nothing (its folder does not exist), so losing it to the on-failure destination
// loses nothing; everything else in its batch must still be applied.
const (
	VoidFolder = "FOLDER#void"
	// PoisonBadType gives the record's image an attribute of unknown type {"Q": ...}: the
	// decoder rejects it, the handler reports a batch item failure.
	PoisonBadType = 'T'
	// PoisonNoSeq removes the record's SequenceNumber: the handler cannot name it and fails
	// the whole invocation, so the mapping bisects.
	PoisonNoSeq = 'S'
	// PoisonTruncated cuts the record's JSON in half: the event does not parse at all.
	PoisonTruncated = 'J'
)

// Expired items carry a ttl before this epoch second (2017); live items one far in the
// future. A REMOVE whose old image has an expired ttl is DynamoDB's TTL process at work.
const (
	ttlExpired = 1_000_000_000
	ttlFuture  = 4_102_444_800
	ttlLimit   = 1_500_000_000
)

// Hooks rewrites batches before the function sees them: TTL removals get DynamoDB's service
// identity (DynamoDB Local never expires items), sacrificial records become poison, and
// every poison record's sequence number is remembered for the final check. With
// LostResponse it also loses successful responses.
type Hooks struct {
	faults Faults
	dice   *dice
	budget *budget
	counts *counters

	// cases, when set, names the application-class cases that touched an item
	// (Model.Cases): the records of such items are remembered in touched, so an on-failure
	// record can be named.
	cases func(Key) []string

	mu sync.Mutex
	// replicated, when set, tells a delete another Region made and replication carried here:
	// DynamoDB marks a TTL delete only in the stream of the Region whose TTL process made it.
	replicated func(keys, old record.Item) bool
	poison     map[string]string // sequence number -> why the record can never be applied
	ttl        map[string]bool
	touched    map[string]Key // sequence number -> item, for items cases names
}

// NewHooks returns the hooks of f on their own (Run builds its own).
func NewHooks(f Faults, seed uint64) *Hooks {
	return newHooks(f, seed, newBudget(f.MaxPerBatch), &counters{})
}

func newHooks(f Faults, seed uint64, b *budget, c *counters) *Hooks {
	return &Hooks{faults: f, dice: newDice(seed, 2), budget: b, counts: c,
		poison: map[string]string{}, ttl: map[string]bool{}, touched: map[string]Key{}}
}

// ESM returns the hooks for esm.Config.
func (h *Hooks) ESM() esm.Hooks {
	return esm.Hooks{BeforeInvoke: h.before, AfterInvoke: h.after, DeliverTwice: h.faults.DeliverTwice}
}

// Poison returns the sequence numbers of the poison records seen, sorted, with the reason.
func (h *Hooks) Poison() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.poison))
	for k, v := range h.poison {
		out[k] = v
	}
	return out
}

// PoisonSeqs returns the poison sequence numbers in stream order.
func (h *Hooks) PoisonSeqs() []string {
	p := h.Poison()
	out := make([]string, 0, len(p))
	for s := range p {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return record.CompareSeq(out[i], out[j]) < 0 })
	return out
}

func (h *Hooks) before(batch []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(batch))
	for i, raw := range batch {
		h.remember(raw)
		out[i] = h.rewrite(raw)
	}
	return out
}

// remember keeps the item of a record that an application-class case touched.
func (h *Hooks) remember(raw json.RawMessage) {
	if h.cases == nil {
		return
	}
	c, err := record.Decode(raw)
	if err != nil {
		return
	}
	if k := keyOf(c.Keys); len(h.cases(k)) > 0 {
		h.mu.Lock()
		h.touched[c.Seq] = k
		h.mu.Unlock()
	}
}

// Touched returns the items of the records seen that an application-class case touched,
// by sequence number.
func (h *Hooks) Touched() map[string]Key {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]Key, len(h.touched))
	for s, k := range h.touched {
		out[s] = k
	}
	return out
}

func (h *Hooks) after(batch []json.RawMessage, resp []byte, err error) ([]byte, error) {
	if err == nil && h.dice.hit(h.faults.LostResponse) && h.budget.take(lastEventID(batch)) {
		h.counts.lostResponses.Add(1)
		return nil, errLostResponse
	}
	return resp, err
}

var errLostResponse = errors.New("chaos: the invocation's response was lost")

// rewrite returns raw as the function should see it.
func (h *Hooks) rewrite(raw json.RawMessage) json.RawMessage {
	switch {
	case bytes.Contains(raw, []byte(`"`+VoidFolder)):
		c, err := record.Decode(raw)
		if err != nil {
			return raw
		}
		sk := str(c.Keys["sk"])
		if sk == "" {
			return raw
		}
		kind := sk[len(sk)-1]
		bad, why := poisonRecord(raw, kind)
		if bad != nil {
			h.markPoison(c.Seq, why)
			return bad
		}
	case bytes.Contains(raw, []byte(`"FILE#`)):
		// A file whose size is a string: the application's bug, the planner's error.
		if c, err := record.Decode(raw); err == nil {
			if _, ok := c.Image()["size"].(*types.AttributeValueMemberS); ok {
				h.markPoison(c.Seq, "sum value is a string ("+c.Op.String()+")")
			}
		}
	}
	if h.faults.TTL && bytes.Contains(raw, []byte(`"REMOVE"`)) && bytes.Contains(raw, []byte(`"ttl"`)) {
		return h.expire(raw)
	}
	return raw
}

func (h *Hooks) markPoison(seq, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.poison[seq]; !ok {
		h.poison[seq] = why
		h.counts.poisoned.Add(1)
	}
}

// expire gives a REMOVE of an item whose ttl has passed the TTL service identity, as
// DynamoDB's stream does for items its TTL process deletes.
func (h *Hooks) expire(raw json.RawMessage) json.RawMessage {
	c, err := record.Decode(raw)
	if err != nil || c.Op != record.Remove || c.TTL {
		return raw
	}
	n, ok := c.Old["ttl"].(*types.AttributeValueMemberN)
	if !ok {
		return raw
	}
	if v, err := strconv.ParseFloat(n.Value, 64); err != nil || v >= ttlLimit {
		return raw
	}
	h.mu.Lock()
	replicated := h.replicated
	h.mu.Unlock()
	if replicated != nil && replicated(c.Keys, c.Old) {
		return raw
	}
	c.TTL = true
	var env struct {
		Region string `json:"awsRegion"`
	}
	_ = json.Unmarshal(raw, &env)
	out, err := record.EncodeChange(c, "", env.Region)
	if err != nil {
		return raw
	}
	h.mu.Lock()
	if !h.ttl[c.Seq] {
		h.ttl[c.Seq] = true
		h.counts.ttl.Add(1)
	}
	h.mu.Unlock()
	return out
}

// poisonRecord turns raw into a poison record of the given kind.
func poisonRecord(raw json.RawMessage, kind byte) (json.RawMessage, string) {
	switch kind {
	case PoisonTruncated:
		return append(json.RawMessage(nil), raw[:len(raw)/2]...), "truncated record JSON"
	case PoisonBadType, PoisonNoSeq:
	default:
		return nil, ""
	}
	var rec map[string]json.RawMessage
	var ddb map[string]json.RawMessage
	if json.Unmarshal(raw, &rec) != nil || json.Unmarshal(rec["dynamodb"], &ddb) != nil {
		return nil, ""
	}
	why := "no SequenceNumber"
	if kind == PoisonNoSeq {
		delete(ddb, "SequenceNumber")
	} else {
		why = "unknown attribute type Q"
		image := "NewImage"
		if _, ok := ddb[image]; !ok {
			image = "OldImage"
		}
		var im map[string]json.RawMessage
		if json.Unmarshal(ddb[image], &im) != nil {
			return nil, ""
		}
		im["size"] = json.RawMessage(`{"Q":"1"}`)
		ddb[image], _ = json.Marshal(im)
	}
	rec["dynamodb"], _ = json.Marshal(ddb)
	out, err := json.Marshal(rec)
	if err != nil {
		return nil, ""
	}
	return out, why
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// isVoid reports whether pk is a sacrificial folder's partition.
func isVoid(pk string) bool { return strings.HasPrefix(pk, VoidFolder) }
