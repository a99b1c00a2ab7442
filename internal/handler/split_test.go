package handler_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// A count whose state is split over parts (split: 4) under the faults of the other
// exactly-once tests: every batch delivered twice, crashed after k writes and redelivered
// or resumed, bisected. The profiles show the exact sum of the parts, the state items hold
// none of it, and the deltas went to more than one part.
func TestSplitStateUnderFaults(t *testing.T) {
	for _, tc := range faultyDeliveries() {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvRules(t, apply.Options{}, splitRules)
			if r := e.set.Rule("user-post-count"); r.Relay || r.Watermark || r.Agg.Split != 4 {
				t.Fatalf("user-post-count: relay %v, watermark %v, split %d; want markers and 4 parts", r.Relay, r.Watermark, r.Agg.Split)
			}
			e.api.failAfter = -1
			e.workload(7, 4, 5, 200)
			for u := range 4 { // the last change of each count is a post's, copied by its part's record
				e.put(map[string]string{"pk": fmt.Sprintf("POST#x%d", u), "sk": "METADATA", "userId": fmt.Sprintf("u%d", u)})
			}
			e.drain(25, tc.deliver(e))
			e.check()
			e.checkCopiedLast()
			parts := map[string]bool{}
			for _, it := range e.scan() {
				pk := s(it["pk"])
				if _, ok := plan.PartTarget(plan.Key{PK: pk, SK: s(it["sk"])}); ok {
					parts[strings.SplitN(strings.TrimPrefix(pk, rules.StatePartPrefix), "#", 2)[0]] = true
				}
				if strings.HasPrefix(pk, rules.StatePrefix+"USER#") && it["postCount"] != nil {
					t.Errorf("state item %s holds postCount %v: a split rule's deltas go to its parts", pk, it["postCount"])
				}
			}
			if len(parts) < 2 {
				t.Fatalf("deltas went to parts %v, want them spread over several of the 4", parts)
			}
		})
	}
}

// The application puts a split target back as it read it before (a form saved with an old
// count), drops the count, and deletes and re-creates it: each time the copy of the sum of
// the parts is put back, and a copy is never made from fewer parts than there are.
func TestSplitTargetRewrittenByTheApplication(t *testing.T) {
	e := newEnvRules(t, apply.Options{}, splitRules)
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	for _, p := range []string{"p1", "p2", "p3", "p4", "p5", "p6"} {
		e.put(map[string]string{"pk": "POST#" + p, "sk": "METADATA", "userId": "u1"})
		e.drain(10, e.lambdaLike) // a batch each: the posts' deltas land in several parts
	}
	e.check()
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann B", "postCount": "2", rules.CopyVersionAttr: "1"})
	e.drain(10, e.lambdaLike)
	e.check()
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann C"})
	e.drain(10, e.lambdaLike)
	e.check()
	e.del("USER#u1", "PROFILE")
	e.put(map[string]string{"pk": "POST#p7", "sk": "METADATA", "userId": "u1"})
	e.drain(10, e.lambdaLike)
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann D"})
	e.drain(10, e.lambdaLike)
	e.check()
}

// checkCopiedLast fails unless every profile shows the copy of its state's last version:
// the state item's and its parts' added up. A value can be right by chance (a post added
// after one was deleted); the version says that the last change of the parts was copied.
func (e *env) checkCopiedLast() {
	e.t.Helper()
	items := map[plan.Key][]record.Item{}
	var profiles []record.Item
	for _, it := range e.scan() {
		k := plan.Key{PK: s(it["pk"]), SK: s(it["sk"])}
		if t, ok := counter.TargetOf(k); ok {
			items[t] = append(items[t], it)
		}
		if k.SK == "PROFILE" {
			profiles = append(profiles, it)
		}
	}
	for _, p := range profiles {
		k := plan.Key{PK: s(p["pk"]), SK: s(p["sk"])}
		want := counter.Version(counter.Combine(e.set.Table, append([]record.Item{nil}, items[k]...))[rules.StateVersionAttr])
		if got := counter.Version(p[rules.CopyVersionAttr]); got != want {
			e.t.Errorf("%s shows the copy of version %d of its state, want the last, %d", k.PK, got, want)
		}
	}
}

// A deploy moves a relayed count to split while relay items it wrote are still on the
// stream: their records, read by the new rules (twice, as after a failure Lambda did not
// see), add their deltas once, under their own markers.
func TestRelayRecordsReadAfterSplitDeploy(t *testing.T) {
	e := newEnv(t, apply.Options{})
	if r := e.set.Rule("user-post-count"); !r.Relay {
		t.Fatal("user-post-count should be relayed before the deploy")
	}
	e.api.failAfter = -1
	e.put(map[string]string{"pk": "USER#u1", "sk": "PROFILE", "name": "Ann"})
	e.drain(10, e.lambdaLike)
	for _, p := range []string{"p1", "p2", "p3", "p4", "p5"} {
		e.put(map[string]string{"pk": "POST#" + p, "sk": "METADATA", "userId": "u1"})
	}
	e.lambdaLike(e.records()) // the posts' relay writes; their records wait on the stream

	set, err := rules.ParseSet("test.yaml", []byte(splitRules))
	if err != nil {
		t.Fatal(err)
	}
	e.set = set
	e.h = handler.New(set, apply.New(e.api, e.table, set, apply.Options{}), handler.Options{})
	e.inv = lambda.NewHandler(e.h.Handle)
	e.drain(10, func(b []json.RawMessage) { e.lambdaLike(b); e.lambdaLike(b) })
	e.check()
}
