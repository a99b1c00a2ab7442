package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/denorm/denorm/internal/retry"
)

// ErrDeadline means the invocation's deadline was too near to start another write; the
// record is reported as not applied and the stream retries it.
var ErrDeadline = errors.New("invocation deadline too near to start a write")

// do runs op, retrying transient errors with full-jitter exponential backoff until the
// invocation's deadline margin. what names the operation in the returned error.
func (r *run) do(what string, op func(ctx context.Context) error) error {
	backoff := retry.Backoff{Base: 25 * time.Millisecond, Max: r.x.opt.MaxBackoff}
	for attempt := 1; ; attempt++ {
		if err := r.checkDeadline(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		err := op(r.ctx)
		if err == nil || !retry.Transient(err) {
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
		r.mu.Lock()
		r.stats.Retries++
		if retry.Conflict(err) {
			r.stats.Conflicts++
		}
		r.mu.Unlock()
		if err := retry.Sleep(r.ctx, backoff.Jittered(attempt)); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

func (r *run) checkDeadline() error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if dl, ok := r.ctx.Deadline(); ok && time.Until(dl) < r.x.opt.DeadlineMargin {
		return ErrDeadline
	}
	return nil
}
