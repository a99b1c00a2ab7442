package bench

import (
	"context"
	"sync"
)

// floorCounter computes the floor: per batch, one write per distinct target whose value
// changed (a copy or mirror that now holds something else, a counter whose net delta over
// the batch is not zero). The baseline reports every logical effect it makes; the floor is
// what an ideal processor, seeing the same batches, could not go below. Markers, watermarks,
// version guards and job items are not in it: they are the price of exactly-once and
// unbounded fan-out. Batches run concurrently with ParallelizationFactor > 1: each one's
// effects travel in its invocation's context.
type floorCounter struct {
	mu   sync.Mutex
	hits map[[2]string]int // floor writes per target, over the batches ended so far
}

// floorBatch is what one batch changed.
type floorBatch struct {
	changes map[[2]string]bool
	deltas  map[[3]string]int64
}

type floorKey struct{}

func newFloorCounter() *floorCounter { return &floorCounter{} }

// begin opens a batch: the returned context carries it to the handler.
func (f *floorCounter) begin(ctx context.Context) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, floorKey{}, &floorBatch{changes: map[[2]string]bool{}, deltas: map[[3]string]int64{}})
}

func batchOf(ctx context.Context) *floorBatch {
	b, _ := ctx.Value(floorKey{}).(*floorBatch)
	return b
}

// end closes the batch of ctx and adds its floor.
func (f *floorCounter) end(ctx context.Context) {
	b := batchOf(ctx)
	if f == nil || b == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	targets := b.changes
	for k, n := range b.deltas {
		if n != 0 {
			targets[[2]string{k[0], k[1]}] = true
		}
	}
	if f.hits == nil {
		f.hits = map[[2]string]int{}
	}
	for k := range targets {
		f.hits[k]++
	}
}

func (f *floorCounter) changed(ctx context.Context, pk, sk string) {
	b := batchOf(ctx)
	if f == nil || b == nil {
		return
	}
	f.mu.Lock()
	b.changes[[2]string{pk, sk}] = true
	f.mu.Unlock()
}

func (f *floorCounter) delta(ctx context.Context, pk, sk, attr string, n int64) {
	b := batchOf(ctx)
	if f == nil || b == nil {
		return
	}
	f.mu.Lock()
	b.deltas[[3]string{pk, sk, attr}] += n
	f.mu.Unlock()
}

// take returns the floor so far, in writes and in WCU (each write priced at what one write
// to that item cost in the run: an item in a global index costs that index's write too),
// and starts again from zero.
func (f *floorCounter) take(cost func([2]string) float64) (writes int, wcu float64) {
	if f == nil {
		return 0, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, n := range f.hits {
		writes += n
		wcu += float64(n) * cost(k)
	}
	f.hits = nil
	return writes, wcu
}
