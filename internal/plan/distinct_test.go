package plan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

const distinctRules = `version: 1
entities:
  Site:    {pk: "SITE#{siteId}", sk: SITE, attributes: [statuses, readers]}
  Reading: {pk: "SITE#{siteId}", sk: "READING#{readingId}", attributes: [status, archived]}
rules:
  - name: site-statuses
    distinct: {of: Reading, into: Site, value: status, attribute: statuses, where: {archived: {exists: false}}}
  - name: site-readers
    distinct: {of: Reading, into: Site, value: "{readingId}", attribute: readers}
`

// A source's record moves its value's reference item: -1 for the value it held, +1 for
// the one it holds, nothing when neither changed (a value equal as a number included).
func TestDistinctSourceDeltas(t *testing.T) {
	set, err := rules.ParseSet("test.yaml", []byte(distinctRules))
	if err != nil {
		t.Fatal(err)
	}
	site := plan.Key{PK: "SITE#s1", SK: "SITE"}
	ref := func(vk string) string { return plan.DistinctRef(site, "site-statuses", vk).SK }
	reading := func(extra ...any) record.Item {
		it := record.Item{"pk": s("SITE#s1"), "sk": s("READING#r1")}
		for i := 0; i+1 < len(extra); i += 2 {
			it[extra[i].(string)] = extra[i+1].(types.AttributeValue)
		}
		return it
	}
	for _, tc := range []struct {
		name     string
		op       record.Op
		old, new record.Item
		want     []string // "<sk> <amount>" of each site-statuses delta
	}{
		{"inserted", record.Insert, nil, reading("status", s("ok")), []string{ref("Sok") + " 1"}},
		{"inserted without a value", record.Insert, nil, reading(), nil},
		{"inserted with a list", record.Insert, nil, reading("status", &types.AttributeValueMemberL{}), nil},
		{"value changed", record.Modify, reading("status", s("ok")), reading("status", s("faulty")), []string{ref("Sok") + " -1", ref("Sfaulty") + " 1"}},
		{"number written otherwise", record.Modify, reading("status", n("1")), reading("status", n("1.0")), nil},
		{"number to string", record.Modify, reading("status", n("1")), reading("status", s("1")), []string{ref("N1") + " -1", ref("S1") + " 1"}},
		{"value removed", record.Modify, reading("status", s("ok")), reading(), []string{ref("Sok") + " -1"}},
		{"leaves the where", record.Modify, reading("status", s("ok")), reading("status", s("ok"), "archived", s("y")), []string{ref("Sok") + " -1"}},
		{"deleted", record.Remove, reading("status", s("ok")), nil, []string{ref("Sok") + " -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := tc.new
			if img == nil {
				img = tc.old
			}
			c := record.Change{EventID: "e1", Seq: "100", Op: tc.op, Old: tc.old, New: tc.new, Keys: record.Item{"pk": img["pk"], "sk": img["sk"]}}
			rp, err := plan.New(set).Plan(&c)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range rp.Deltas {
				if d.Rule.Name != "site-statuses" {
					continue
				}
				if d.Target.PK != rules.RelayPrefix+"SITE#s1" {
					t.Errorf("delta to %v, want the site's relay partition", d.Target)
				}
				got = append(got, d.Target.SK+" "+d.Amount.String())
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("deltas %v, want %v", got, tc.want)
			}
		})
	}
}

// A reference item's record moves its target's count when the number crosses zero, and
// not for a backfill's or repair's write (_dn_rp raised), which set the state itself.
func TestDistinctReferenceRecords(t *testing.T) {
	set, err := rules.ParseSet("test.yaml", []byte(distinctRules))
	if err != nil {
		t.Fatal(err)
	}
	k := plan.DistinctRef(plan.Key{PK: "SITE#s1", SK: "SITE"}, "site-statuses", "Sok")
	ref := func(count string, extra ...any) record.Item {
		it := record.Item{"pk": s(k.PK), "sk": s(k.SK), "statuses": n(count), rules.StateVersionAttr: n("3")}
		for i := 0; i+1 < len(extra); i += 2 {
			it[extra[i].(string)] = extra[i+1].(types.AttributeValue)
		}
		return it
	}
	for _, tc := range []struct {
		name     string
		op       record.Op
		old, new record.Item
		want     string // the delta to the site, "" for none
	}{
		{"created by a first source", record.Insert, nil, ref("1"), "1"},
		{"a second source", record.Modify, ref("1"), ref("2"), ""},
		{"back to one", record.Modify, ref("2"), ref("1"), ""},
		{"the last source left", record.Modify, ref("1"), ref("0"), "-1"},
		{"deltas that summed to zero", record.Modify, ref("0"), ref("0"), ""},
		{"a source again", record.Modify, ref("0"), ref("1"), "1"},
		{"deleted by a clean-up", record.Remove, ref("2"), nil, "-1"},
		{"a repair's write", record.Modify, ref("0"), ref("2", rules.RefRepairAttr, n("1")), ""},
		{"a repair's creation", record.Insert, nil, ref("2", rules.RefRepairAttr, n("1")), ""},
		{"the processor after a repair", record.Modify, ref("2", rules.RefRepairAttr, n("1")), ref("0", rules.RefRepairAttr, n("1")), "-1"},
		{"deleted after a repair", record.Remove, ref("2", rules.RefRepairAttr, n("1")), nil, "-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := record.Change{EventID: "e1", Seq: "100", Op: tc.op, Old: tc.old, New: tc.new, Keys: record.Item{"pk": s(k.PK), "sk": s(k.SK)}}
			rp, err := plan.New(set).Plan(&c)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, d := range rp.Deltas {
				if d.Rule.Name != "site-statuses" || d.Target != (plan.Key{PK: "SITE#s1", SK: "SITE"}) {
					t.Errorf("delta %+v", d)
				}
				got = d.Amount.String()
			}
			if got != tc.want || len(rp.Deltas) > 1 {
				t.Errorf("delta %q (%d deltas), want %q", got, len(rp.Deltas), tc.want)
			}
		})
	}
}

// A reference item's key names its target and rule, whatever the target's sort key holds.
func FuzzDistinctRef(f *testing.F) {
	f.Add("SITE#s1", "SITE", "site-statuses", "Sok")
	f.Add("P", "", "r", "N1")
	f.Add("A#b", "DAY#2026-01-01#x", "a.b-c_d", "")
	f.Fuzz(func(t *testing.T, pk, sk, rule, vk string) {
		if rule == "" || containsHash(rule) {
			return // rule names hold no '#'
		}
		target := plan.Key{PK: pk, SK: sk}
		k := plan.DistinctRef(target, rule, vk)
		got, name, ok := plan.ParseDistinctRef(k)
		if !ok || got != target || name != rule {
			t.Fatalf("ParseDistinctRef(%v) = %v, %q, %v; want %v, %q", k, got, name, ok, target, rule)
		}
		if k2 := plan.DistinctRef(target, rule, vk+"x"); k2 == k {
			t.Fatalf("two values, one key %v", k)
		}
	})
}

func containsHash(s string) bool { return strings.Contains(s, "#") }
