package rules

import (
	"errors"
	"fmt"
	"strings"

	"github.com/denorm/denorm/internal/keys"
)

// Checks of time buckets ({createdAt:day} in a target's key) and of the ttl of the rules
// that fill them.

// bucketsOf returns the bucketed variables of e's templates on the key attributes attrs, in
// order, with the template that holds each.
func bucketsOf(e *entityInfo, attrs []string) []bucketAt {
	var out []bucketAt
	for _, k := range attrs {
		t := e.tmpl[k]
		if k == "" || t == nil {
			continue
		}
		for _, p := range t.Parts() {
			if p.Bucket != 0 {
				out = append(out, bucketAt{attr: k, t: t, name: p.Var, width: p.Bucket})
			}
		}
	}
	return out
}

type bucketAt struct {
	attr  string
	t     *keys.Template
	name  string
	width keys.Width
}

func (b bucketAt) String() string { return fmt.Sprintf("%s %q", b.attr, b.t.String()) }

// bucketGaps reports each bucketed variable of into's pk and sk that the counted entity of
// lacks, and returns of's variables plus those, for the check of the other variables.
func (rc ruleCheck) bucketGaps(into, of *entityInfo, pksk []string) map[string]bool {
	have, copied := of.vars, false
	k := string(rc.r.Kind)
	for _, b := range bucketsOf(into, pksk) {
		if have[b.name] {
			continue
		}
		rc.add(rc.pos(k+".into", k), "%s's %s buckets {%s}, the time of each %s, which %s does not have: %sadd %s (an ISO-8601 time or epoch seconds) to %s's attributes (%s)",
			into.e.Name, b, b.name, of.e.Name, of.e.Name, renameOr(into, of, []string{b.name}), b.name, of.e.Name, hasVars(of))
		if !copied { // of.vars is the entity's: add to a copy
			m := make(map[string]bool, len(have)+1)
			for n := range have {
				m[n] = true
			}
			have, copied = m, true
		}
		have[b.name] = true
	}
	return have
}

// checkAggBucket checks a count or sum into a bucketed target: bucket items do not exist
// before their first source, so the rule must create them.
func (rc ruleCheck) checkAggBucket(a *Aggregate, into *entityInfo) {
	k := string(rc.r.Kind)
	spec := rc.v.f.Table
	bs := bucketsOf(into, []string{spec.PartitionKey, spec.SortKey})
	if len(bs) == 0 {
		if a.TTL != "" {
			rc.add(rc.pos(k+".ttl", k), "ttl counts from the end of the target's time bucket, and %s's keys hold none: remove ttl, or bucket %s's key, e.g. %s: \"DAY#{createdAt:day}\"",
				into.e.Name, into.e.Name, orName(spec.SortKey, spec.PartitionKey))
		}
		return
	}
	if rc.r.Kind == KindDistinct {
		rc.add(rc.pos("distinct.into", "distinct"), "%s's %s holds a time bucket ({%s:%s}), and distinct cannot count into a bucket yet (its reference items would outlive the bucket): count into an entity without a bucket in its keys",
			into.e.Name, bs[0], bs[0].name, bs[0].width)
		return
	}
	if a.MissingTarget != MissingCreate && !rc.r.Kind.Extreme() { // max and min create bucket items
		what := "the default, skip,"
		if a.MissingTarget != "" {
			what = a.MissingTarget
		}
		rc.add(rc.pos(k+".missingTarget", k+".into", k), "%s's %s holds a time bucket ({%s:%s}): a bucket item does not exist before its first source, and missingTarget %s would park its deltas until the application writes it: add missingTarget: create",
			into.e.Name, bs[0], bs[0].name, bs[0].width, what)
	}
}

// checkTTLField checks a rule's ttl as written and that the table has somewhere to put it.
func (rc ruleCheck) checkTTLField(a *Aggregate) {
	_, written := rc.r.Fields[string(rc.r.Kind)+".ttl"]
	if a.TTL == "" && !written {
		return
	}
	p := rc.pos(string(rc.r.Kind)+".ttl", string(rc.r.Kind))
	if _, err := ParseTTL(a.TTL); err != nil {
		rc.add(p, "%v", err)
	}
	if rc.v.f.Table.TTLAttribute == "" {
		rc.add(p, "ttl is written to the table's TTL attribute, and the table has none: add ttlAttribute: ttl under table")
	}
}

// bucketTarget reports a copy or mirror target (field) whose keys hold a time bucket: a
// bucket item stands for every source of its hour, day, month or year, which only a count or
// sum can keep; a copy or mirror keeps one target per source.
func (rc ruleCheck) bucketTarget(dst *entityInfo, field string) bool {
	bs := bucketsOf(dst, keyOrder(dst.e))
	if len(bs) == 0 {
		return false
	}
	b := bs[0]
	rc.add(rc.pos(field, strings.SplitN(field, ".", 2)[0]), "%s's %s holds a time bucket ({%s:%s}): a bucket item stands for every source of its %s, which only a count, sum, max, min, latest or top can keep, and a %s writes one target per source: write {%s} without a width in %s's templates, or count, sum, max, min, latest or top into %s",
		dst.e.Name, b, b.name, b.width, b.width, rc.r.Kind, b.name, dst.e.Name, dst.e.Name)
	return true
}

// checkBucketTTLs checks that the count and sum rules into one entity agree on its ttl: the
// expiry is written once, by whichever rule creates the item.
func (v *validator) checkBucketTTLs() {
	type first struct {
		ctx, ttl, norm string
		line           int
	}
	seen := map[string]first{}
	for i := range v.f.Rules {
		r := &v.f.Rules[i]
		if r.Agg == nil || r.Kind == KindDistinct || v.ents[r.Agg.Into] == nil {
			continue
		}
		norm := ""
		if d, err := ParseTTL(r.Agg.TTL); err == nil {
			norm = d.String() // 24h and 1d are the same
		} else if errors.Is(err, ErrTTL) && r.Agg.TTL != "" {
			continue // reported on the rule
		}
		rc := ruleCheck{v: v, r: r, i: i, ctx: ruleCtx(r, i)}
		f, ok := seen[r.Agg.Into]
		if !ok {
			seen[r.Agg.Into] = first{rc.ctx, r.Agg.TTL, norm, rc.r.Pos.Line}
			continue
		}
		if f.norm != norm {
			k := string(r.Kind)
			rc.add(rc.pos(k+".ttl", k), "%s (line %d) gives %s %s and this rule %s: an item has one expiry, written by whichever rule creates it: give every rule into %s the same ttl",
				f.ctx, f.line, r.Agg.Into, ttlText(f.ttl), ttlText(r.Agg.TTL), r.Agg.Into)
		}
	}
}

func ttlText(ttl string) string {
	if ttl == "" {
		return "no ttl"
	}
	return "ttl " + ttl
}
