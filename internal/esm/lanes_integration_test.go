package esm

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/denorm/denorm/internal/record"
)

// putN writes item pk/x with n = the given value: an INSERT, then MODIFYs.
func (s *stack) putN(pk string, n int) { s.putItemN(pk, "x", n) }

func (s *stack) putItemN(pk, sk string, n int) {
	s.t.Helper()
	_, err := s.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &s.table, Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk},
		"n": &types.AttributeValueMemberN{Value: strconv.Itoa(n)},
	}})
	if err != nil {
		s.t.Fatal(err)
	}
}

// lanesProbe is a function that notes, per item ("pk|sk"), the order of the n values it
// sees, and how many invocations ran at once.
type lanesProbe struct {
	mu           sync.Mutex
	seen         map[string][]string
	active, most int
	hold         time.Duration
	block        func(pk string) <-chan struct{} // when set, an invocation with pk waits on it
	records      int
	seqs         []string
}

func (p *lanesProbe) handler() lambda.Handler {
	return lambda.NewHandler(func(ctx context.Context, e events.DynamoDBEvent) error {
		p.mu.Lock()
		p.active++
		p.most = max(p.most, p.active)
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.active--
			p.mu.Unlock()
		}()
		for _, r := range e.Records {
			if p.block != nil {
				if ch := p.block(r.Change.Keys["pk"].String()); ch != nil {
					select {
					case <-ch:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
		}
		time.Sleep(p.hold)
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, r := range e.Records {
			item := r.Change.Keys["pk"].String() + "|" + r.Change.Keys["sk"].String()
			p.seen[item] = append(p.seen[item], r.Change.NewImage["n"].Number())
			p.records++
			p.seqs = append(p.seqs, r.Change.SequenceNumber)
		}
		return nil
	})
}

// With ParallelizationFactor N, a shard's batches run up to N at once, and the records of
// each partition key still reach the function in stream order. Factor 1 stays serial.
func TestParallelizationFactorLanes(t *testing.T) {
	for _, tc := range []struct {
		factor int
		serial bool
	}{{1, true}, {4, false}} {
		t.Run(fmt.Sprintf("factor %d", tc.factor), func(t *testing.T) {
			s := newStack(t)
			const keys, rounds = 8, 5
			var want []string
			for r := range rounds {
				want = append(want, strconv.Itoa(r))
				for k := range keys {
					s.putN(fmt.Sprintf("K#%d", k), r)
				}
			}
			probe := &lanesProbe{seen: map[string][]string{}, hold: 30 * time.Millisecond}
			cfg := s.fastConfig()
			cfg.BatchSize, cfg.ParallelizationFactor = 5, tc.factor
			m := start(t, s.streams, probe.handler(), cfg)
			drain(t, m)

			probe.mu.Lock()
			defer probe.mu.Unlock()
			if probe.records != keys*rounds {
				t.Fatalf("function saw %d records, want %d", probe.records, keys*rounds)
			}
			for k := range keys {
				pk := fmt.Sprintf("K#%d", k)
				if got := probe.seen[pk+"|x"]; !slices.Equal(got, want) {
					t.Errorf("%s: versions in order %v, want %v", pk, got, want)
				}
			}
			if tc.serial && probe.most != 1 {
				t.Errorf("%d invocations at once, want 1", probe.most)
			}
			if !tc.serial && probe.most < 2 {
				t.Errorf("at most %d invocation at once, want lanes running concurrently", probe.most)
			}
			if st := m.Stats(); st.Records != keys*rounds || st.Failures != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// Above factor 1 Lambda keeps order per item (partition and sort key), not per partition:
// the items of one partition are spread over the lanes and run concurrently, each item's
// records still in order. A design that needs a partition's records in one order must not
// run above factor 1; this is the order the bench's factor-4 workloads are exact under.
func TestParallelizationFactorOrdersItemsNotPartitions(t *testing.T) {
	s := newStack(t)
	const items, rounds = 8, 4
	var want []string
	for r := range rounds {
		want = append(want, strconv.Itoa(r))
		for i := range items {
			s.putItemN("ONE#partition", fmt.Sprintf("S#%d", i), r)
		}
	}
	probe := &lanesProbe{seen: map[string][]string{}, hold: 30 * time.Millisecond}
	cfg := s.fastConfig()
	cfg.BatchSize, cfg.ParallelizationFactor = 4, 4
	m := start(t, s.streams, probe.handler(), cfg)
	drain(t, m)

	probe.mu.Lock()
	defer probe.mu.Unlock()
	for i := range items {
		if got := probe.seen[fmt.Sprintf("ONE#partition|S#%d", i)]; !slices.Equal(got, want) {
			t.Errorf("S#%d: versions in order %v, want %v", i, got, want)
		}
	}
	if probe.most < 2 {
		t.Errorf("at most %d invocation at once for one partition's items, want its items on concurrent lanes", probe.most)
	}
}

// The checkpoint does not pass a record whose lane has not processed it, however far the
// other lanes got; once that lane finishes, it moves to the last record.
func TestParallelizationFactorCheckpoint(t *testing.T) {
	s := newStack(t)
	// Two items on different lanes of 2 (hashing their keys, pk and sk).
	var slow, fast string
	for i := 0; slow == "" || fast == ""; i++ {
		pk := fmt.Sprintf("K#%d", i)
		if laneOf(itemKey(map[string]streamtypes.AttributeValue{"pk": &streamtypes.AttributeValueMemberS{Value: pk},
			"sk": &streamtypes.AttributeValueMemberS{Value: "x"}}), 2) == 0 {
			slow = cmp.Or(slow, pk)
		} else {
			fast = cmp.Or(fast, pk)
		}
	}
	s.putN(slow, 0) // the first record of the shard: its lane blocks
	s.putN(fast, 0)
	s.putN(fast, 1)

	release := make(chan struct{})
	probe := &lanesProbe{seen: map[string][]string{}, block: func(pk string) <-chan struct{} {
		if pk == slow {
			return release
		}
		return nil
	}}
	cfg := s.fastConfig()
	cfg.ParallelizationFactor = 2
	m := start(t, s.streams, probe.handler(), cfg)

	deadline := time.Now().Add(10 * time.Second)
	for {
		probe.mu.Lock()
		n := len(probe.seen[fast+"|x"])
		probe.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fast lane never processed its records")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the fast lane checkpoint, if it wrongly would
	if got := checkpoints(m); len(got) != 0 {
		t.Fatalf("checkpoint %v while the first record's lane is blocked, want none", got)
	}
	close(release)
	drain(t, m)
	got := checkpoints(m)
	if len(got) != 1 {
		t.Fatalf("checkpoints %v, want one shard", got)
	}
	probe.mu.Lock()
	defer probe.mu.Unlock()
	last := slices.MaxFunc(probe.seqs, record.CompareSeq)
	for _, seq := range got {
		if seq != last {
			t.Errorf("checkpoint %s, want the last record %s", seq, last)
		}
	}
	if strings.Join(probe.seen[slow+"|x"], ",") != "0" || strings.Join(probe.seen[fast+"|x"], ",") != "0,1" {
		t.Errorf("seen %v", probe.seen)
	}
}

// checkpoints returns the shards' checkpointed sequence numbers (set ones only).
func checkpoints(m *Mapping) map[string]string {
	m.ckpt.mu.Lock()
	defer m.ckpt.mu.Unlock()
	out := map[string]string{}
	for id, s := range m.ckpt.data.Shards {
		if s.SequenceNumber != "" {
			out[id] = s.SequenceNumber
		}
	}
	return out
}
