package rules

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"
)

// decodeRules reads the rules list. Every item becomes a Rule, even a malformed one, so that
// "rule #N" in messages counts the same items as the file.
func (d *yamlDecoder) decodeRules(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // "rules:" with every rule commented out: no rules
	}
	d.eachItem(n, "", "rules", func(i int, item *yaml.Node) {
		r := Rule{Pos: posOf(item), Fields: map[string]Pos{}}
		ctx := fmt.Sprintf("rule #%d", i+1)
		if item.Kind != yaml.MappingNode {
			d.drop(ctx, item, "a rule must be a mapping with a name and one of copy, mirror, count, sum, distinct, max, min, latest or top, found %s", describe(item))
			d.f.Rules = append(d.f.Rules, r)
			return
		}
		es := d.entries(item, ctx, "rule")
		// The name gives every other message its context, wherever it is written.
		for _, e := range es {
			if e.key == "name" {
				r.Fields["name"] = e.valuePos
				if s, ok := d.str(e.valNode, ctx, "name"); ok {
					r.Name = s
					ctx = fmt.Sprintf("rule %q", s)
				}
			}
		}
		for _, e := range es {
			switch {
			case e.key == "name":
			case isKind(e.key):
				if r.Kind != "" {
					d.problem(e.keyPos, ctx, "has both %s and %s, but a rule has exactly one kind: split it into two rules", r.Kind, e.key)
					continue
				}
				r.Kind = Kind(e.key)
				r.Fields[e.key] = e.valuePos
				d.decodeKind(&r, e.valNode, ctx)
			default:
				d.unknownField(e, ctx, "a rule", ruleFields)
			}
		}
		d.f.Rules = append(d.f.Rules, r)
	})
}

func (d *yamlDecoder) decodeKind(r *Rule, n *yaml.Node, ctx string) {
	k := string(r.Kind)
	switch r.Kind {
	case KindCopy:
		c := &Copy{Set: map[string]string{}}
		r.Copy = c
		for _, e := range d.entries(n, ctx, k) {
			r.Fields[k+"."+e.key] = e.valuePos
			switch e.key {
			case "from":
				c.From, _ = d.str(e.valNode, ctx, "copy.from")
			case "to":
				c.To, _ = d.str(e.valNode, ctx, "copy.to")
			case "via":
				c.Via, _ = d.str(e.valNode, ctx, "copy.via")
			case "onSourceDelete":
				c.OnSourceDelete, _ = d.str(e.valNode, ctx, "copy.onSourceDelete")
			case "set":
				// Entries are placed at their key: a problem with "userName: name" is about
				// the pair, and the target name is what tells pairs apart.
				for _, se := range d.entries(e.valNode, ctx, "copy.set") {
					r.Fields["copy.set."+se.key] = se.keyPos
					if s, ok := d.str(se.valNode, ctx, "copy.set."+se.key); ok {
						c.Set[se.key] = s
						c.SetOrder = append(c.SetOrder, se.key)
					}
				}
			default:
				d.unknownField(e, ctx, k, copyFields)
			}
		}
	case KindMirror:
		m := &Mirror{}
		r.Mirror = m
		for _, e := range d.entries(n, ctx, k) {
			r.Fields[k+"."+e.key] = e.valuePos
			switch e.key {
			case "from":
				m.From, _ = d.str(e.valNode, ctx, "mirror.from")
			case "to":
				m.To, _ = d.str(e.valNode, ctx, "mirror.to")
			case "attributes":
				var at []Pos
				m.Attributes, at = d.strList(e.valNode, ctx, "mirror.attributes")
				for i, p := range at {
					r.Fields[fmt.Sprintf("mirror.attributes.%d", i)] = p
				}
			default:
				d.unknownField(e, ctx, k, mirrorFields)
			}
		}
	case KindCount, KindSum, KindMax, KindMin, KindLatest, KindTop, KindDistinct:
		r.Agg = d.decodeAgg(r, n, ctx)
	default:
		d.problem(r.Fields[k], ctx, "rule kind %s is listed in rules.Kinds but has no decoder", k)
	}
}

// isKind reports whether key names a rule kind (rules.Kinds).
func isKind(key string) bool {
	for _, k := range Kinds {
		if string(k) == key {
			return true
		}
	}
	return false
}

func (d *yamlDecoder) decodeAgg(r *Rule, n *yaml.Node, ctx string) *Aggregate {
	k := string(r.Kind)
	a := &Aggregate{Where: map[string][]Test{}}
	allowed := countFields
	switch r.Kind {
	case KindSum:
		allowed = sumFields
	case KindDistinct:
		allowed = distinctFields
	case KindMax, KindMin:
		allowed = extremeFields
	case KindLatest:
		allowed = latestFields
	case KindTop:
		allowed = topFields
	}
	for _, e := range d.entries(n, ctx, k) {
		r.Fields[k+"."+e.key] = e.valuePos
		if r.Kind == KindTop && e.key == "value" {
			d.problem(e.keyPos, ctx, "top has no value: it keeps the n sources greatest by its by attribute, each entry holding set: {entry attribute: source attribute}; allowed: %s", strings.Join(allowed, ", "))
			continue
		}
		if r.Kind == KindLatest && (e.key == "value" || e.key == "attribute") {
			d.problem(e.keyPos, ctx, "latest has no %s: it copies set: {target attribute: source attribute} from the source that is greatest by its by attribute; allowed: %s", e.key, strings.Join(allowed, ", "))
			continue
		}
		if r.Kind.Extreme() && e.key == "split" {
			d.problem(e.keyPos, ctx, "%s has no split: it keeps no state to spread over parts (a raise is one conditional write of the target, a recompute one query); allowed: %s", k, strings.Join(allowed, ", "))
			continue
		}
		if r.Kind.Extreme() && slices.Contains(sumFields, e.key) && !slices.Contains(allowed, e.key) {
			d.problem(e.keyPos, ctx, "%s has no %s: its writes are idempotent (it needs no exactly-once mode), a missing target is filled when it is inserted (a time bucket item is created by its first source), and a source removed by TTL leaves it like a deleted one; allowed: %s", k, e.key, strings.Join(allowed, ", "))
			continue
		}
		switch e.key {
		case "n", "entryBytes":
			if r.Kind != KindTop {
				d.unknownField(e, ctx, k, allowed)
				continue
			}
			v, ok := d.positiveInt(e.valNode, ctx, k+"."+e.key)
			if !ok {
				continue
			}
			if e.key == "n" {
				a.N = v
			} else {
				a.EntryBytes = v
			}
		case "by", "set":
			if r.Kind != KindLatest && r.Kind != KindTop {
				d.unknownField(e, ctx, k, allowed)
				continue
			}
			if e.key == "by" {
				a.By, _ = d.str(e.valNode, ctx, k+".by")
				continue
			}
			a.Set = map[string]string{}
			for _, se := range d.entries(e.valNode, ctx, k+".set") {
				r.Fields[k+".set."+se.key] = se.keyPos
				if s, ok := d.str(se.valNode, ctx, k+".set."+se.key); ok {
					a.Set[se.key] = s
					a.SetOrder = append(a.SetOrder, se.key)
				}
			}
		case "of":
			a.Of, _ = d.str(e.valNode, ctx, k+".of")
		case "into":
			a.Into, _ = d.str(e.valNode, ctx, k+".into")
		case "attribute":
			a.Attribute, _ = d.str(e.valNode, ctx, k+".attribute")
		case "value":
			if r.Kind == KindCount {
				d.problem(e.keyPos, ctx, "count has no value: it adds 1 per item; use sum to add up an attribute, or distinct to count its different values")
				continue
			}
			a.Value, _ = d.str(e.valNode, ctx, k+".value")
		case "ttl":
			if r.Kind == KindDistinct {
				d.problem(e.keyPos, ctx, "distinct has no ttl: it cannot count into a time bucket yet; count into an entity without a bucket in its keys; allowed: %s", strings.Join(allowed, ", "))
				delete(r.Fields, k+".ttl") // reported here, not again as a bad duration
				continue
			}
			// Read as written: "ttl: 90" (a number without a unit) is reported by Validate.
			a.TTL, _ = d.str(e.valNode, ctx, k+".ttl")
		case "onExpiry":
			a.OnExpiry, _ = d.str(e.valNode, ctx, k+".onExpiry")
		case "missingTarget":
			a.MissingTarget, _ = d.str(e.valNode, ctx, k+".missingTarget")
		case "exactlyOnce":
			a.ExactlyOnce, _ = d.str(e.valNode, ctx, k+".exactlyOnce")
		case "split":
			a.Split, _ = d.positiveInt(e.valNode, ctx, k+".split")
		case "where":
			for _, we := range d.entries(e.valNode, ctx, k+".where") {
				r.Fields[k+".where."+we.key] = we.keyPos
				switch we.key {
				case "any":
					a.WhereAny, _ = d.whereAny(r, we.valNode, ctx, k+".where.any")
					continue
				case "all":
					d.problem(we.keyPos, ctx, "%s.where has no all: its attributes must all pass already; write their tests side by side (several per attribute: {gte: 100, lt: 1000}), or use any: [...] for alternatives", k)
					continue
				}
				if ts, ok := d.whereTests(r, we.valNode, ctx, k+".where."+we.key); ok {
					a.Where[we.key] = ts
					a.WhereOrder = append(a.WhereOrder, we.key)
				}
			}
		default:
			d.unknownField(e, ctx, k, allowed)
		}
	}
	return a
}
