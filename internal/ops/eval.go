package ops

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
)

// Evaluator answers, for any item, what the rules expect of it and of the items it feeds,
// with exactly the stream processor's semantics: it asks the planner what an INSERT of the
// item would do. Each rule is compiled into a set of its own so an item one rule cannot
// evaluate (a key variable missing, a sum value that is not a number) still counts for the
// others; the planner stops at a record's first error.
type Evaluator struct {
	spec   table.Spec
	rules  []ruleSet
	levels [][]int
	// now is the time the records of the scan are given: time buckets whose ttl passed
	// before it are expected to be gone.
	now func() time.Time
	// all is the whole rules file compiled, of which rules are those the run checks.
	all *rules.Set
}

type ruleSet struct {
	set *rules.Set
	r   *rules.CompiledRule
	// query reads a count or sum target's sources from the target (nil: only a scan finds
	// them).
	query *sourceQuery
}

// NewEvaluator compiles f's rules, or only the rule named only when it is not empty.
func NewEvaluator(f *rules.File, only string) (*Evaluator, error) {
	if only == "" {
		return NewEvaluatorFor(f, nil)
	}
	return NewEvaluatorFor(f, []string{only})
}

// handled is every rule kind verify, backfill and repair know. A kind in rules.Kinds that
// is missing here is refused by NewEvaluatorFor (TestOpsHandleEveryKind fails), instead of
// being checked and repaired as some other kind.
var handled = map[rules.Kind]bool{rules.KindCopy: true, rules.KindMirror: true, rules.KindCount: true, rules.KindSum: true,
	rules.KindMax: true, rules.KindMin: true, rules.KindLatest: true, rules.KindTop: true, rules.KindDistinct: true}

// ErrUnhandledKind is returned (wrapped) for a rule of a kind the ops tools do not handle.
var ErrUnhandledKind = errors.New("verify and backfill do not handle rule kind")

// UnknownRulesError names rules asked for that the file does not have.
type UnknownRulesError struct {
	Path    string
	Unknown []string
	Known   []string // every rule of the file, in file order
}

func (e *UnknownRulesError) Error() string {
	q := make([]string, len(e.Unknown))
	for i, n := range e.Unknown {
		q[i] = fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf("no rule %s in %s (rules: %s)", strings.Join(q, ", "), e.Path, strings.Join(e.Known, ", "))
}

// NewEvaluatorFor compiles f's rules, or only those named in only when it is not empty.
// A name f does not have is an *UnknownRulesError.
func NewEvaluatorFor(f *rules.File, only []string) (*Evaluator, error) {
	all, err := rules.Compile(f)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	ev := &Evaluator{spec: f.Table, now: time.Now, all: all}
	var names []string
	for i := range f.Rules {
		names = append(names, f.Rules[i].Name)
		if len(only) > 0 && !want[f.Rules[i].Name] {
			continue
		}
		delete(want, f.Rules[i].Name)
		g := *f
		g.Rules = []rules.Rule{f.Rules[i]}
		set, err := rules.Compile(&g)
		if err != nil {
			return nil, fmt.Errorf("compiling rule %q alone: %w", f.Rules[i].Name, err)
		}
		r := set.Compiled()[0]
		if !handled[r.Kind] {
			return nil, fmt.Errorf("rule %q: %w %q", r.Name, ErrUnhandledKind, r.Kind)
		}
		ev.rules = append(ev.rules, ruleSet{set: set, r: r, query: sourceQueryOf(f.Table, r)})
	}
	if len(want) > 0 {
		e := &UnknownRulesError{Path: f.Path, Known: names}
		for _, n := range only {
			if want[n] {
				e.Unknown = append(e.Unknown, n)
				delete(want, n)
			}
		}
		return nil, e
	}
	ev.levels = levels(ev.rules)
	return ev, nil
}

// hasCounters reports whether any of the rules in which is a count or sum.
func (ev *Evaluator) hasCounters(which []int) bool {
	for _, i := range which {
		if ev.rules[i].r.Kind.Aggregate() {
			return true
		}
	}
	return false
}

// Rules returns the evaluated rules in file order.
func (ev *Evaluator) Rules() []*rules.CompiledRule {
	out := make([]*rules.CompiledRule, len(ev.rules))
	for i, rs := range ev.rules {
		out[i] = rs.r
	}
	return out
}

// Levels groups the rules (indexes into Rules) so that a rule comes after every rule whose
// writes change its sources or create its targets: a mirror creates items that other rules
// count or copy into, a copy writes attributes a count may filter on. Repairing level by
// level, each from a fresh scan, reaches the state the stream processor would.
func (ev *Evaluator) Levels() [][]int { return ev.levels }

// All is every rule in one group (verify without repair needs no order).
func (ev *Evaluator) All() []int {
	out := make([]int, len(ev.rules))
	for i := range out {
		out[i] = i
	}
	return out
}

// feeds reports whether a's writes can change what b reads.
func feeds(a, b *rules.CompiledRule) bool {
	if a == b {
		return false
	}
	creates := a.Kind == rules.KindMirror || (a.Kind == rules.KindCopy && a.Copy.OnSourceDelete == rules.OnDeleteDelete)
	if creates && (b.Source.Name == a.Target.Name || b.Target.Name == a.Target.Name) {
		return true
	}
	if b.Source.Name != a.Target.Name {
		return false
	}
	var written []string
	switch a.Kind {
	case rules.KindCopy:
		written = a.Copy.SetOrder
	case rules.KindCount, rules.KindSum, rules.KindMax, rules.KindMin, rules.KindTop, rules.KindDistinct:
		written = []string{a.Agg.Attribute}
	case rules.KindLatest:
		written = a.Agg.SetOrder
	}
	for _, w := range written {
		for _, x := range b.Watched {
			if w == x {
				return true
			}
		}
	}
	return false
}

// levels is the longest-path layering of the feeds graph. Validation rejects rule cycles;
// the bound on rounds keeps an unexpected one from looping.
func levels(rs []ruleSet) [][]int {
	n := len(rs)
	lv := make([]int, n)
	for round := 0; round < n; round++ {
		changed := false
		for i := range rs {
			for j := range rs {
				if feeds(rs[i].r, rs[j].r) && lv[j] < lv[i]+1 && lv[i]+1 < n {
					lv[j] = lv[i] + 1
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	var out [][]int
	for l := 0; l < n; l++ {
		var group []int
		for i := range rs {
			if lv[i] == l {
				group = append(group, i)
			}
		}
		if len(group) > 0 {
			out = append(out, group)
		}
	}
	return out
}

// itemKey returns an item's primary key.
func itemKey(spec table.Spec, item record.Item) plan.Key {
	var k plan.Key
	if v, ok := item[spec.PartitionKey].(*types.AttributeValueMemberS); ok {
		k.PK = v.Value
	}
	if v, ok := item[spec.SortKey].(*types.AttributeValueMemberS); ok {
		k.SK = v.Value
	}
	return k
}

// Worker holds one goroutine's planners (a planner keeps scratch space).
type Worker struct {
	ev       *Evaluator
	planners []*plan.Planner
}

// NewWorker returns a Worker; use one per goroutine.
func (ev *Evaluator) NewWorker() *Worker {
	w := &Worker{ev: ev, planners: make([]*plan.Planner, len(ev.rules))}
	for i, rs := range ev.rules {
		w.planners[i] = plan.New(rs.set)
	}
	return w
}

// insert plans rule i for an INSERT of item: what the stream processor does for it.
func (w *Worker) insert(i int, item record.Item) (plan.RecordPlan, error) {
	spec := w.ev.spec
	keys := record.Item{spec.PartitionKey: item[spec.PartitionKey]}
	if spec.SortKey != "" {
		keys[spec.SortKey] = item[spec.SortKey]
	}
	c := record.Change{EventID: "scan", Seq: "1", Op: record.Insert, Keys: keys, New: item, Created: w.ev.now()}
	return w.planners[i].Plan(&c)
}

// entity returns the name of the entity item belongs to ("" for none or reserved items).
func (w *Worker) entity(item record.Item) string {
	if len(w.ev.rules) == 0 {
		return ""
	}
	e, _ := w.ev.rules[0].set.Match(item, nil)
	if e == nil {
		return ""
	}
	return e.Name
}

// copyValues returns what copy rule i's targets should hold for source item src (nil: no
// source), and whether src is one.
func (w *Worker) copyValues(i int, src record.Item) (CopyValues, bool, error) {
	if src == nil {
		return nil, false, nil
	}
	rp, err := w.insert(i, src)
	if err != nil {
		return nil, false, err
	}
	for _, wr := range rp.Writes {
		return valuesOf(wr.Set), true, nil
	}
	for _, f := range rp.FanOuts {
		return valuesOf(f.Set), true, nil
	}
	return nil, false, nil
}

func valuesOf(set []plan.AttrValue) CopyValues {
	v := make(CopyValues, len(set))
	for _, a := range set {
		v[a.Name] = a.Value
	}
	return v
}

// copySource returns the key of the source of copy rule i's target, rendered from the
// target's variables as the stream processor's pull does.
func (w *Worker) copySource(i int, target record.Item) (plan.Key, error) {
	rp, err := w.insert(i, target)
	if err != nil {
		return plan.Key{}, err
	}
	for _, p := range rp.Pulls {
		return p.Source, nil
	}
	return plan.Key{}, fmt.Errorf("%s %s is not a target of rule %q", itemKey(w.ev.spec, target).PK, itemKey(w.ev.spec, target).SK, w.ev.rules[i].r.Name)
}

// mirrorOf returns the mirror that rule i keeps for source item src.
func (w *Worker) mirrorOf(i int, src record.Item) (plan.Key, record.Item, bool, error) {
	if src == nil {
		return plan.Key{}, nil, false, nil
	}
	rp, err := w.insert(i, src)
	if err != nil {
		return plan.Key{}, nil, false, err
	}
	for _, wr := range rp.Writes {
		if wr.Item != nil {
			return wr.Target, wr.Item, true, nil
		}
	}
	return plan.Key{}, nil, false, nil
}

// mirrorSource renders, from a mirror target of rule i, the key of the source that would
// have written it. It fails for mirrors whose variables do not determine their source.
func (w *Worker) mirrorSource(i int, target record.Item) (plan.Key, bool) {
	r := w.ev.rules[i].r
	b, ok := r.Target.Match(target, nil)
	if !ok {
		return plan.Key{}, false
	}
	var k plan.Key
	var err error
	if k.PK, err = b.Render(r.Source.PK); err != nil {
		return plan.Key{}, false
	}
	if r.Source.SK != nil {
		if k.SK, err = b.Render(r.Source.SK); err != nil {
			return plan.Key{}, false
		}
	}
	return k, true
}

// sortedAttrs returns m's names in order, for stable output.
func sortedAttrs(m record.Item) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// split is how many parts target k's state is split over, 0 for none: by the whole rules
// file, whichever rules the run checks (a split rule's parts hold every count and sum into
// its target, theirs too).
func (e *Evaluator) split(k plan.Key) int { return e.all.Split(k.PK, k.SK) }
