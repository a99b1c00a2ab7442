package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// Describe writes a human-readable account of a record's plan: what `denorm explain`
// prints and what the golden tests compare.
func (p *RecordPlan) Describe(w io.Writer) {
	if p.Job != nil {
		fmt.Fprintf(w, "  continue fan-out job %s\n", p.JobKey)
		return
	}
	if p.Probe != nil {
		fmt.Fprintf(w, "  probe %s: answered with the names of the rules, once the records before it are applied\n", *p.Probe)
		return
	}
	if strings.HasPrefix(p.PK, rules.ProbePrefix) {
		fmt.Fprintln(w, "  probe: answered already, or deleted: nothing to apply")
		return
	}
	if p.NoImage {
		fmt.Fprintln(w, "  no image (a REMOVE without OldImage: the item was already gone): nothing to apply, counted as RecordsWithoutImage")
		return
	}
	if t, ok := PartTarget(Key{PK: p.PK, SK: p.SK}); ok {
		if len(p.Refreshes) == 0 {
			fmt.Fprintf(w, "  a part of the split state of %s was removed (its bucket expired): the copy does not change\n", t)
			return
		}
	} else if strings.HasPrefix(p.PK, rules.RelayPrefix) && strings.HasPrefix(p.SK, rules.DistinctRefPrefix) {
		if len(p.Deltas) == 0 {
			fmt.Fprintln(w, "  distinct reference item: the number of sources holding its value stayed above zero, or at zero: the distinct count does not move")
			return
		}
		fmt.Fprintln(w, "  distinct reference item: the number of sources holding its value went from 0 to some (+1) or from some to 0 (-1)")
	} else if strings.HasPrefix(p.PK, rules.RelayPrefix) {
		if len(p.Deltas) == 0 {
			fmt.Fprintln(w, "  relay item: no relay write moved its sequence number (an expiry, or a write by someone else): nothing to apply")
			return
		}
		fmt.Fprintln(w, "  relay item: carries a source's deltas to its target's state")
	} else if p.Entity == "" && len(p.Refreshes) == 0 {
		fmt.Fprintln(w, "  matches no entity: no rule fires")
		return
	}
	if p.Unlinked > 0 {
		fmt.Fprintf(w, "  %d rule effect(s) left out: the item lacks a variable of the target's key, so it links to no target (counted as UnlinkedEffects)\n", p.Unlinked)
	}
	if p.Empty() {
		fmt.Fprintf(w, "  entity %s: no watched attribute changed, no rule fires\n", p.Entity)
		return
	}
	if p.Entity == "" {
		// a relay item's record: its deltas follow
	} else if names := p.Rules(); len(names) > 0 {
		fmt.Fprintf(w, "  entity %s, rules fired: %s\n", p.Entity, strings.Join(names, ", "))
	} else {
		fmt.Fprintf(w, "  entity %s\n", p.Entity)
	}
	for _, c := range p.Crossings {
		if c.Entered {
			fmt.Fprintf(w, "  %s: enters the where (the old image failed it: %s)\n", c.Rule.Name, c.Failing)
		} else {
			fmt.Fprintf(w, "  %s: leaves the where: %s\n", c.Rule.Name, c.Failing)
		}
	}
	for _, d := range p.Deltas {
		mode := "exactly once by event marker: the marker and an ADD to the target's state item in one transaction; then the copy"
		switch watermarkOf(d, p.PK) {
		case rules.WatermarkAttr:
			mode = "exactly once by the state item's sequence watermark, one conditional UpdateItem; then the copy"
		case rules.RelayWatermarkAttr:
			mode = "exactly once by the state item's relay watermark, one conditional UpdateItem; then the copy"
		default:
			if n := d.Split; n > 1 {
				mode = fmt.Sprintf("exactly once by event marker: the marker and an ADD to one of the target's %d state parts in one transaction; the part's record copies their sum", n)
			} else if d.Rule.Relay {
				mode = "relayed: one UpdateItem of this source's relay item, guarded by the source's sequence number; the relay item's record adds it to the target's state under its relay watermark"
			}
		}
		if IsDistinctRef(d.Target) {
			mode = strings.Replace(mode, "the target's state item", "the reference item", 1)
			mode = strings.Replace(mode, "the state item's", "the reference item's", 1)
			mode = strings.Replace(mode, "; then the copy", "; its record moves the distinct count when the number crosses zero", 1)
			fmt.Fprintf(w, "  %s: ADD %s %s on the reference item of value %s, %s (%s)\n", d.Rule.Name, d.Rule.Agg.Attribute, signed(d.Amount), value.Brief(d.Value), d.Target, mode)
			continue
		}
		fmt.Fprintf(w, "  %s: ADD %s %s on %s (%s)\n", d.Rule.Name, d.Rule.Agg.Attribute, signed(d.Amount), d.Target, mode)
	}
	for _, f := range p.Refreshes {
		if f.Copy {
			fmt.Fprintf(w, "  a part of the split state of %s: read the state item and every part (consistent GetItems), and copy their sum onto the target on condition that %s is not above the sum of their versions\n", f.Target, rules.CopyVersionAttr)
			continue
		}
		fmt.Fprintf(w, "  %s is a count, sum or distinct target the application wrote: read its state item (one consistent GetItem; and each part of a split state) and put back the copy if it differs, on condition that %s is not above the state's version\n", f.Target, rules.CopyVersionAttr)
	}
	for _, wr := range p.Writes {
		switch {
		case wr.Delete:
			fmt.Fprintf(w, "  %s: DELETE %s if its version < %s\n", wr.Rule.Name, wr.Target, wr.Version)
		case wr.Item != nil:
			fmt.Fprintf(w, "  %s: write mirror %s {%s} if its version < %s\n", wr.Rule.Name, wr.Target, attrList(wr.Item), wr.Version)
		default:
			fmt.Fprintf(w, "  %s: UPDATE %s %s if its version < %s\n", wr.Rule.Name, wr.Target, setRemove(wr.Set, wr.Remove), wr.Version)
		}
	}
	for _, f := range p.FanOuts {
		where := "table"
		if f.Rule.QueryIndex.Name != "" {
			where = "index " + f.Rule.QueryIndex.Name
		}
		cond := fmt.Sprintf("%s = %q", f.Rule.QueryIndex.PartitionKey, f.PKValue)
		if f.Rule.QuerySK != "" {
			cond += fmt.Sprintf(" and begins_with(%s, %q)", f.Rule.QuerySKAtt, f.Rule.QuerySK)
		}
		action := setRemove(f.Set, f.Remove)
		if f.Delete {
			action = "DELETE"
		}
		fmt.Fprintf(w, "  %s: query %s where %s; on every %s found: %s if its version < %s (paged; large fan-outs continue in a job item)\n",
			f.Rule.Name, where, cond, f.Rule.Target.Name, action, f.Version)
	}
	for _, pl := range p.Pulls {
		fmt.Fprintf(w, "  %s: pull into %s from %s: copy %s if they differ\n", pl.Rule.Name, pl.Target, pl.Source, strings.Join(pl.Rule.Copy.SetOrder, ", "))
	}
	for _, x := range p.Extremes {
		describeExtreme(w, x)
	}
}

// describeExtreme tells what a max or min effect costs: a raise is one conditional write; a
// value that left costs one read, and one query only when it may have been the extreme.
func describeExtreme(w io.Writer, x Extreme) {
	r := x.Rule
	attr := r.Agg.Attribute
	than, cmp := "less", "greater"
	if r.Kind == rules.KindMin {
		than, cmp = "greater", "less"
	}
	switch r.Kind {
	case rules.KindLatest:
		describeLatest(w, x)
		return
	case rules.KindTop:
		describeTop(w, x)
		return
	}
	query := sourcesQuery(x)
	recompute := fmt.Sprintf("recompute the %s of %s over the %ss it finds (%s, every page, projecting only what the rule reads) and write it on condition that %s is still as read (REMOVE when none is left)",
		r.Kind, r.Agg.Value, r.Source.Name, query, attr)
	if x.Raise != nil {
		fmt.Fprintf(w, "  %s: SET %s = %s on %s if it is absent or %s%s (one conditional UpdateItem; idempotent, a refusal is normal)\n",
			r.Name, attr, value.Brief(x.Raise), x.Target, than, creates(r))
	}
	if x.Recheck != nil {
		fmt.Fprintf(w, "  %s: %s left %s: read %s (one consistent GetItem); if it is not %s than %s, it may have been the %s: %s\n",
			r.Name, value.Brief(x.Recheck), x.Target, attr, cmp, value.Brief(x.Recheck), r.Kind, recompute)
	}
	if x.Recompute {
		fmt.Fprintf(w, "  %s: %s was inserted or lost %s (its sources may have come first): %s\n", r.Name, x.Target, attr, recompute)
	}
}

func (k Key) String() string {
	if k.SK == "" {
		return k.PK
	}
	return k.PK + " / " + k.SK
}

func signed(n value.Number) string {
	s := n.String()
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func setRemove(set []AttrValue, remove []string) string {
	var parts []string
	for _, a := range set {
		parts = append(parts, fmt.Sprintf("%s = %s", a.Name, value.Brief(a.Value)))
	}
	if len(parts) > 0 {
		parts[0] = "SET " + parts[0]
	}
	if len(remove) > 0 {
		parts = append(parts, "REMOVE "+strings.Join(remove, ", "))
	}
	return strings.Join(parts, ", ")
}

func attrList(item map[string]types.AttributeValue) string {
	keys := make([]string, 0, len(item))
	for k := range item {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %s", k, value.Brief(item[k]))
	}
	return strings.Join(parts, ", ")
}

// creates says that a raise of r creates its bucket item, with its expiry ("" when r does
// not create its targets).
func creates(r *rules.CompiledRule) string {
	if !r.CreatesBuckets() {
		return ""
	}
	s := ", creating the bucket item if it does not exist"
	if r.TTL > 0 {
		s += fmt.Sprintf(" (with its expiry, %s after its bucket ends)", r.Agg.TTL)
	}
	return s
}

// describeLatest is describeExtreme for latest: the order is (by, source key).
func describeLatest(w io.Writer, x Extreme) {
	r := x.Rule
	query := sourcesQuery(x)
	recompute := fmt.Sprintf("recompute: find the %s greatest by %s, then by key (%s, every page) and copy its %s, on condition that %s and %s are still as read (REMOVE them when none is left)",
		r.Source.Name, r.Agg.By, query, strings.Join(r.Agg.SetOrder, ", "), r.LatestBy, r.LatestKey)
	if x.Raise != nil {
		fmt.Fprintf(w, "  %s: %s on %s, %s = %s, %s = %q, if %s is absent or less, or equal with a key not greater%s (one conditional UpdateItem; idempotent, a refusal is normal)\n",
			r.Name, setRemove(x.Set, x.Remove), x.Target, r.LatestBy, value.Brief(x.Raise), r.LatestKey, x.Key, r.LatestBy, creates(r))
	}
	if x.Recheck != nil {
		fmt.Fprintf(w, "  %s: %s of %q left %s: read %s and %s (one consistent GetItem); if they are not after it, it may have been the latest: %s\n",
			r.Name, value.Brief(x.Recheck), x.RecheckKey, x.Target, r.LatestBy, r.LatestKey, recompute)
	}
	if x.Recompute {
		fmt.Fprintf(w, "  %s: %s was inserted or lost %s or a copied attribute (its sources may have come first): %s\n", r.Name, x.Target, r.LatestBy, recompute)
	}
}

// sourcesQuery shows the query that reads every source of x's target.
func sourcesQuery(x Extreme) string {
	q := x.Rule.Extreme
	query := fmt.Sprintf("query %s where %s = %q", q.Way(), q.Index.PartitionKey, x.QueryPK)
	if q.SKPrefix != "" {
		query += fmt.Sprintf(" and begins_with(%s, %q)", q.SKAttr, q.SKPrefix)
	}
	return query
}

// describeTop is describeExtreme for top: the batch's entries and departures are applied to
// the list read with one GetItem, and written back with one UpdateItem guarded by the
// list's version; a query is needed only when a listed source leaves a full list or falls.
func describeTop(w io.Writer, x Extreme) {
	r := x.Rule
	a := r.Agg
	read := fmt.Sprintf("read %s and %s of %s (one consistent GetItem)", a.Attribute, r.ExtremeVersion, x.Target)
	write := fmt.Sprintf("write the list and %s + 1 on condition that %s is still as read%s (one UpdateItem; none when the list is unchanged)", r.ExtremeVersion, r.ExtremeVersion, creates(r))
	refill := fmt.Sprintf("refill it from %s (every page): the %d greatest %ss by %s, then by key", sourcesQuery(x), a.N, r.Source.Name, a.By)
	if x.Raise != nil {
		fmt.Fprintf(w, "  %s: %s; put the entry {%s} in place of %q's, keeping the %d greatest by %s, then by key; if the list held %d and this listed entry fell, %s; %s\n",
			r.Name, read, strings.TrimPrefix(setRemove(x.Set, nil), "SET "), x.Key, a.N, a.By, a.N, refill, write)
	}
	if x.Recheck != nil {
		fmt.Fprintf(w, "  %s: %q (%s = %s) left %s: %s; drop its entry if listed; if the list held %d with it, %s; %s\n",
			r.Name, x.RecheckKey, a.By, value.Brief(x.Recheck), x.Target, read, a.N, refill, write)
	}
	if x.Recompute {
		fmt.Fprintf(w, "  %s: %s was inserted, or its %s removed or written back by another writer (the version did not advance; its sources may have come first): %s; %s; %s\n",
			r.Name, x.Target, a.Attribute, read, refill, write)
	}
}
