package apply

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/value"
)

// pull fills a copy target from the current source item. When the source still holds the
// values of the push the fan-out registry names, it writes them as that push would (with
// its version, guarded by it). Otherwise it writes only what differs, and only if nothing
// has changed the target's copied attributes since the record was written (the version and
// the values the record saw are still there). Either way a pull never overwrites a newer
// pushed value nor stamps a version on values it did not write.
func (r *run) pull(p *plan.Pull) error {
	c := p.Rule.Copy
	proj := expression.NamesList(expression.Name(c.Set[c.SetOrder[0]]))
	for _, t := range c.SetOrder[1:] {
		proj = proj.AddNames(expression.Name(c.Set[t]))
	}
	e, err := expression.NewBuilder().WithProjection(proj).Build()
	if err != nil {
		return fmt.Errorf("building pull projection: %w", err)
	}
	if p.Rule.Via != "key" {
		// The registry read does not depend on the source's: both are consistent reads whose
		// results are only compared (registeredVersion), and the source may change between
		// them in either order, so they go out together; registeredVersion gets the
		// registry from the batch's shared read. One round of the pull's critical path less.
		done := make(chan struct{})
		go func() { defer close(done); _, _ = r.readRegistry(p) }()
		defer func() { <-done }() // no read outlives the pull
	}
	src, err := r.readOnce("reading source "+p.Source.PK, p.Source, e.Projection(), e.Names())
	if err != nil {
		return err
	}
	if src == nil {
		return nil // no source (yet): its insert will push
	}
	var set []plan.AttrValue
	var remove []string
	for _, t := range c.SetOrder {
		v, ok := src[c.Set[t]]
		cur, has := p.Current[t]
		switch {
		case ok && !value.Equal(v, cur):
			set = append(set, plan.AttrValue{Name: t, Value: v})
		case !ok && has:
			remove = append(remove, t)
		}
	}
	seen := p.Seen
	if seen == "" {
		seen = "-"
	}
	// For targets found by query, stamp the version of the push whose values these are, so
	// an older job's page cannot overwrite them (registry.go).
	stamp := ""
	if p.Rule.Via != "key" {
		if stamp, err = r.registeredVersion(p, src); err != nil {
			return err
		}
		if stamp != "" && record.CompareSeq(stamp, p.Seen) <= 0 && p.Seen != "" {
			stamp = "" // the target already holds that version or a newer one
		}
	}
	// A target found on an index is pulled only while it still carries the link its record
	// saw: one re-linked to another source meanwhile is left to that source's pull.
	var link []plan.AttrValue
	if idx := p.Rule.QueryIndex; p.Rule.Via != "key" && idx.Name != "" && idx.PartitionKey != r.x.set.Table.PartitionKey {
		link = []plan.AttrValue{{Name: idx.PartitionKey, Value: p.Current[idx.PartitionKey]}}
	}
	if r.readPulls && (stamp != "" || len(set) > 0 || len(remove) > 0) {
		ok, err := r.pullWouldLand(p, stamp, link)
		if err != nil {
			return err
		}
		if !ok {
			r.count(func(s *Stats) { s.Stale++; s.PullsSkipped++ })
			return nil
		}
	}
	if stamp != "" {
		// The source still holds the values of the push registered at version stamp: write
		// them as that push would (every copied attribute, guarded by the version only). Its
		// pages may have passed this target before it existed while an older, superseded job
		// wrote it since; a guard on the version the record saw would then keep the older
		// value for good. A newer push still wins: its version is higher.
		set, remove = set[:0], remove[:0]
		for _, t := range c.SetOrder {
			if v, ok := src[c.Set[t]]; ok {
				set = append(set, plan.AttrValue{Name: t, Value: v})
			} else {
				remove = append(remove, t)
			}
		}
		err = r.update(p.Target, p.Rule.VersionAttr, stamp, set, remove, "", link)
	} else {
		if len(set) == 0 && len(remove) == 0 {
			r.count(func(s *Stats) { s.Unchanged++ })
			return nil
		}
		// The differences were computed against the record's image: they hold only while the
		// item still has the copied values the record saw. A redelivered older record must not
		// overwrite an item the application has replaced since; that change has its own
		// record, which pulls again.
		guards := make([]plan.AttrValue, 0, len(c.SetOrder)+len(link))
		for _, t := range c.SetOrder {
			guards = append(guards, plan.AttrValue{Name: t, Value: p.Current[t]})
		}
		err = r.update(p.Target, p.Rule.VersionAttr, "", set, remove, seen, append(guards, link...))
	}
	if _, ok := retry.CondFailed(err); ok {
		r.count(func(s *Stats) { s.Stale++; s.PullsRefused++ })
		return nil
	}
	if err == nil {
		r.count(func(s *Stats) { s.Pulls++ })
	}
	return err
}

// pullWouldLand reads p's target and reports whether the pull's write would pass its
// condition: the target exists, still carries the link, and holds the version (and, without
// a stamp, the copied values) its record saw, or with a stamp a version below it. The
// write keeps its condition: the read only spares the writes it would refuse.
func (r *run) pullWouldLand(p *plan.Pull, stamp string, link []plan.AttrValue) (bool, error) {
	c := p.Rule.Copy
	ver := p.Rule.VersionAttr
	proj := expression.NamesList(expression.Name(r.x.set.Table.PartitionKey), expression.Name(ver))
	for _, t := range c.SetOrder {
		proj = proj.AddNames(expression.Name(t))
	}
	for _, l := range link {
		proj = proj.AddNames(expression.Name(l.Name))
	}
	e, err := expression.NewBuilder().WithProjection(proj).Build()
	if err != nil {
		return false, fmt.Errorf("building pull target projection: %w", err)
	}
	cur, err := r.readOnce("reading pull target "+p.Target.PK+" "+p.Target.SK, p.Target, e.Projection(), e.Names())
	if err != nil || cur == nil {
		return false, err
	}
	for _, l := range link {
		if !value.Equal(cur[l.Name], l.Value) {
			return false, nil
		}
	}
	have := record.SeqOf(cur[ver])
	if stamp != "" {
		return have == "" || record.CompareSeq(have, stamp) < 0, nil
	}
	if have != p.Seen {
		return false, nil
	}
	for _, t := range c.SetOrder {
		if !value.Equal(cur[t], p.Current[t]) {
			return false, nil
		}
	}
	return true, nil
}
