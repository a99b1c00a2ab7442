package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/atomicfile"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// checkpointVersion changes when the file's meaning does (2: the states pass).
const checkpointVersion = 2

// state is a run's progress: per round (a level of rules), per pass, per scan segment, where
// the scan stopped and whether it finished, with what the pages so far produced (the
// states pass's versions, the sources pass's partial expectations, the targets pass's seen
// targets and counts). It is what the
// checkpoint file holds, so an interrupted run resumes each unfinished segment at its last
// key and skips finished ones.
type state struct {
	Version  int           `json:"version"`
	Table    string        `json:"table"`
	RulesID  string        `json:"rules"`
	Segments int           `json:"segments"`
	Repair   bool          `json:"repair"`
	Rounds   []*roundState `json:"rounds"`
}

type roundState struct {
	Rules []string `json:"rules"`
	// Passes[passStates] reads the versions of the state items (a repairing round with
	// count or sum rules only), Passes[passSources] reads sources, Passes[passTargets]
	// checks (and repairs) targets.
	Passes [3][]*segState `json:"passes"`
	// Final is the count of the missing-target phase, recorded when the round is done.
	Final map[string]*RuleStats `json:"final,omitempty"`
	Done  bool                  `json:"done"`
	// Written is the version each state item was left at by this round's own writes, so
	// that a page handled again after an interruption does not take them for deltas.
	Written []versionJSON `json:"written,omitempty"`
	mu      sync.Mutex
	written map[plan.Key]uint64 // live form of Written
}

// MarshalJSON encodes rs with the versions its writes left.
func (rs *roundState) MarshalJSON() ([]byte, error) {
	type plain roundState
	rs.mu.Lock()
	rs.Written = rs.Written[:0]
	for k, v := range rs.written {
		rs.Written = append(rs.Written, versionJSON{Key: kj(k), Version: v})
	}
	rs.mu.Unlock()
	return json.Marshal((*plain)(rs))
}

// stateVersions is what a round knows of the versions of its state items: those the
// states pass read, and those its own writes left (counters.go).
type stateVersions struct {
	read map[plan.Key]uint64
	rs   *roundState
}

// ours reports whether version v of target k's state is the one this round's own last
// write of it left.
func (sv stateVersions) ours(k plan.Key, v uint64) bool {
	if sv.rs == nil {
		return false
	}
	sv.rs.mu.Lock()
	defer sv.rs.mu.Unlock()
	w, ok := sv.rs.written[k]
	return ok && w == v
}

// wrote records that this round's write left target k's state at version v.
func (sv stateVersions) wrote(k plan.Key, v uint64) {
	if sv.rs == nil {
		return
	}
	sv.rs.mu.Lock()
	defer sv.rs.mu.Unlock()
	if sv.rs.written == nil {
		sv.rs.written = map[plan.Key]uint64{}
	}
	sv.rs.written[k] = v
}

// segState is one segment of one pass. Its worker updates it under mu after each page.
type segState struct {
	mu       sync.Mutex
	LastKey  itemJSON              `json:"lastKey,omitempty"`
	Done     bool                  `json:"done"`
	Scanned  int64                 `json:"scanned"`
	Stats    map[string]*RuleStats `json:"stats,omitempty"`
	Expect   *expectJSON           `json:"expect,omitempty"`
	Seen     map[string][]keyJSON  `json:"seen,omitempty"`
	Versions []versionJSON         `json:"versions,omitempty"`
	vers     map[plan.Key]uint64   // states pass: each state item's and state part's version, by its own key (live form of Versions)
	exp      *Expected             // sources pass: partial expectations (live form of Expect)
	seen     Seen                  // targets pass: targets met (live form of Seen)
	ev       *Evaluator
	restored bool
}

func (s *segState) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type plain segState
	c := plain{LastKey: s.LastKey, Done: s.Done, Scanned: s.Scanned, Stats: s.Stats}
	if s.exp != nil {
		c.Expect = encodeExpected(s.ev, s.exp)
	}
	if s.seen != nil {
		c.Seen = encodeSeen(s.ev, s.seen)
	}
	for k, v := range s.vers {
		c.Versions = append(c.Versions, versionJSON{Key: kj(k), Version: v})
	}
	return json.Marshal(&c)
}

// versionJSON is a state item's (or state part's) version as the states pass read it, by
// the item's own key (a checkpoint written before: by its target's key; stateTarget reads
// both).
type versionJSON struct {
	Key     keyJSON `json:"k"`
	Version uint64  `json:"v"`
}

// newState is a fresh run over rounds.
func newState(table, rulesID string, segments int, repair bool, ev *Evaluator, rounds [][]int) *state {
	st := &state{Version: checkpointVersion, Table: table, RulesID: rulesID, Segments: segments, Repair: repair}
	for _, round := range rounds {
		rs := &roundState{}
		for _, i := range round {
			rs.Rules = append(rs.Rules, ev.rules[i].r.Name)
		}
		for p := range rs.Passes {
			for s := 0; s < segments; s++ {
				rs.Passes[p] = append(rs.Passes[p], &segState{ev: ev})
			}
		}
		st.Rounds = append(st.Rounds, rs)
	}
	return st
}

// ErrCheckpointMismatch is returned when a checkpoint was written for another table, rules
// file, segment count or mode: resuming it would mix two runs.
var ErrCheckpointMismatch = errors.New("checkpoint belongs to another run")

// loadState reads a checkpoint; a missing file gives (nil, nil).
func loadState(path string, want *state, ev *Evaluator) (*state, error) {
	var st state
	found, err := atomicfile.ReadJSON(path, &st)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint: %w", err)
	}
	if !found {
		return nil, nil
	}
	switch {
	case st.Version != checkpointVersion:
		return nil, fmt.Errorf("%w: %s has version %d, want %d", ErrCheckpointMismatch, path, st.Version, checkpointVersion)
	case st.Table != want.Table || st.RulesID != want.RulesID:
		return nil, fmt.Errorf("%w: %s is for table %s with rules %s, not table %s with rules %s; delete it to start over",
			ErrCheckpointMismatch, path, st.Table, st.RulesID, want.Table, want.RulesID)
	case st.Segments != want.Segments || st.Repair != want.Repair || len(st.Rounds) != len(want.Rounds):
		return nil, fmt.Errorf("%w: %s was written with %d segments (repair %t, %d rounds), this run has %d (repair %t, %d rounds)",
			ErrCheckpointMismatch, path, st.Segments, st.Repair, len(st.Rounds), want.Segments, want.Repair, len(want.Rounds))
	}
	for r, rs := range st.Rounds {
		if rs.Written != nil {
			rs.written = map[plan.Key]uint64{}
			for _, v := range rs.Written {
				rs.written[v.Key.key()] = v.Version
			}
			rs.Written = nil
		}
		for p := range rs.Passes {
			if len(rs.Passes[p]) != st.Segments {
				return nil, fmt.Errorf("%w: %s round %d pass %d has %d segments", ErrCheckpointMismatch, path, r+1, p+1, len(rs.Passes[p]))
			}
			for _, s := range rs.Passes[p] {
				s.ev, s.restored = ev, true
				if s.Expect != nil {
					if s.exp, err = decodeExpected(ev, s.Expect); err != nil {
						return nil, fmt.Errorf("reading checkpoint %s: %w", path, err)
					}
					s.Expect = nil
				}
				if s.Seen != nil {
					if s.seen, err = decodeSeen(ev, s.Seen); err != nil {
						return nil, fmt.Errorf("reading checkpoint %s: %w", path, err)
					}
					s.Seen = nil
				}
				if s.Versions != nil {
					s.vers = map[plan.Key]uint64{}
					for _, v := range s.Versions {
						s.vers[v.Key.key()] = v.Version
					}
					s.Versions = nil
				}
			}
		}
	}
	return &st, nil
}

// save writes st to path atomically: a temporary file in the same directory, synced, then
// renamed over the old one, so a crash leaves the old or the new checkpoint, never half.
func (st *state) save(path string) error {
	if err := atomicfile.WriteJSON(path, st); err != nil {
		return fmt.Errorf("writing checkpoint %s: %w", path, err)
	}
	return nil
}

type keyJSON [2]string

type copyJSON struct {
	Key    keyJSON  `json:"k"`
	Values itemJSON `json:"v"`
}

type mirrorJSON struct {
	Key    keyJSON  `json:"k"`
	Source keyJSON  `json:"s"`
	Item   itemJSON `json:"i"`
}

type totalJSON struct {
	Key   keyJSON `json:"k"`
	Total string  `json:"n"`
}

// expectJSON is Expected keyed by rule name.
type expectJSON struct {
	Copies  map[string][]copyJSON   `json:"copies,omitempty"`
	Mirrors map[string][]mirrorJSON `json:"mirrors,omitempty"`
	Totals  map[string][]totalJSON  `json:"totals,omitempty"`
	// Extremes hold each max or min as {"v": value}.
	Extremes map[string][]copyJSON `json:"extremes,omitempty"`
	// Latest hold each latest source as {"by": value, "key": key, "set": {attr: value}}.
	Latest map[string][]copyJSON `json:"latest,omitempty"`
	// Tops hold each top list as {"l": the list as stored}.
	Tops map[string][]copyJSON `json:"tops,omitempty"`
}

func kj(k plan.Key) keyJSON     { return keyJSON{k.PK, k.SK} }
func (k keyJSON) key() plan.Key { return plan.Key{PK: k[0], SK: k[1]} }

func encodeExpected(ev *Evaluator, e *Expected) *expectJSON {
	out := &expectJSON{Copies: map[string][]copyJSON{}, Mirrors: map[string][]mirrorJSON{}, Totals: map[string][]totalJSON{}, Extremes: map[string][]copyJSON{}, Latest: map[string][]copyJSON{},
		Tops: map[string][]copyJSON{}}
	for i, rs := range ev.rules {
		name := rs.r.Name
		for k, v := range e.Copies[i] {
			out.Copies[name] = append(out.Copies[name], copyJSON{Key: kj(k), Values: itemJSON(v)})
		}
		for k, m := range e.Mirrors[i] {
			out.Mirrors[name] = append(out.Mirrors[name], mirrorJSON{Key: kj(k), Source: kj(m.Source), Item: itemJSON(m.Item)})
		}
		for k, n := range e.Totals[i] {
			out.Totals[name] = append(out.Totals[name], totalJSON{Key: kj(k), Total: n.String()})
		}
		for k, v := range e.Extremes[i] {
			out.Extremes[name] = append(out.Extremes[name], copyJSON{Key: kj(k), Values: itemJSON(record.Item{"v": v})})
		}
		for k, w := range e.Latest[i] {
			set := record.Item{}
			for _, a := range w.Set {
				set[a.Name] = a.Value
			}
			out.Latest[name] = append(out.Latest[name], copyJSON{Key: kj(k), Values: itemJSON(record.Item{
				"by": w.By, "key": &types.AttributeValueMemberS{Value: w.Key}, "set": &types.AttributeValueMemberM{Value: set}})})
		}
		for k, es := range e.Tops[i] {
			out.Tops[name] = append(out.Tops[name], copyJSON{Key: kj(k), Values: itemJSON(record.Item{"l": value.TopList(es)})})
		}
	}
	return out
}

func (ev *Evaluator) index(name string) (int, error) {
	for i, rs := range ev.rules {
		if rs.r.Name == name {
			return i, nil
		}
	}
	return -1, fmt.Errorf("unknown rule %q", name)
}

func decodeExpected(ev *Evaluator, j *expectJSON) (*Expected, error) {
	e := ev.NewExpected()
	for name, list := range j.Copies {
		i, err := ev.index(name)
		if err != nil || e.Copies[i] == nil {
			return nil, fmt.Errorf("copies of %q: not a copy rule", name)
		}
		for _, c := range list {
			v := record.Item(c.Values)
			if v == nil {
				v = record.Item{}
			}
			e.Copies[i][c.Key.key()] = v
		}
	}
	for name, list := range j.Mirrors {
		i, err := ev.index(name)
		if err != nil || e.Mirrors[i] == nil {
			return nil, fmt.Errorf("mirrors of %q: not a mirror rule", name)
		}
		for _, m := range list {
			e.Mirrors[i][m.Key.key()] = MirrorWant{Source: m.Source.key(), Item: record.Item(m.Item)}
		}
	}
	for name, list := range j.Totals {
		i, err := ev.index(name)
		if err != nil || e.Totals[i] == nil {
			return nil, fmt.Errorf("totals of %q: not a count or sum rule", name)
		}
		for _, t := range list {
			n, err := value.ParseNumber(t.Total)
			if err != nil {
				return nil, fmt.Errorf("total of %q: %w", name, err)
			}
			addTotal(e.Totals[i], t.Key.key(), n)
		}
	}
	for name, list := range j.Extremes {
		i, err := ev.index(name)
		if err != nil || e.Extremes[i] == nil {
			return nil, fmt.Errorf("extremes of %q: not a max or min rule", name)
		}
		for _, x := range list {
			if v := record.Item(x.Values)["v"]; v != nil {
				keepBetter(e.Extremes[i], e.kinds[i], x.Key.key(), v)
			}
		}
	}
	for name, list := range j.Latest {
		i, err := ev.index(name)
		if err != nil || e.Latest[i] == nil {
			return nil, fmt.Errorf("latest of %q: not a latest rule", name)
		}
		r := ev.rules[i].r
		for _, x := range list {
			v := record.Item(x.Values)
			w := LatestWant{By: v["by"]}
			if k, ok := v["key"].(*types.AttributeValueMemberS); ok {
				w.Key = k.Value
			}
			set, _ := v["set"].(*types.AttributeValueMemberM)
			if set == nil {
				set = &types.AttributeValueMemberM{}
			}
			w.Set, w.Remove = plan.LatestValues(r, latestSource(r, set.Value))
			if w.By != nil {
				keepLatest(e.Latest[i], x.Key.key(), w)
			}
		}
	}
	for name, list := range j.Tops {
		i, err := ev.index(name)
		if err != nil || e.Tops[i] == nil {
			return nil, fmt.Errorf("tops of %q: not a top rule", name)
		}
		for _, x := range list {
			es, ok := value.DecodeTop(ev.rules[i].r, record.Item(x.Values)["l"])
			if !ok {
				return nil, fmt.Errorf("top list of %q at %v: not a list the rule writes", name, x.Key)
			}
			for _, en := range es {
				e.Tops[i][x.Key.key()] = value.TopKeep(e.Tops[i][x.Key.key()], en, e.ns[i])
			}
		}
	}
	return e, nil
}

// latestSource turns the target attributes a latest rule copies back into the source
// attributes they come from, for plan.LatestValues.
func latestSource(r *rules.CompiledRule, set record.Item) record.Item {
	src := record.Item{}
	for t, v := range set {
		src[r.Agg.Set[t]] = v
	}
	return src
}

func encodeSeen(ev *Evaluator, s Seen) map[string][]keyJSON {
	out := map[string][]keyJSON{}
	for i, m := range s {
		for k := range m {
			out[ev.rules[i].r.Name] = append(out[ev.rules[i].r.Name], kj(k))
		}
	}
	return out
}

func decodeSeen(ev *Evaluator, j map[string][]keyJSON) (Seen, error) {
	s := ev.NewSeen()
	for name, keys := range j {
		i, err := ev.index(name)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			s[i][k.key()] = true
		}
	}
	return s, nil
}
