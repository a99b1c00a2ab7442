package rulesdiff

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/denorm/denorm/internal/rules"
)

// field is one setting of a rule as it behaves: defaults filled in, the copy's way to its
// targets resolved, maps and sets in a fixed order. Two rules with the same fields do the
// same thing, whatever the files look like.
type field struct{ name, val string }

func fields(r *rules.CompiledRule) []field {
	switch r.Kind {
	case rules.KindCopy:
		c := r.Copy
		return []field{{"from", c.From}, {"to", c.To}, {"via", r.Via}, {"set", mapping(c.Set)},
			{"onSourceDelete", orDefault(c.OnSourceDelete, rules.OnDeleteKeep)}}
	case rules.KindMirror:
		m := r.Mirror
		return []field{{"from", m.From}, {"to", m.To}, {"attributes", list(m.Attributes)}}
	case rules.KindCount, rules.KindSum:
		a := r.Agg
		fs := []field{{"of", a.Of}, {"into", a.Into}, {"attribute", a.Attribute}}
		if r.Kind == rules.KindSum {
			fs = append(fs, field{"value", a.Value})
		}
		return append(fs, field{"where", whereOf(a)},
			field{"onExpiry", orDefault(a.OnExpiry, rules.OnExpiryRemove)},
			field{"missingTarget", orDefault(a.MissingTarget, rules.MissingSkip)},
			field{"exactlyOnce", exactlyOnce(r)},
			field{"split", fmt.Sprint(max(1, a.Split))},
			field{"ttl", ttl(r)})
	case rules.KindDistinct:
		a := r.Agg
		return []field{{"of", a.Of}, {"into", a.Into}, {"attribute", a.Attribute}, {"value", a.Value},
			{"where", whereOf(a)},
			{"onExpiry", orDefault(a.OnExpiry, rules.OnExpiryRemove)},
			{"missingTarget", orDefault(a.MissingTarget, rules.MissingSkip)},
			{"exactlyOnce", exactlyOnce(r)}}
	case rules.KindMax, rules.KindMin:
		a := r.Agg
		return []field{{"of", a.Of}, {"into", a.Into}, {"attribute", a.Attribute}, {"value", a.Value},
			{"where", whereOf(a)}, {"query", r.Extreme.Way()}, {"ttl", ttl(r)}}
	case rules.KindLatest:
		a := r.Agg
		return []field{{"of", a.Of}, {"into", a.Into}, {"by", a.By}, {"set", mapping(a.Set)},
			{"where", whereOf(a)}, {"query", r.Extreme.Way()}, {"ttl", ttl(r)}}
	case rules.KindTop:
		a := r.Agg
		return []field{{"of", a.Of}, {"into", a.Into}, {"by", a.By}, {"n", fmt.Sprint(a.N)}, {"attribute", a.Attribute},
			{"set", mapping(a.Set)}, {"entryBytes", fmt.Sprint(r.EntryBytes)}, {"where", whereOf(a)}, {"query", r.Extreme.Way()}, {"ttl", ttl(r)}}
	default:
		panic(fmt.Sprintf("rulesdiff: rule %q has unknown kind %q", r.Name, r.Kind))
	}
}

// exactlyOnce names how a count or sum rule's deltas are made exactly once, as compiled:
// "watermark" within a partition, "relay" or "transaction" across partitions.
func exactlyOnce(r *rules.CompiledRule) string {
	switch {
	case r.Relay:
		return rules.ExactlyOnceRelay
	case r.Watermark:
		return "watermark"
	}
	return rules.ExactlyOnceTransaction
}

// ttl shows a rule's ttl so that 24h and 1d are the same: in days when whole, else hours.
func ttl(r *rules.CompiledRule) string {
	switch {
	case r.TTL <= 0:
		return "none"
	case r.TTL%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", r.TTL/(24*time.Hour))
	}
	return fmt.Sprintf("%dh", r.TTL/time.Hour)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func mapping(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + m[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func list(s []string) string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return "[" + strings.Join(s, ", ") + "]"
}

// where shows a where clause with each value's type: "1" and 1 are different conditions.
// whereOf renders a's where for comparison: its attributes' tests and, with an any, its
// alternatives in a canonical order (the same alternatives written in another order
// compare equal).
func whereOf(a *rules.Aggregate) string {
	w := where(a.Where)
	if len(a.WhereAny) == 0 {
		return w
	}
	alts := make([]string, len(a.WhereAny))
	for i, alt := range a.WhereAny {
		alts[i] = where(alt.Tests)
	}
	slices.Sort(alts)
	return w + " any: [" + strings.Join(alts, ", ") + "]"
}

func where(m map[string][]rules.Test) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + rules.WhereString(canonical(m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// canonical orders an attribute's tests, and the values of in and notIn, so that the same
// tests written in another order compare equal.
func canonical(ts []rules.Test) []rules.Test {
	out := make([]rules.Test, len(ts))
	for i, t := range ts {
		t.Values = slices.Clone(t.Values)
		slices.SortFunc(t.Values, func(a, b rules.Operand) int { return strings.Compare(a.String(), b.String()) })
		out[i] = t
	}
	slices.SortFunc(out, func(a, b rules.Test) int { return strings.Compare(string(a.Op), string(b.Op)) })
	return out
}

func sameFields(a, b []field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func byName(s *rules.Set) map[string]*rules.CompiledRule {
	m := map[string]*rules.CompiledRule{}
	for _, r := range s.Compiled() {
		m[r.Name] = r
	}
	return m
}

// compareRules lists every rule of newSet in file order, then the rules of oldSet that are
// gone, each with what it needs.
func compareRules(oldSet, newSet *rules.Set, ents []Entity, tbl []Table) []Rule {
	olds, news := byName(oldSet), byName(newSet)
	// A removed rule and an added one with the same definition are a rename.
	renamedFrom := map[string]string{}
	taken := map[string]bool{}
	for _, n := range newSet.Compiled() {
		if olds[n.Name] != nil {
			continue
		}
		for _, o := range oldSet.Compiled() {
			if news[o.Name] == nil && !taken[o.Name] && o.Kind == n.Kind && sameFields(fields(o), fields(n)) {
				renamedFrom[n.Name], taken[o.Name] = o.Name, true
				break
			}
		}
	}
	matching := map[string]bool{}
	for _, e := range ents {
		if e.Matching {
			matching[e.Name] = true
		}
	}
	changedIndex := map[string]bool{}
	for _, t := range tbl {
		if t.index != "" {
			changedIndex[t.index] = true
		}
	}
	var out []Rule
	for _, n := range newSet.Compiled() {
		rc := Rule{Name: n.Name, Kind: n.Kind}
		o := olds[n.Name]
		switch {
		case o == nil && renamedFrom[n.Name] != "":
			rc.Status, rc.OldName = Renamed, renamedFrom[n.Name]
			rc.Why = "same definition as " + rc.OldName + ": its targets are right already"
			rc.Cleanup = cleanup(olds[rc.OldName], newSet)
		case o == nil:
			rc.Status, rc.Backfill = Added, true
			rc.Why = "new rule: the targets of the items that exist were never computed"
		case o.Kind != n.Kind:
			rc.Status, rc.Backfill = Changed, true
			rc.Fields = []string{fmt.Sprintf("kind: %s -> %s", o.Kind, n.Kind)}
			rc.Why = "another kind of rule under the same name"
			rc.Cleanup = cleanup(o, newSet)
		default:
			rc.Fields, rc.Backfill, rc.Why = changes(o, n)
			if len(rc.Fields) > 0 {
				rc.Status = Changed
			} else {
				rc.Status = Unchanged
			}
			rc.Cleanup = cleanup(o, newSet)
		}
		if !rc.Backfill && rc.Status != Added {
			// A rule that did not change still reads or writes items recognised
			// differently now, or finds its targets on an index that changed.
			var why []string
			for _, e := range []string{n.Source.Name, n.Target.Name} {
				if matching[e] {
					why = appendUniq(why, "entity "+e+" recognises items differently")
				}
			}
			if n.Kind == rules.KindCopy && changedIndex[n.Via] {
				why = append(why, "its targets are found on index "+n.Via+", which changed")
			}
			if len(why) > 0 {
				if rc.Status == Unchanged || rc.Status == Renamed {
					rc.Status = Changed
				}
				rc.Backfill, rc.Why = true, strings.Join(why, "; ")
			}
		}
		if rc.Cleanup.Empty() {
			rc.Cleanup = nil
		}
		out = append(out, rc)
	}
	for _, o := range oldSet.Compiled() {
		if news[o.Name] != nil || taken[o.Name] {
			continue
		}
		rc := Rule{Name: o.Name, Kind: o.Kind, Status: Removed, Cleanup: cleanup(o, newSet)}
		if rc.Cleanup.Empty() {
			rc.Cleanup = nil
			rc.Why = "nothing left to clean up: the new rules write everything it wrote"
		}
		if o.Kind == rules.KindMirror {
			rc.Why = "the mirror items stay: they are items, not attributes; delete them if nothing reads them"
		}
		out = append(out, rc)
	}
	return out
}

func appendUniq(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// changes compares two rules of one kind: the fields that differ, whether the targets need
// a backfill, and why (or why not).
func changes(o, n *rules.CompiledRule) ([]string, bool, string) {
	of, nf := fields(o), fields(n)
	var diffs []string
	var backfill, quiet []string
	for i := range nf {
		if of[i] == nf[i] {
			continue
		}
		name := nf[i].name
		diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", name, of[i].val, nf[i].val))
		switch name {
		case "set":
			added, removed := setChanges(o.Copy.Set, n.Copy.Set)
			backfill, quiet = noteAttrs("copies", added, removed, backfill, quiet)
		case "attributes":
			added, removed := listChanges(o.Mirror.Attributes, n.Mirror.Attributes)
			backfill, quiet = noteAttrs("mirrors", added, removed, backfill, quiet)
		case "onSourceDelete":
			if nf[i].val == rules.OnDeleteKeep {
				quiet = append(quiet, "onSourceDelete keep leaves the targets of deleted sources as they are")
			} else {
				backfill = append(backfill, "onSourceDelete "+nf[i].val+" applies to the targets of sources deleted before the deploy")
			}
		case "onExpiry":
			if nf[i].val == rules.OnExpiryIgnore {
				quiet = append(quiet, "onExpiry ignore only keeps future expiries counted")
			} else {
				backfill = append(backfill, "onExpiry remove: the counters still count items that expired")
			}
		case "ttl":
			quiet = append(quiet, "ttl "+nf[i].val+" is written to bucket items created from now on (and to those without a TTL by their next delta); items keep the TTL they have, and buckets older than the ttl are no longer updated")
		case "exactlyOnce":
			quiet = append(quiet, "exactlyOnce "+of[i].val+" -> "+nf[i].val+" changes how deltas are guarded, not what they are; a batch that fails before the deploy and is retried after it can count its records again under the new guard: run denorm verify --only "+n.Name+" once the stream has drained")
		case "split":
			was, now := max(1, o.Agg.Split), max(1, n.Agg.Split)
			if now > was {
				quiet = append(quiet, fmt.Sprintf("split %d -> %d spreads new deltas over more parts; what the parts hold stays counted", was, now))
			} else {
				from := now
				if now == 1 {
					from = 0 // no parts at all: the state item alone is read
				}
				backfill = append(backfill, fmt.Sprintf("split %d -> %d: what parts %d to %d hold (of every count and sum into %s) is no longer read, and the targets' copies stay as they were until a repair: run denorm verify --repair --only with the count and sum rules into %s once the stream has drained", was, now, from, was-1, n.Agg.Into, n.Agg.Into))
			}
		case "missingTarget":
			if nf[i].val == rules.MissingSkip {
				quiet = append(quiet, "missingTarget skip creates no more targets; those created stay")
			} else {
				backfill = append(backfill, "missingTarget create: targets missing now are created by the backfill")
			}
		default:
			backfill = append(backfill, name+" changed: every target is computed differently")
		}
	}
	if len(backfill) > 0 {
		return diffs, true, strings.Join(backfill, "; ")
	}
	return diffs, false, strings.Join(quiet, "; ")
}

// noteAttrs notes the attributes a copy or mirror (verb: "copies", "mirrors") writes now,
// which need a backfill, and those it no longer writes, which need none.
func noteAttrs(verb string, added, removed, backfill, quiet []string) ([]string, []string) {
	if len(added) > 0 {
		backfill = append(backfill, verb+" "+strings.Join(added, ", ")+" now")
	}
	if len(removed) > 0 {
		quiet = append(quiet, "no longer "+verb+" "+strings.Join(removed, ", "))
	}
	return backfill, quiet
}

// setChanges returns the target attributes of a copy that are new or copy another source
// attribute, and those no longer copied.
func setChanges(o, n map[string]string) (added, removed []string) {
	for t, s := range n {
		if o[t] != s {
			added = append(added, t)
		}
	}
	for t := range o {
		if _, ok := n[t]; !ok {
			removed = append(removed, t)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

func listChanges(o, n []string) (added, removed []string) {
	in := func(s []string, v string) bool {
		for _, x := range s {
			if x == v {
				return true
			}
		}
		return false
	}
	for _, a := range n {
		if !in(o, a) {
			added = append(added, a)
		}
	}
	for _, a := range o {
		if !in(n, a) {
			removed = append(removed, a)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

// Digest names what a count or sum rule counts: its fields as diff compares them and its
// source's and target's key templates. Two rules with the same digest give every target
// the same value; a backfill marks the states it sets with it (rules.StateDecidedAttr).
func Digest(r *rules.CompiledRule) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", r.Name, r.Kind)
	for _, f := range fields(r) {
		if f.name == "split" && f.val == "1" {
			continue // as before split existed: the decisions of backfills before it still hold
		}
		fmt.Fprintf(h, "%s=%s\x00", f.name, f.val)
	}
	for _, e := range []*rules.EntityType{r.Source, r.Target} {
		for _, k := range e.Keys {
			fmt.Fprintf(h, "%s:%s\x00", k.Attr, k.T)
		}
	}
	return r.Name + "@" + hex.EncodeToString(h.Sum(nil)[:6])
}
