package plan

import (
	"strconv"
	"strings"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// PartKey is the key of part i of target t's split state (rules.StatePartPrefix).
func PartKey(t Key, i int) Key {
	return Key{PK: rules.StatePartPrefix + strconv.Itoa(i) + "#" + t.PK, SK: t.SK}
}

// PartTarget is the key of the target whose state part is at k, and false when k is not a
// part's key.
func PartTarget(k Key) (Key, bool) {
	t, _, ok := ParsePart(k)
	return t, ok
}

// ParsePart is the target and the number of the state part at k, and false when k is not a
// part's key.
func ParsePart(k Key) (target Key, i int, ok bool) {
	rest, ok := strings.CutPrefix(k.PK, rules.StatePartPrefix)
	if !ok {
		return Key{}, 0, false
	}
	n, pk, ok := strings.Cut(rest, "#")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 {
		return Key{}, 0, false
	}
	return Key{PK: pk, SK: k.SK}, i, true
}

// partCopy is the refresh a record of a state part of target t asks for: the copy of the
// target's state, added up over its parts, whatever the target shows. Its attributes are
// those of every count and sum into t; the rules among them that create missing targets
// are its creators.
func (p *Planner) partCopy(t Key) Refresh {
	f := Refresh{Target: t, Copy: true}
	s := p.set
	for _, r := range s.Compiled() {
		if r.Agg == nil || r.Kind.Extreme() || r.Kind == rules.KindDistinct || !r.Target.HasKey(s.Table, t.PK, t.SK) {
			continue
		}
		f.Attrs = append(f.Attrs, r.Agg.Attribute)
		if r.Agg.MissingTarget == rules.MissingCreate {
			f.Creators = append(f.Creators, r)
		}
	}
	return f
}

// Explain is Plan for `denorm explain`: each delta also says how many state parts its
// target has (Delta.Split), which only Describe needs; the processor's executor asks the
// rules itself where it writes.
func (p *Planner) Explain(c *record.Change) (RecordPlan, error) {
	rp, err := p.Plan(c)
	for i := range rp.Deltas {
		d := &rp.Deltas[i]
		d.Split = p.set.Split(d.Target.PK, d.Target.SK)
	}
	return rp, err
}
