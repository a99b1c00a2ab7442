package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Describe writes a human-readable account of a record's plan: what `denorm explain`
// prints and what the golden tests compare.
func (p *RecordPlan) Describe(w io.Writer) {
	if p.Job != nil {
		fmt.Fprintf(w, "  continue fan-out job %s\n", p.JobKey)
		return
	}
	if p.Entity == "" {
		fmt.Fprintln(w, "  matches no entity: no rule fires")
		return
	}
	if p.Empty() {
		fmt.Fprintf(w, "  entity %s: no watched attribute changed, no rule fires\n", p.Entity)
		return
	}
	fmt.Fprintf(w, "  entity %s, rules fired: %s\n", p.Entity, strings.Join(p.Rules(), ", "))
	for _, d := range p.Deltas {
		mode := "exactly once by event marker, in a transaction"
		if d.Rule.Watermark && d.Target.PK == p.PK {
			mode = "exactly once by the target's sequence watermark, one conditional UpdateItem"
		}
		fmt.Fprintf(w, "  %s: ADD %s %s on %s (%s)\n", d.Rule.Name, d.Rule.Agg.Attribute, signed(d.Amount), d.Target, mode)
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
}

func (k Key) String() string {
	if k.SK == "" {
		return k.PK
	}
	return k.PK + " / " + k.SK
}

func signed(n Number) string {
	s := n.String()
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func setRemove(set []AttrValue, remove []string) string {
	var parts []string
	for _, a := range set {
		parts = append(parts, fmt.Sprintf("%s = %s", a.Name, show(a.Value)))
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
		parts[i] = fmt.Sprintf("%s: %s", k, show(item[k]))
	}
	return strings.Join(parts, ", ")
}

func show(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("%q", x.Value)
	case *types.AttributeValueMemberN:
		return x.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint(x.Value)
	case *types.AttributeValueMemberNULL:
		return "null"
	}
	return "<" + typeName(v) + ">"
}
