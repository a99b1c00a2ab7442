package ops

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
)

func TestAVJSONRoundTrip(t *testing.T) {
	item := record.Item{
		"s": S("x"), "n": N("-1.50"), "b": &types.AttributeValueMemberB{Value: []byte{0, 1}},
		"t": &types.AttributeValueMemberBOOL{Value: true}, "null": &types.AttributeValueMemberNULL{Value: true},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"1"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{2}}},
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{S("y"), N("2")}},
		"m":  &types.AttributeValueMemberM{Value: record.Item{"k": S("v"), "e": &types.AttributeValueMemberM{Value: record.Item{}}}},
	}
	b, err := json.Marshal(itemJSON(item))
	if err != nil {
		t.Fatal(err)
	}
	var back itemJSON
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(record.Item(back), item) {
		t.Fatalf("round trip\n got %#v\nwant %#v\njson %s", back, item, b)
	}
	for _, bad := range []string{`{"S":"x","N":"1"}`, `{"X":1}`, `[1]`, `{"N":1}`} {
		var v avJSON
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%s read as %v", bad, v.v)
		}
	}
	var null avJSON
	if err := json.Unmarshal([]byte(`null`), &null); err != nil || null.v != nil {
		t.Errorf("null: %v %v", null.v, err)
	}
}

// fakeClock drives a limiter without sleeping.
type fakeClock struct {
	now   time.Time
	slept time.Duration
}

func (c *fakeClock) limiter(rate float64) *limiter {
	l := newLimiter(rate)
	l.now = func() time.Time { return c.now }
	l.sleep = func(_ context.Context, d time.Duration) error {
		c.slept += d
		c.now = c.now.Add(d)
		return nil
	}
	return l
}

func TestLimiter(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		rate   float64
		writes []float64 // units each write really consumed
		slept  time.Duration
	}{
		{"unlimited", 0, []float64{5, 5, 5}, 0},
		{"within the burst", 10, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
		// 20 one-unit writes at 10/s: the first 10 ride the burst, the next 10 take 1 s.
		{"beyond the burst", 10, repeat(1, 20), time.Second},
		// Heavy writes settle their real cost: the 4th write of 5 units starts once 16 units
		// were taken, 6 beyond the burst: 0.6 s (its own 4 extra units delay the next write).
		{"settles consumed capacity", 10, []float64{5, 5, 5, 5}, 600 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeClock{now: time.Unix(0, 0)}
			l := c.limiter(tc.rate)
			for _, u := range tc.writes {
				if err := l.Wait(ctx, 1); err != nil {
					t.Fatal(err)
				}
				l.Settle(u - 1)
			}
			if diff := c.slept - tc.slept; diff < -time.Millisecond || diff > time.Millisecond {
				t.Fatalf("slept %v, want %v", c.slept, tc.slept)
			}
		})
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	l := newLimiter(1)
	l.Wait(ctx2, 1)
	if err := l.Wait(ctx2, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled wait: %v", err)
	}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestCheckpointRoundTrip: a saved state loads back with its state versions, partial
// expectations and seen targets; a checkpoint of another run is refused.
func TestCheckpointRoundTrip(t *testing.T) {
	ev := socialEval(t)
	exp := socialExpected(t, ev)
	st := newState("T", "rules1", 2, true, ev, ev.Levels())
	vers := map[plan.Key]uint64{{PK: "POST#p1", SK: "METADATA"}: 7, {PK: "USER#u1", SK: "PROFILE"}: 0}
	st.Rounds[0].Passes[passStates][1].vers = vers
	st.Rounds[0].Passes[passStates][1].Done = true
	st.Rounds[0].Passes[passSources][0].exp = exp
	st.Rounds[0].Passes[passSources][0].LastKey = itemJSON{"pk": S("POST#p1"), "sk": S("METADATA")}
	st.Rounds[0].Passes[passSources][1].Done = true
	st.Rounds[0].Passes[passSources][1].Scanned = 42
	seen := ev.NewSeen()
	seen[ruleIndex(t, ev, "user-posts")][plan.Key{PK: "USER#u1", SK: "POST#p1"}] = true
	st.Rounds[0].Passes[passTargets][0].seen = seen
	st.Rounds[0].Passes[passTargets][0].Stats = map[string]*RuleStats{"user-posts": {Checked: 3, Drift: 1, Repaired: 1}}
	path := filepath.Join(t.TempDir(), "cp.json")
	if err := st.save(path); err != nil {
		t.Fatal(err)
	}
	back, err := loadState(path, newState("T", "rules1", 2, true, ev, ev.Levels()), ev)
	if err != nil {
		t.Fatal(err)
	}
	if v := back.Rounds[0].Passes[passStates][1]; !v.Done || !reflect.DeepEqual(v.vers, vers) {
		t.Errorf("states pass: done %v, versions %v, want %v", v.Done, v.vers, vers)
	}
	s0 := back.Rounds[0].Passes[passSources][0]
	if !reflect.DeepEqual(s0.exp, exp) {
		t.Errorf("expectations\n got %+v\nwant %+v", s0.exp, exp)
	}
	if !reflect.DeepEqual(record.Item(s0.LastKey), record.Item{"pk": S("POST#p1"), "sk": S("METADATA")}) {
		t.Errorf("last key %v", s0.LastKey)
	}
	if s1 := back.Rounds[0].Passes[passSources][1]; !s1.Done || s1.Scanned != 42 {
		t.Errorf("segment 1: done %v scanned %d", s1.Done, s1.Scanned)
	}
	if p := back.Rounds[0].Passes[passTargets][0]; !reflect.DeepEqual(p.seen, seen) || p.Stats["user-posts"].Repaired != 1 {
		t.Errorf("pass 2: seen %v stats %+v", p.seen, p.Stats)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	for _, other := range []*state{
		newState("U", "rules1", 2, true, ev, ev.Levels()),
		newState("T", "rules2", 2, true, ev, ev.Levels()),
		newState("T", "rules1", 4, true, ev, ev.Levels()),
		newState("T", "rules1", 2, false, ev, [][]int{ev.All()}),
	} {
		if _, err := loadState(path, other, ev); !errors.Is(err, ErrCheckpointMismatch) {
			t.Errorf("loading for %s/%s/%d/%v: %v, want ErrCheckpointMismatch", other.Table, other.RulesID, other.Segments, other.Repair, err)
		}
	}
	if st, err := loadState(filepath.Join(t.TempDir(), "none.json"), st, ev); st != nil || err != nil {
		t.Errorf("missing checkpoint: %v %v", st, err)
	}
}
