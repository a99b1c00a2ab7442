package streamfollow

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

func rec(seq int, pk, sk string) types.Record {
	return types.Record{Dynamodb: &types.StreamRecord{SequenceNumber: aws.String(fmt.Sprintf("%021d", seq)), Keys: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}}}
}

func TestIndex(t *testing.T) {
	a := &index{arn: "s", keys: map[string][]pos{}, shard: types.Shard{ShardId: aws.String("shard-1")}}
	for i, pk := range []string{"A", "B", "A", "C", "A"} {
		a.add(rec(i+1, pk, "x"))
	}
	b := &index{arn: "s", keys: map[string][]pos{}, shard: types.Shard{ShardId: aws.String("shard-2")}}
	b.add(rec(7, "D", "x"))
	xs := indexes{}.keep(a, 10).keep(b, 10).keep(a, 10)
	if len(xs) != 2 || a.last != fmt.Sprintf("%021d", 5) {
		t.Fatalf("kept %d indexes, a ends at %s; want 2, 5", len(xs), a.last)
	}
	kA, _ := keyString(map[string]string{"sk": "x", "pk": "A"})
	kD, _ := keyString(map[string]string{"pk": "D", "sk": "x"})
	kPart, _ := keyString(map[string]string{"pk": "A"})
	for _, tc := range []struct {
		name, arn string
		seq       int
		key       string
		want      *index
		at        int
	}{
		{"A's second record", "s", 3, kA, a, 1},
		{"A's first record", "s", 1, kA, a, 0},
		{"B's record asked as A's", "s", 2, kA, nil, 0},
		{"a part of the key", "s", 1, kPart, nil, 0},
		{"another index", "s", 7, kD, b, 0},
		{"another stream", "t", 3, kA, nil, 0},
		{"not read", "s", 9, kA, nil, 0},
	} {
		ix, at := xs.covering(tc.arn, fmt.Sprintf("%021d", tc.seq), tc.key)
		if ix != tc.want || at != tc.at {
			t.Errorf("%s: covering %p at %d, want %p at %d", tc.name, ix, at, tc.want, tc.at)
		}
	}
	if xs = xs.keep(b, 5); len(xs) != 1 || xs[0] != b {
		t.Errorf("over the limit: kept %d, want b alone", len(xs))
	}
	if xs = xs.drop(b); len(xs) != 0 {
		t.Errorf("dropped b: %d left", len(xs))
	}
	n := &index{keys: map[string][]pos{}, shard: types.Shard{ShardId: aws.String("s")}}
	n.add(types.Record{Dynamodb: &types.StreamRecord{SequenceNumber: aws.String("1"), Keys: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberN{Value: "1"}}}})
	if n.n != 0 || n.last != "1" {
		t.Errorf("a record with a number key: %d indexed, last %q; want 0, 1", n.n, n.last)
	}
}

// BenchmarkIndex measures what the index holds a record in: 1,000,000 records of 200,000
// keys (a post's comments, each written five times).
func BenchmarkIndex(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ix := &index{keys: map[string][]pos{}, shard: types.Shard{ShardId: aws.String("shardId-00000001795597694340-34366646")}}
		for i := range 1_000_000 {
			ix.add(rec(i, fmt.Sprintf("POST#p%04d", i%5000), fmt.Sprintf("COMMENT#2025-01-15T13:55:13Z#c%06d", i%200000)))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(ix.n), "bytes/record")
		runtime.KeepAlive(ix)
	}
}
