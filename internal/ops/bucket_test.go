package ops

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

func bucketEval(t testing.TB, now time.Time) *Evaluator {
	t.Helper()
	f, err := rules.Load("testdata/buckets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(f, "")
	if err != nil {
		t.Fatal(err)
	}
	ev.now = func() time.Time { return now }
	return ev
}

func bucketComment(post, id, user, at string) record.Item {
	return record.Item{"pk": S("POST#" + post), "sk": S("COMMENT#" + id), "userId": S(user), "createdAt": S(at)}
}

// Verify computes each bucket's total from the sources, leaves out buckets whose ttl has
// passed (no drift for the item DynamoDB has yet to delete, no missing item), and finds the
// buckets that are wrong or missing.
func TestVerifyBuckets(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	ev := bucketEval(t, now)
	w := ev.NewWorker()
	which := ev.All()
	exp := ev.NewExpected()
	for _, c := range []record.Item{
		bucketComment("p1", "c1", "u1", "2026-11-23T21:34:37Z"),
		bucketComment("p1", "c2", "u1", "2026-11-23T22:00:00.5+00:00"),
		bucketComment("p1", "c3", "u2", "2026-11-23T23:30:00-05:00"), // the 24th in UTC
		bucketComment("p1", "c4", "u2", "yesterday"),                 // no bucket
		bucketComment("p1", "c5", "u1", "2026-09-01T10:00:00Z"),      // its day expired on 2026-10-02
	} {
		if probs := w.Observe(c, which, exp); len(probs) > 0 {
			t.Fatalf("Observe: %v", probs)
		}
	}
	var got []string
	for i, m := range exp.Totals {
		for k, n := range m {
			got = append(got, fmt.Sprintf("%s %s/%s %s", ev.rules[i].r.Name, k.PK, k.SK, n))
		}
	}
	sort.Strings(got)
	want := "post-daily-comments POST#p1/DAY#2026-11-23 2; post-daily-comments POST#p1/DAY#2026-11-24 1; " +
		"user-monthly-comments USER#u1/MONTH#2026-09 1; user-monthly-comments USER#u1/MONTH#2026-11 2; user-monthly-comments USER#u2/MONTH#2026-11 1"
	if strings.Join(got, "; ") != want {
		t.Errorf("expected totals\n%s\nwant\n%s", strings.Join(got, "; "), want)
	}

	seen := ev.NewSeen()
	day := func(sk string, n string) record.Item {
		return record.Item{"pk": S("POST#p1"), "sk": S(sk), "commentCount": N(n)}
	}
	checks := []struct {
		item   record.Item
		drifts int
	}{
		{day("DAY#2026-11-23", "2"), 0},
		{day("DAY#2026-11-24", "5"), 1}, // wrong
		{day("DAY#2026-09-01", "7"), 0}, // expired: DynamoDB deletes it
		{day("DAY#2026-11-20", "1"), 1}, // no comment of that day
	}
	for _, c := range checks {
		if out := w.Check(c.item, which, exp, seen); len(out.Differing()) != c.drifts || len(out.Problems) > 0 {
			t.Errorf("Check %v: %d drifts %v, problems %v; want %d drifts", c.item["sk"], len(out.Drifts), out.Drifts, out.Problems, c.drifts)
		}
	}
	missing, skipped := ev.Missing(which, exp, seen, nil)
	var keysMissing []string
	for _, d := range missing {
		keysMissing = append(keysMissing, d.Key.PK+"/"+d.Key.SK)
	}
	if strings.Join(keysMissing, " ") != "USER#u1/MONTH#2026-09 USER#u1/MONTH#2026-11 USER#u2/MONTH#2026-11" || skipped[0]+skipped[1] != 0 {
		t.Errorf("missing %v (skipped %v), want the three user months", keysMissing, skipped)
	}
}

// Sources are recounted from a bucket target when its key renders their partition: a
// variable the target holds as itself, or as a bucket no coarser than the one to render.
func TestRendersFrom(t *testing.T) {
	vars := keyVars(keys.MustParse("POST#{postId}"), keys.MustParse("DAY#{createdAt:day}"))
	for _, c := range []struct {
		tmpl string
		want bool
	}{
		{"POST#{postId}", true},
		{"LOG#{createdAt}", false}, // the time itself: the day does not give it
		{"LOG#{createdAt:hour}", false},
		{"LOG#{createdAt:day}", true},
		{"LOG#{createdAt:month}", true},
		{"USER#{userId}", false},
	} {
		if got := rendersFrom(keys.MustParse(c.tmpl), vars); got != c.want {
			t.Errorf("rendersFrom(%q) = %v, want %v", c.tmpl, got, c.want)
		}
	}
	ev := bucketEval(t, time.Now())
	for _, rs := range ev.rules {
		q := rs.query
		switch rs.r.Name {
		case "post-daily-comments":
			if q == nil || q.pk.String() != "POST#{postId}" || !q.consistent {
				t.Errorf("%s: query %+v, want the post's partition", rs.r.Name, q)
			}
		case "user-monthly-comments":
			if q != nil {
				t.Errorf("%s: query %+v, want none (only a scan finds a user's comments)", rs.r.Name, q)
			}
		}
	}
}
