package rulesdiff

import (
	"sort"

	"github.com/denorm/denorm/internal/rules"
)

// Bookkeeping attributes Denorm keeps on count and sum targets: every rule counting into an
// entity shares them (the version of the copy of the target's state item).
var counterBookkeeping = []string{rules.CopyVersionAttr}

// RuleWrites returns the attributes rule r writes on its target entity's items: copied or
// mirrored attributes, the counter or sum, the version attribute of copies and mirrors,
// and the copy version of counts and sums. Keys and the type attribute a mirror
// writes are not listed: they are what makes the item.
func RuleWrites(r *rules.CompiledRule) []string {
	switch r.Kind {
	case rules.KindCopy:
		return append(append([]string(nil), r.Copy.SetOrder...), r.VersionAttr)
	case rules.KindMirror:
		return append(append([]string(nil), r.Mirror.Attributes...), r.VersionAttr)
	case rules.KindCount, rules.KindSum, rules.KindDistinct:
		return append([]string{r.Agg.Attribute}, counterBookkeeping...)
	case rules.KindMax, rules.KindMin:
		return []string{r.Agg.Attribute, r.ExtremeVersion}
	case rules.KindLatest:
		return append(append([]string(nil), r.Agg.SetOrder...), r.LatestBy, r.LatestKey, r.ExtremeVersion)
	case rules.KindTop:
		return []string{r.Agg.Attribute, r.ExtremeVersion}
	default:
		panic("rulesdiff: rule " + r.Name + " has unknown kind " + string(r.Kind))
	}
}

// Written returns every attribute the rules of s write on items of the entity named entity.
func Written(s *rules.Set, entity string) map[string]bool {
	out := map[string]bool{}
	for _, r := range s.Compiled() {
		if r.Target.Name == entity {
			for _, a := range RuleWrites(r) {
				out[a] = true
			}
		}
	}
	return out
}

// cleanup is what old rule o wrote on its target entity that no rule of newSet writes on
// an entity of the same name. A mirror whose rule is gone (or mirrors into another entity)
// keeps its attributes: the mirror items stay whole, only the version goes.
func cleanup(o *rules.CompiledRule, newSet *rules.Set) *Cleanup {
	if o == nil {
		return nil
	}
	kept := Written(newSet, o.Target.Name)
	var same *rules.CompiledRule
	for _, n := range newSet.Compiled() {
		if n.Name == o.Name {
			same = n
		}
	}
	c := &Cleanup{Rule: o.Name, Entity: o.Target.Name}
	writes := RuleWrites(o)
	if o.Kind == rules.KindMirror && (same == nil || same.Kind != rules.KindMirror || same.Target.Name != o.Target.Name) {
		writes = []string{o.VersionAttr}
	}
	for _, a := range writes {
		if !kept[a] {
			c.Attributes = appendUniq(c.Attributes, a)
		}
	}
	sort.Strings(c.Attributes)
	if o.Kind.Aggregate() && !kept[o.Agg.Attribute] {
		c.State = []string{o.Agg.Attribute}
	}
	c.Registry = o.Kind == rules.KindCopy && (same == nil || same.Kind != rules.KindCopy)
	c.Refs = o.Kind == rules.KindDistinct && (same == nil || same.Kind != rules.KindDistinct)
	return c
}
