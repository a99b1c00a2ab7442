package plan

import (
	"time"

	"github.com/denorm/denorm/internal/rules"
)

// Time buckets: a count or sum whose target key holds {createdAt:day} renders the bucket
// from the source's image like any key (keys.Template.Render), so a source whose timestamp
// changes leaves the old bucket and enters the new one, and a timestamp that is not a time
// links to no bucket (Unlinked). What is special is the ttl: a bucket item expires a given
// time after its bucket ends (rules.CompiledRule.Expiry). The executor writes the expiry
// when it creates the item (apply/bucketttl.go); the planner leaves expired buckets alone.

// expired reports whether target k of rule r is a bucket whose ttl had passed when the
// record was written: a delta for it would re-create an item DynamoDB deletes anyway (a
// comment of last year deleted today), so the source links to no live bucket and the
// effect is counted as Unlinked. Decided on the record's own time, so a redelivery decides
// the same; a record without one is never expired here (verify and backfill give their
// scan's records the scan's time).
func (e *eval) expired(r *rules.CompiledRule, k Key) bool {
	if r.TTL <= 0 || e.c.Created.IsZero() {
		return false
	}
	exp, ok := e.exp.expiry(r, k)
	if !ok || exp.After(e.c.Created) {
		return false
	}
	e.rp.Unlinked++
	return true
}

// expiryMemo remembers the last bucket expiry a Planner worked out: the records of a batch
// mostly fall in the same bucket (comments of one post and day), and working it out again
// parses the key (rules.CompiledRule.Expiry).
type expiryMemo struct {
	r   *rules.CompiledRule
	k   Key
	exp time.Time
	ok  bool
}

func (m *expiryMemo) expiry(r *rules.CompiledRule, k Key) (time.Time, bool) {
	if m.r != r || m.k != k {
		m.r, m.k = r, k
		m.exp, m.ok = r.Expiry(k.PK, k.SK)
	}
	return m.exp, m.ok
}
