package rules

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/denorm/denorm/internal/keys"
)

// Time buckets: a count or sum target whose key template holds {createdAt:day} is one item
// per UTC day (hour, month, year) of its sources' createdAt, created by the first source of
// the day (missingTarget: create) and, with a ttl, expiring a given time after the day ends.

// BucketVar is a time bucket in a key template: {createdAt:day} in sk.
type BucketVar struct {
	Attr  string // the key attribute ("sk")
	Var   string // the variable bucketed ("createdAt")
	Width keys.Width
}

func (b BucketVar) String() string { return fmt.Sprintf("{%s:%s} in %s", b.Var, b.Width, b.Attr) }

// Buckets returns the time buckets of the entity's primary key templates, pk first.
func (e *EntityType) Buckets() []BucketVar {
	var out []BucketVar
	for _, k := range e.Keys {
		if k.T != e.PK && k.T != e.SK {
			continue // index keys: an aggregate renders only the primary key
		}
		for _, p := range k.T.Parts() {
			if p.Bucket != 0 {
				out = append(out, BucketVar{Attr: k.Attr, Var: p.Var, Width: p.Bucket})
			}
		}
	}
	return out
}

// maxTTL bounds a rule's ttl: a century is beyond any retention, and keeps the sum of an
// epoch and the ttl far from overflowing.
const maxTTL = 36500 * 24 * time.Hour

// ErrTTL is returned (wrapped) by ParseTTL.
var ErrTTL = errors.New("ttl")

// ParseTTL reads a rule's ttl: a whole number of hours or days, "36h" or "90d", at least
// one hour and at most 36500 days.
func ParseTTL(s string) (time.Duration, error) {
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(s, "d"):
		unit = 24 * time.Hour
	case strings.HasSuffix(s, "h"):
		unit = time.Hour
	}
	num := strings.TrimRight(s, "dh")
	n, err := strconv.ParseInt(num, 10, 64)
	if unit == 0 || err != nil || len(num) != len(s)-1 || num == "" || num[0] < '0' || num[0] > '9' {
		return 0, fmt.Errorf("%w %q is not a duration: write a whole number of days or hours, e.g. 90d or 36h", ErrTTL, s)
	}
	if n < 1 || n > int64(maxTTL/unit) {
		return 0, fmt.Errorf("%w %q is out of range: from 1h to 36500d", ErrTTL, s)
	}
	return time.Duration(n) * unit, nil
}

// CreatesBuckets reports whether r is a count, sum, max, min, latest or top whose target's
// key holds a time bucket: its targets are created by their first source.
func (r *CompiledRule) CreatesBuckets() bool {
	return r.Kind != KindCopy && r.Kind != KindMirror && r.Kind != KindDistinct && r.Target != nil && len(r.Target.Buckets()) > 0
}

// Expiry returns the TTL of count or sum rule r's target at key pk/sk: r's ttl after the
// end of the latest time bucket in the key (a key with a day and a month bucket expires
// after the month). ok is false when r has no ttl or the key is not a target of r.
func (r *CompiledRule) Expiry(pk, sk string) (time.Time, bool) {
	if r.TTL <= 0 || r.Target == nil {
		return time.Time{}, false
	}
	var end time.Time
	found := false
	for _, k := range []struct {
		t *keys.Template
		v string
	}{{r.Target.PK, pk}, {r.Target.SK, sk}} {
		if k.t == nil {
			continue
		}
		var buf [8]string
		vals, ok := k.t.Match(k.v, buf[:0])
		if !ok {
			return time.Time{}, false
		}
		for _, p := range k.t.Parts() {
			if p.Bucket == 0 {
				continue
			}
			for i := 0; i+1 < len(vals); i += 2 {
				if vals[i] != p.Var {
					continue
				}
				start, err := p.Bucket.Start(vals[i+1])
				if err != nil {
					return time.Time{}, false
				}
				if e := p.Bucket.End(start); !found || e.After(end) {
					end, found = e, true
				}
			}
		}
	}
	if !found {
		return time.Time{}, false
	}
	return end.Add(r.TTL), true
}

// Bucketing describes how a count or sum rule buckets its target ("" when the target's
// keys hold no bucket), for `denorm validate` and `denorm explain`: "Comment by the UTC day
// of createdAt into PostDay (sk "DAY#{createdAt:day}"), created on first use; expires 90d
// after its day ends (written to ttl)". ttlAttribute is the table's TTL attribute.
func (r *CompiledRule) Bucketing(ttlAttribute string) string {
	if !r.CreatesBuckets() {
		return ""
	}
	bs := r.Target.Buckets()
	if len(bs) == 0 {
		return ""
	}
	var by, where []string
	seen := map[string]bool{}
	last := keys.Width(0)
	for _, b := range bs {
		by = append(by, fmt.Sprintf("the UTC %s of %s", b.Width, b.Var))
		last = max(last, b.Width)
		if !seen[b.Attr] {
			seen[b.Attr] = true
			where = append(where, fmt.Sprintf("%s %q", b.Attr, r.Target.Template(b.Attr).String()))
		}
	}
	s := fmt.Sprintf("%s by %s into %s (%s), created on first use", r.Source.Name, strings.Join(by, " and "), r.Target.Name, strings.Join(where, ", "))
	if r.TTL > 0 {
		s += fmt.Sprintf("; expires %s after its %s ends (written to %s)", r.Agg.TTL, last, ttlAttribute)
	} else {
		s += "; never expires (no ttl)"
	}
	return s
}
