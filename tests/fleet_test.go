package tests

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/denorm/denorm/internal/retry"
)

// rules/fleet.yaml, whose every where is a test beyond equality, under concurrent writers
// doing what a fleet's application does: readings saved whole (some without a status,
// some archived, moved between sites), statuses changed, archives undone with REMOVE,
// readings deleted, sites saved whole as a form read them. When the stream drains,
// `denorm verify` (a scan recomputing every rule) finds no drift.
func TestFleetWhereTests(t *testing.T) {
	r := startApp(t, "../rules/fleet.yaml")
	var scripts []script
	for d := range 4 {
		scripts = append(scripts, script{r.put("device", item{"pk": str(fmt.Sprintf("DEVICE#d%d", d)), "sk": str("METADATA"), "name": str("boiler")})})
	}
	site := func(n int) item {
		return item{"pk": str(fmt.Sprintf("SITE#s%d", n)), "sk": str("METADATA"), "name": str("plant")}
	}
	scripts = append(scripts, script{r.put("site", site(0)), r.put("site", site(1))})
	r.run(scripts...)
	rng := rand.New(rand.NewPCG(35, 1))
	temps := []string{"5", "10.5", "10.4999", "25", "40", "40.01", "80", "80.5", "95.25"}
	statuses := []string{"ok", "calibrated", "faulty", "retired", "new"}
	scripts = nil
	for range 120 {
		var s script
		for range 4 {
			d, id := fmt.Sprintf("d%d", rng.IntN(4)), fmt.Sprintf("r%02d", rng.IntN(15))
			key := item{"pk": str("DEVICE#" + d), "sk": str("READING#" + id)}
			switch op := rng.IntN(10); {
			case op < 6:
				it := item{"pk": key["pk"], "sk": key["sk"], "temp": numStr(temps[rng.IntN(len(temps))]),
					"at": str(fmt.Sprintf("%d-%02d-%02dT10:00:00Z", 2025+rng.IntN(2), 1+rng.IntN(12), 1+rng.IntN(28)))}
				if rng.IntN(3) > 0 {
					it["status"] = str(statuses[rng.IntN(len(statuses))])
				}
				if rng.IntN(4) == 0 {
					it["archivedAt"] = str("2026-11-01")
				}
				if rng.IntN(5) > 0 {
					it["siteId"] = str(fmt.Sprintf("s%d", rng.IntN(2)))
				}
				s = append(s, r.put("reading", it))
			case op < 7:
				s = append(s, ifThere(r.update("status", key, expression.Set(expression.Name("status"), expression.Value(statuses[rng.IntN(len(statuses))])))))
			case op < 8:
				s = append(s, ifThere(r.update("unarchive", key, expression.Remove(expression.Name("archivedAt")))))
			case op < 9 && rng.IntN(3) == 0: // a site saved whole, dropping its counts
				s = append(s, r.put("site", site(rng.IntN(2))))
			default:
				s = append(s, r.del("reading deleted", key))
			}
		}
		scripts = append(scripts, s)
	}
	r.run(scripts...)
	r.drain()
	r.checkNoFailures()
	r.verify()

	// The distinct counts, from the readings themselves: each site's hotDevices is the
	// number of devices with a reading above 80 taken there.
	hot := map[string]map[string]bool{}
	for d := range 4 {
		for _, it := range r.query(fmt.Sprintf("DEVICE#d%d", d), "READING#") {
			t, _ := it["temp"].(*types.AttributeValueMemberN)
			st, _ := it["siteId"].(*types.AttributeValueMemberS)
			if t == nil || st == nil {
				continue
			}
			if v, ok := new(big.Rat).SetString(t.Value); ok && v.Cmp(big.NewRat(80, 1)) > 0 {
				if hot[st.Value] == nil {
					hot[st.Value] = map[string]bool{}
				}
				hot[st.Value][fmt.Sprintf("d%d", d)] = true
			}
		}
	}
	for _, sid := range []string{"s0", "s1"} {
		got, _ := r.get(item{"pk": str("SITE#" + sid), "sk": str("METADATA")})["hotDevices"].(*types.AttributeValueMemberN)
		if want := fmt.Sprint(len(hot[sid])); got == nil || got.Value != want {
			t.Errorf("SITE#%s hotDevices = %v, want %s", sid, got, want)
		}
	}

	// The key variable copies, checked from the readings themselves: each device's
	// lastReadingId is the id in the sort key of its latest unarchived reading (by at, then
	// key), and each entry of hottest carries the id of the reading it lists.
	for d := range 4 {
		pk := fmt.Sprintf("DEVICE#d%d", d)
		best, bestAt := "", ""
		for _, it := range r.query(pk, "READING#") {
			sk, at := it["sk"].(*types.AttributeValueMemberS).Value, ""
			if v, ok := it["at"].(*types.AttributeValueMemberS); ok {
				at = v.Value
			}
			if it["archivedAt"] == nil && at != "" && (at > bestAt || (at == bestAt && sk > "READING#"+best)) {
				best, bestAt = strings.TrimPrefix(sk, "READING#"), at
			}
		}
		dev := r.get(item{"pk": str(pk), "sk": str("METADATA")})
		if got, _ := dev["lastReadingId"].(*types.AttributeValueMemberS); (got == nil) != (best == "") || (got != nil && got.Value != best) {
			t.Errorf("%s: lastReadingId is %v, want %q", pk, dev["lastReadingId"], best)
		}
		list, _ := dev["hottest"].(*types.AttributeValueMemberL)
		if list == nil {
			continue
		}
		for _, e := range list.Value {
			m := e.(*types.AttributeValueMemberM).Value
			sk, id := m["sk"].(*types.AttributeValueMemberS).Value, m["readingId"]
			if got, _ := id.(*types.AttributeValueMemberS); got == nil || "READING#"+got.Value != sk {
				t.Errorf("%s: hottest entry %s carries readingId %v", pk, sk, id)
			}
		}
	}
}

// ifThere is st for an item that may have been deleted meanwhile: its refused condition is
// the application's "not found", not a failure.
func ifThere(st step) step {
	do := st.do
	st.do = func(ctx context.Context, db *dynamodb.Client) error {
		if err := do(ctx, db); !retry.Refused(err) {
			return err
		}
		return nil
	}
	return st
}

func numStr(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
