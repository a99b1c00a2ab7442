package rules

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/table"
)

// Set is a compiled, immutable rule set: entities with parsed templates and rules resolved
// to them. It is safe for concurrent use; the planner only reads it.
type Set struct {
	Table    table.Spec
	Entities []*EntityType
	// LocalIndexes is true when the table has local secondary indexes: an item collection
	// then stays in one partition, so the records of one partition key come in order on one
	// shard lineage, which the watermark mode of counters relies on.
	LocalIndexes bool
	bySource     map[*EntityType][]*CompiledRule
	byTarget     map[*EntityType][]*CompiledRule
	compiled     []*CompiledRule
	split        []*CompiledRule // the count and sum rules whose state is split (Split)
}

// EntityType is a compiled entity: its key templates and how it is recognised.
type EntityType struct {
	Name       string
	PK, SK     *keys.Template // primary key templates (SK nil when the table has no sort key)
	Keys       []KeyTemplate  // every key template, primary keys first
	TypeAttr   string
	TypeEquals string
	Attributes []string
	vars       map[string]bool
}

// KeyTemplate is one key attribute's template.
type KeyTemplate struct {
	Attr string
	T    *keys.Template
	// Sparse is true for an index key the entity's items may lack (Entity.Sparse): Match
	// skips it when absent, and the variables only it captures are then unbound.
	Sparse bool
}

// CompiledRule is a rule resolved against entities. The Source is the entity whose changes
// drive the rule (copy/mirror From, count/sum Of); the Target the entity written.
type CompiledRule struct {
	Rule
	Source, Target *EntityType
	// Watched lists the source attributes whose change re-evaluates the rule.
	Watched []string
	// VersionAttr holds, on copy and mirror targets, the stream sequence number of the
	// source version last applied: the guard that stops an older update overwriting a newer.
	VersionAttr string
	// Copy: how targets are found.
	Via        string      // "key", "table" or an index name
	QueryIndex table.Index // for table and index queries
	QueryPK    *keys.Template
	QuerySK    string // the target's literal prefix on the index sort key ("" for none)
	QuerySKAtt string
	// TargetLinks are the target attributes that tie a target to its source (the
	// attributes holding the variables of the source's key): a change re-pulls the copy.
	TargetLinks []string
	// Count/sum: Watermark is true when the target shares the source's partition and the
	// table keeps item collections in one partition (local indexes): deltas are then
	// guarded by a per-target sequence watermark instead of per-event markers.
	Watermark bool
	// Relay is true for a count or sum whose sources are in other partitions than its
	// target, when their deltas reach the target through relay items in its partition
	// (RelayPrefix): the target is then watermarked too, by the relay items' records.
	// False: each event's deltas go in a transaction with its marker.
	Relay bool
	// TTL is Agg.TTL parsed: how long after its time bucket ends a target expires (0 for
	// never). See Expiry.
	TTL time.Duration
	// Extreme, for max, min and latest: the query that reads every source of a target.
	Extreme ExtremeQuery
	// LatestBy and LatestKey, for latest, hold on the target the by value and the key of
	// the source it copies (the order, ties broken by key, that raises compare with).
	LatestBy, LatestKey string
	// ExtremeVersion, for max, min, latest and top, is the target attribute counting
	// Denorm's writes of what the rule keeps there: a write of the target that changes that
	// without raising it is the application's (a form saved back as it was read), and the
	// target is recomputed. A top list's write is conditional on the version it read.
	// EntryBytes is Agg.EntryBytes or its default.
	ExtremeVersion string
	EntryBytes     int
}

// Compile checks f and turns it into a Set. Any Problems come back as the error.
func Compile(f *File) (*Set, error) {
	if ps := Validate(f); len(ps) > 0 {
		return nil, ps
	}
	s := &Set{Table: f.Table, LocalIndexes: len(f.Table.LocalIndexes) > 0,
		bySource: map[*EntityType][]*CompiledRule{}, byTarget: map[*EntityType][]*CompiledRule{}}
	byName := map[string]*EntityType{}
	for _, fe := range f.Entities {
		e, err := compileEntity(f.Table, fe)
		if err != nil {
			return nil, err
		}
		s.Entities = append(s.Entities, e)
		byName[e.Name] = e
	}
	for i := range f.Rules {
		r, err := compileRule(f, &f.Rules[i], byName)
		if err != nil {
			return nil, err
		}
		s.compiled = append(s.compiled, r)
		if r.Agg != nil && r.Agg.Split > 1 {
			s.split = append(s.split, r)
		}
		s.bySource[r.Source] = append(s.bySource[r.Source], r)
		s.byTarget[r.Target] = append(s.byTarget[r.Target], r)
	}
	return s, nil
}

// LoadSet reads, validates and compiles a rules file.
func LoadSet(path string) (*Set, error) {
	f, err := Load(path)
	if err != nil {
		return nil, err
	}
	return Compile(f)
}

// ParseSet parses, validates and compiles rules from memory (path is used in messages).
func ParseSet(path string, data []byte) (*Set, error) {
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	return Compile(f)
}

func compileEntity(spec table.Spec, fe Entity) (*EntityType, error) {
	e := &EntityType{Name: fe.Name, TypeAttr: fe.TypeAttribute, TypeEquals: fe.TypeEquals,
		Attributes: fe.Attributes, vars: map[string]bool{}}
	order := append([]string(nil), keyOrder(&fe)...)
	// Primary keys first: they are the most selective, so a non-matching item fails fast.
	sort.SliceStable(order, func(i, j int) bool { return keyRank(spec, order[i]) < keyRank(spec, order[j]) })
	for _, attr := range order {
		t, err := keys.Parse(fe.Keys[attr])
		if err != nil {
			return nil, fmt.Errorf("entity %s: %w", fe.Name, err)
		}
		e.Keys = append(e.Keys, KeyTemplate{Attr: attr, T: t, Sparse: canBeSparse(spec, attr) && contains(fe.Sparse, attr)})
		for _, v := range t.Vars() {
			e.vars[v] = true
		}
		switch attr {
		case spec.PartitionKey:
			e.PK = t
		case spec.SortKey:
			e.SK = t
		}
	}
	for _, a := range fe.Attributes {
		e.vars[a] = true
	}
	return e, nil
}

func keyRank(spec table.Spec, attr string) int {
	switch attr {
	case spec.PartitionKey:
		return 0
	case spec.SortKey:
		return 1
	}
	return 2
}

// Template returns the entity's template for key attribute attr, or nil.
func (e *EntityType) Template(attr string) *keys.Template {
	for _, k := range e.Keys {
		if k.Attr == attr {
			return k.T
		}
	}
	return nil
}

func compileRule(f *File, fr *Rule, byName map[string]*EntityType) (*CompiledRule, error) {
	r := &CompiledRule{Rule: *fr, VersionAttr: versionAttrPrefix + fr.Name}
	switch fr.Kind {
	case KindCopy:
		c := fr.Copy
		r.Source, r.Target = byName[c.From], byName[c.To]
		for _, t := range c.SetOrder {
			r.Watched = appendUniq(r.Watched, c.Set[t])
		}
		r.Via = c.Via
		if r.Via == "" {
			via, ok := ChooseVia(f, c)
			if !ok {
				return nil, fmt.Errorf("rule %q: no way to find %s targets from %s", fr.Name, c.To, c.From)
			}
			r.Via = via
		}
		if r.Via != "key" {
			idx, _ := f.Table.Index(r.Via)
			r.QueryIndex = idx
			r.QueryPK = r.Target.Template(idx.PartitionKey)
			if idx.SortKey != "" {
				if t := r.Target.Template(idx.SortKey); t != nil {
					r.QuerySK, r.QuerySKAtt = t.Prefix(), idx.SortKey
				}
			}
		}
		// The target attributes that carry the source key's variables.
		need := map[string]bool{}
		for _, t := range []*keys.Template{r.Source.PK, r.Source.SK} {
			if t != nil {
				for _, v := range t.Vars() {
					need[v] = true
				}
			}
		}
		for _, k := range r.Target.Keys {
			for _, v := range k.T.Vars() {
				if need[v] {
					r.TargetLinks = appendUniq(r.TargetLinks, k.Attr)
				}
			}
		}
		for _, a := range r.Target.Attributes {
			if need[a] {
				r.TargetLinks = appendUniq(r.TargetLinks, a)
			}
		}
	case KindMirror:
		m := fr.Mirror
		r.Source, r.Target = byName[m.From], byName[m.To]
		r.Watched = append(r.Watched, m.Attributes...)
	case KindCount, KindSum, KindMax, KindMin, KindLatest, KindTop, KindDistinct:
		a := fr.Agg
		r.Source, r.Target = byName[a.Of], byName[a.Into]
		r.Watched = append(r.Watched, a.WhereAttributes()...)
		if name, isVar := KeyVar(a.Value); isVar {
			// A distinct of a key variable: an index key holding it can change in place.
			for _, k := range r.Source.Keys {
				if k.Attr != f.Table.PartitionKey && k.Attr != f.Table.SortKey && contains(k.T.Vars(), name) {
					r.Watched = appendUniq(r.Watched, k.Attr)
				}
			}
		} else if a.Value != "" {
			r.Watched = appendUniq(r.Watched, a.Value)
		}
		if a.By != "" {
			r.Watched = appendUniq(r.Watched, a.By)
		}
		for _, src := range r.SetAttributes() {
			r.Watched = appendUniq(r.Watched, src)
		}
		// Attributes that fill the target's key variables move an item between targets.
		for _, t := range []*keys.Template{r.Target.PK, r.Target.SK} {
			if t == nil {
				continue
			}
			for _, v := range t.Vars() {
				for _, at := range r.Source.Attributes {
					if at == v {
						r.Watched = appendUniq(r.Watched, at)
					}
				}
				for _, k := range r.Source.Keys {
					if k.Attr != f.Table.PartitionKey && k.Attr != f.Table.SortKey && contains(k.T.Vars(), v) {
						r.Watched = appendUniq(r.Watched, k.Attr)
					}
				}
			}
		}
		if fr.Kind.Extreme() {
			v := newValidator(f)
			q, ok, why := v.extremeQuery(a, v.ents[a.Of], v.ents[a.Into])
			if !ok {
				return nil, fmt.Errorf("rule %q: no query finds the sources of a target: %s", fr.Name, strings.Join(why, "; "))
			}
			r.Extreme = q
			r.ExtremeVersion = topVersionPrefix + fr.Name
			if fr.Kind == KindLatest {
				r.LatestBy, r.LatestKey = latestByAttrPrefix+fr.Name, latestKeyAttrPrefix+fr.Name
			}
			if fr.Kind == KindTop {
				if r.EntryBytes = a.EntryBytes; r.EntryBytes == 0 {
					r.EntryBytes = DefaultEntryBytes
				}
			}
		} else {
			r.Watermark = len(f.Table.LocalIndexes) > 0 && r.Source.PK.String() == r.Target.PK.String()
			if !r.Watermark && a.ExactlyOnce != ExactlyOnceTransaction && a.Split <= 1 && RelayAllowed(f.Table) {
				r.Watermark, r.Relay = true, true
			}
		}
		if a.TTL != "" {
			ttl, err := ParseTTL(a.TTL)
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", fr.Name, err)
			}
			r.TTL = ttl
		}
	default:
		return nil, fmt.Errorf("rule %q: unknown kind %q", fr.Name, fr.Kind)
	}
	if r.Source.TypeAttr != "" {
		r.Watched = appendUniq(r.Watched, r.Source.TypeAttr)
	}
	return r, nil
}

func appendUniq(s []string, v string) []string {
	if contains(s, v) {
		return s
	}
	return append(s, v)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Compiled returns the rules in file order.
func (s *Set) Compiled() []*CompiledRule { return s.compiled }

// RulesFrom returns the rules whose source is e.
func (s *Set) RulesFrom(e *EntityType) []*CompiledRule { return s.bySource[e] }

// RulesInto returns the rules whose target is e.
func (s *Set) RulesInto(e *EntityType) []*CompiledRule { return s.byTarget[e] }

// Rule returns the named rule, or nil.
func (s *Set) Rule(name string) *CompiledRule {
	for _, r := range s.compiled {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Split is how many state parts (StatePartPrefix) the target at pk, sk has besides its
// state item: the largest split of the count and sum rules whose target the key is, 0 for
// none. Every reader of the target's exact values adds them up.
func (s *Set) Split(pk, sk string) int {
	n := 0
	for _, r := range s.split {
		if r.Agg.Split <= n || !r.Target.HasKey(s.Table, pk, sk) {
			continue
		}
		n = r.Agg.Split
	}
	if n <= 1 {
		return 0
	}
	return n
}

// HasKey reports whether pk, sk are the table keys of one of e's items.
func (e *EntityType) HasKey(spec table.Spec, pk, sk string) bool {
	for _, k := range e.Keys {
		v := pk
		switch k.Attr {
		case spec.PartitionKey:
		case spec.SortKey:
			v = sk
		default:
			continue
		}
		if _, ok := k.T.Match(v, nil); !ok {
			return false
		}
	}
	return true
}

// RelayAllowed reports whether counts and sums into another partition can be relayed
// through items in the target's partition: the table has a sort key (room for a relay item
// beside the target) and a local index (which keeps an item collection in one partition,
// so the target's and its relay items' records come on one shard, in order).
func RelayAllowed(spec table.Spec) bool { return spec.SortKey != "" && len(spec.LocalIndexes) > 0 }

// IsReserved reports whether a key value belongs to Denorm's own items.
func IsReserved(pk string) bool { return strings.HasPrefix(pk, ReservedPrefix) }

// Match finds the entity an item belongs to and its variable binding. Items with a reserved
// partition key match nothing. vars is reused scratch space (may be nil).
func (s *Set) Match(item record.Item, vars []string) (*EntityType, Binding) {
	pk, _ := stringAttr(item, s.Table.PartitionKey)
	if pk == "" || IsReserved(pk) {
		return nil, Binding{}
	}
	if sk, _ := stringAttr(item, s.Table.SortKey); s.Table.SortKey != "" && IsReserved(sk) {
		return nil, Binding{} // a relay item in a target's partition
	}
	for _, e := range s.Entities {
		// Entities mostly differ in their partition key's leading literal ("USER#",
		// "POST#"): checking it first spares the others a full match.
		if e.PK != nil && !strings.HasPrefix(pk, e.PK.Prefix()) {
			continue
		}
		if b, ok := e.Match(item, vars[:0]); ok {
			return e, b
		}
	}
	return nil, Binding{}
}

// Match reports whether item is one of e's and returns the variable binding. A sparse key
// the item lacks is skipped; one it has must match its template like any other key.
func (e *EntityType) Match(item record.Item, vars []string) (Binding, bool) {
	if e.TypeAttr != "" {
		if v, ok := stringAttr(item, e.TypeAttr); !ok || v != e.TypeEquals {
			return Binding{}, false
		}
	}
	for _, k := range e.Keys {
		av, present := item[k.Attr]
		if !present && k.Sparse {
			continue
		}
		v, ok := stringValue(av)
		if !ok {
			return Binding{}, false
		}
		if vars, ok = k.T.Match(v, vars); !ok {
			return Binding{}, false
		}
	}
	return Binding{vars: vars, item: item}, true
}
