package bench

import "sync"

// floorCounter computes the floor: per batch, one write per distinct target whose value
// changed (a copy or mirror that now holds something else, a counter whose net delta over
// the batch is not zero). The baseline reports every logical effect it makes; the floor is
// what an ideal processor, seeing the same batches, could not go below. Markers, watermarks,
// version guards and job items are not in it: they are the price of exactly-once and
// unbounded fan-out.
type floorCounter struct {
	mu      sync.Mutex
	changes map[[2]string]bool
	deltas  map[[3]string]int64
	hits    map[[2]string]int // floor writes per target, over the batches ended so far
}

func newFloorCounter() *floorCounter { return &floorCounter{} }

func (f *floorCounter) begin() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.changes, f.deltas = map[[2]string]bool{}, map[[3]string]int64{}
	f.mu.Unlock()
}

// end closes the batch and adds its floor.
func (f *floorCounter) end() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	targets := f.changes
	for k, n := range f.deltas {
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
	f.changes, f.deltas = nil, nil
}

func (f *floorCounter) changed(pk, sk string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	if f.changes != nil {
		f.changes[[2]string{pk, sk}] = true
	}
	f.mu.Unlock()
}

func (f *floorCounter) delta(pk, sk, attr string, n int64) {
	if f == nil {
		return
	}
	f.mu.Lock()
	if f.deltas != nil {
		f.deltas[[3]string{pk, sk, attr}] += n
	}
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
