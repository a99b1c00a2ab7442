package ops

import (
	"context"
	"sync"
	"time"

	"github.com/denorm/denorm/internal/retry"
)

// limiter is a token bucket of write capacity units. A write takes one unit before it
// starts (the least a write costs) and settles the difference once DynamoDB reports what
// it consumed, so large items and index writes slow the rate as they should. The balance
// may go negative: later writes wait until it is paid back.
type limiter struct {
	mu     sync.Mutex
	rate   float64 // units per second; <= 0 means no limit
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
}

// newLimiter returns a limiter of rate units per second holding at most one second of
// units (at least one), starting full.
func newLimiter(rate float64) *limiter {
	burst := rate
	if burst < 1 {
		burst = 1
	}
	return &limiter{rate: rate, burst: burst, tokens: burst, now: time.Now, sleep: retry.Sleep}
}

// refill adds the units earned since the last call. Callers hold mu.
func (l *limiter) refill() {
	now := l.now()
	if !l.last.IsZero() {
		l.tokens += now.Sub(l.last).Seconds() * l.rate
		if l.tokens > l.burst {
			l.tokens = l.burst
		}
	}
	l.last = now
}

// Wait takes n units, sleeping until the bucket has paid for them.
func (l *limiter) Wait(ctx context.Context, n float64) error {
	if l == nil || l.rate <= 0 {
		return ctx.Err()
	}
	l.mu.Lock()
	l.refill()
	l.tokens -= n
	deficit := -l.tokens
	l.mu.Unlock()
	if deficit <= 0 {
		return ctx.Err()
	}
	return l.sleep(ctx, time.Duration(deficit/l.rate*float64(time.Second)))
}

// Settle charges the difference between what a write consumed and what Wait took.
func (l *limiter) Settle(extra float64) {
	if l == nil || l.rate <= 0 || extra == 0 {
		return
	}
	l.mu.Lock()
	l.refill()
	l.tokens -= extra
	l.mu.Unlock()
}
