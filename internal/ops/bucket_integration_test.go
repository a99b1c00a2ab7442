package ops_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/keys"
	"github.com/denorm/denorm/internal/ops/opstest"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

// TestBackfillAndVerifyBuckets: a table holding only comments gets, from one backfill, every
// day and month bucket item with its count and (day items) its TTL; none for a bucket whose
// TTL has passed or a comment whose time is no time. Verify is then clean; a wrong, a
// missing and an expired bucket item: verify finds the first two only, and repairs them.
func TestBackfillAndVerifyBuckets(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	d1 := now.AddDate(0, 0, -3).Truncate(24 * time.Hour)
	d2 := now.AddDate(0, -1, -2).Truncate(24 * time.Hour)
	old := now.AddDate(0, 0, -100).Truncate(24 * time.Hour)
	at := func(d time.Time, h int) string { return d.Add(time.Duration(h) * time.Hour).Format(time.RFC3339) }
	var items []opstest.Item
	comment := func(p, c, u string, createdAt types.AttributeValue) {
		items = append(items, opstest.Item{"pk": sAV("POST#" + p), "sk": sAV("COMMENT#" + c), "userId": sAV(u), "createdAt": createdAt})
	}
	for i := 0; i < 30; i++ {
		p, u := "p"+strconv.Itoa(i%4), "u"+strconv.Itoa(i%3)
		switch i % 5 {
		case 0:
			comment(p, "c"+strconv.Itoa(i), u, sAV(at(d1, i%24)))
		case 1:
			comment(p, "c"+strconv.Itoa(i), u, nAV(int(d2.Add(time.Duration(i)*time.Hour).Unix()))) // epoch seconds
		case 2:
			comment(p, "c"+strconv.Itoa(i), u, sAV(d1.Add(time.Hour).Format("2006-01-02T15:04:05.000")+"+00:00"))
		case 3:
			comment(p, "c"+strconv.Itoa(i), u, sAV(at(old, 3))) // its day expired
		default:
			comment(p, "c"+strconv.Itoa(i), u, sAV("not a time"))
		}
	}
	fx := newFixtureOf(t, "testdata/buckets.yaml", items)
	db, name := fx.db, fx.table

	// The truth, computed here from the times.
	want := map[[2]string]int{}
	for _, it := range items {
		v := ""
		switch x := it["createdAt"].(type) {
		case *types.AttributeValueMemberS:
			v = x.Value
		case *types.AttributeValueMemberN:
			v = x.Value
		}
		tm, _, err := keys.ParseTime(v)
		if err != nil {
			continue
		}
		if dayEnd(tm).Add(30 * 24 * time.Hour).After(now) {
			want[[2]string{it["pk"].(*types.AttributeValueMemberS).Value, "DAY#" + keys.Day.Bucket(tm)}]++
		}
		want[[2]string{"USER#" + it["userId"].(*types.AttributeValueMemberS).Value, "MONTH#" + keys.Month.Bucket(tm)}]++
	}
	check := func() {
		t.Helper()
		got, err := opstest.Scan(ctx, db, name)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		byKey := map[[2]string]opstest.Item{}
		for _, it := range got {
			byKey[[2]string{it["pk"].(*types.AttributeValueMemberS).Value, it["sk"].(*types.AttributeValueMemberS).Value}] = it
		}
		for k, it := range byKey {
			pk, sk := k[0], k[1]
			if rules.IsReserved(pk) || !strings.HasPrefix(sk, "DAY#") && !strings.HasPrefix(sk, "MONTH#") {
				continue // state items are checked with their targets
			}
			if day, ok := strings.CutPrefix(sk, "DAY#"); ok {
				start, _ := keys.Day.Start(day)
				if !dayEnd(start).Add(30 * 24 * time.Hour).After(now) {
					continue // expired: left for DynamoDB to delete
				}
				wantTTL := strconv.FormatInt(dayEnd(start).Add(30*24*time.Hour).Unix(), 10)
				if ttl, _ := it["ttl"].(*types.AttributeValueMemberN); ttl == nil || ttl.Value != wantTTL {
					t.Errorf("%v: ttl %v, want %s", k, it["ttl"], wantTTL)
				}
			} else if it["ttl"] != nil {
				t.Errorf("%v: a ttl on a bucket whose rule has none", k)
			}
			seen++
			if n := nOf(it["commentCount"]); n != want[k] {
				t.Errorf("%v: commentCount %d, want %d", k, n, want[k])
			}
			// The exact count is in the bucket's state item, which expires with it.
			st := byKey[opstest.StateKey(pk, sk)]
			switch {
			case st == nil:
				t.Errorf("%v: no state item", k)
			case nOf(st["commentCount"]) != want[k]:
				t.Errorf("%v: the state item holds commentCount %d, want %d", k, nOf(st["commentCount"]), want[k])
			case !value.Equal(st["ttl"], it["ttl"]):
				t.Errorf("%v: the state item's ttl %v, the item's %v", k, st["ttl"], it["ttl"])
			case !value.Equal(st[rules.StateVersionAttr], it[rules.CopyVersionAttr]):
				t.Errorf("%v: a copy of version %v, the state item is at %v", k, it[rules.CopyVersionAttr], st[rules.StateVersionAttr])
			}
		}
		if seen != len(want) {
			t.Errorf("%d live bucket items, want %d", seen, len(want))
		}
	}

	cfg := fx.config(true)
	cfg.Mode = "backfill"
	rep := fx.run(cfg)
	if rep.Problems != 0 {
		t.Fatalf("backfill: %d problems", rep.Problems)
	}
	check()
	cfg = fx.config(false)
	cfg.Mode = "verify (backfilled)"
	requireClean(t, fx.run(cfg))

	// One day item wrong, one month item gone, an expired day item left by DynamoDB.
	var wrong, gone [2]string
	for k := range want {
		if strings.HasPrefix(k[1], "DAY#") && wrong[0] == "" {
			wrong = k
		}
		if strings.HasPrefix(k[1], "MONTH#") && gone[0] == "" {
			gone = k
		}
	}
	expired := opstest.Item{"pk": sAV("POST#p0"), "sk": sAV("DAY#" + keys.Day.Bucket(old)), "commentCount": nAV(42)}
	if err := opstest.Apply(ctx, db, name, opstest.Corruption{
		Puts:    []opstest.Item{{"pk": sAV(wrong[0]), "sk": sAV(wrong[1]), "commentCount": nAV(99)}, expired},
		Deletes: [][2]string{gone},
	}); err != nil {
		t.Fatal(err)
	}
	cfg.Mode = "verify (corrupted)"
	rep = fx.run(cfg)
	if got := drift(rep); got["post-daily-comments"] != 1 || got["user-monthly-comments"] != 1 {
		t.Fatalf("drift %v, want one per rule (the expired day item is not drift)", got)
	}
	cfg = fx.config(true)
	cfg.Mode = "verify --repair"
	fx.run(cfg)
	check()
	cfg = fx.config(false)
	cfg.Mode = "verify (repaired)"
	requireClean(t, fx.run(cfg))
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: opstest.Item{"pk": expired["pk"], "sk": expired["sk"]}})
	if err != nil || nOf(out.Item["commentCount"]) != 42 {
		t.Errorf("the expired day item was touched: %v, %v", out.Item, err)
	}
}

func dayEnd(t time.Time) time.Time {
	start, _ := keys.Day.Start(keys.Day.Bucket(t))
	return keys.Day.End(start)
}

func nOf(v types.AttributeValue) int {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.Atoi(n.Value)
		return i
	}
	return 0
}
