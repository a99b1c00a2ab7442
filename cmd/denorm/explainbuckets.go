package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// explainBuckets prints, for each count or sum into a time bucket that the record's item
// feeds, which bucket each image's timestamp falls in (in UTC), whether the item moves
// between buckets, why it links to none (not a time, or a bucket whose ttl had passed), and
// the TTL a bucket item gets when Denorm creates it. Rules whose bucket the record does not
// touch are left out: nothing to explain.
func explainBuckets(w io.Writer, set *rules.Set, c *record.Change, rp *plan.RecordPlan) {
	type image struct {
		name string
		item record.Item
	}
	var imgs []image
	if c.Old != nil {
		imgs = append(imgs, image{"old", c.Old})
	}
	if c.New != nil {
		imgs = append(imgs, image{"new", c.New})
	}
	fired := map[string]bool{}
	for _, n := range rp.Rules() {
		fired[n] = true
	}
	for _, r := range set.Compiled() {
		bs := r.Target.Buckets()
		if !r.Kind.Aggregate() || len(bs) == 0 {
			continue
		}
		var parts []string
		noBucket, moves := false, false
		prev := ""
		for _, im := range imgs {
			e, b := set.Match(im.item, nil)
			if e != r.Source {
				continue
			}
			var at []string
			for _, bv := range bs {
				v, ok := b.Get(bv.Var)
				switch _, prec, err := keys.ParseTime(v); {
				case !ok:
					at = append(at, fmt.Sprintf("no %s: no %s bucket", bv.Var, bv.Width))
					noBucket = true
				case err != nil:
					at = append(at, fmt.Sprintf("%s %q is not a time: no %s bucket", bv.Var, v, bv.Width))
					noBucket = true
				case prec > bv.Width:
					at = append(at, fmt.Sprintf("%s %q names a %s: no %s bucket", bv.Var, v, prec, bv.Width))
					noBucket = true
				default:
					t, _, _ := keys.ParseTime(v)
					at = append(at, fmt.Sprintf("%s %q is in the UTC %s %s", bv.Var, v, bv.Width, bv.Width.Bucket(t)))
				}
			}
			k, err := renderTarget(b, r.Target)
			switch {
			case err == nil && prev != "" && prev != k.String():
				moves = true
			case err == nil:
				if exp, ok := r.Expiry(k.PK, k.SK); ok && !c.Created.IsZero() && !exp.After(c.Created) {
					at = append(at, fmt.Sprintf("that bucket expired at %s, before this record: left out", exp.Format(time.RFC3339)))
					noBucket = true
				}
			}
			if err == nil {
				prev = k.String()
			}
			parts = append(parts, im.name+" image: "+strings.Join(at, ", "))
		}
		if len(parts) == 0 || (!fired[r.Name] && !noBucket) {
			continue
		}
		line := "  " + r.Name + ": " + strings.Join(parts, "; ")
		if moves {
			line += "; it moves from one bucket to the other"
		}
		if noBucket {
			line += " (links to no bucket there: counted as UnlinkedEffects, not a failure)"
		}
		fmt.Fprintln(w, line)
		shown := map[plan.Key]bool{}
		for _, d := range rp.Deltas {
			if d.Rule != r || shown[d.Target] {
				continue
			}
			shown[d.Target] = true
			if exp, ok := r.Expiry(d.Target.PK, d.Target.SK); ok {
				fmt.Fprintf(w, "  %s: %s, if this creates it, gets %s = %d (%s, %s after its bucket ends)\n",
					r.Name, d.Target, set.Table.TTLAttribute, exp.Unix(), exp.Format(time.RFC3339), r.Agg.TTL)
			}
		}
	}
}

// renderTarget renders an entity's primary key from a binding.
func renderTarget(b rules.Binding, e *rules.EntityType) (plan.Key, error) {
	var k plan.Key
	var err error
	if k.PK, err = b.Render(e.PK); err != nil {
		return k, err
	}
	if e.SK != nil {
		k.SK, err = b.Render(e.SK)
	}
	return k, err
}
