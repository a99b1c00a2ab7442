package esm

import (
	"context"
	"errors"
	"time"
)

// ErrStopped is returned by Drain when Run ended before the stream drained.
var ErrStopped = errors.New("esm: mapping stopped")

// Drain waits until the stream is drained: after the call, the stream was described again,
// every shard that may run was read to its tip with nothing pending, and no record was read
// or delivered for idle. Writes made before the call, and the writes their processing
// causes, are then processed. It needs Run going in another goroutine, and returns ctx's
// error when records keep coming (or a batch keeps failing) until ctx ends.
func (m *Mapping) Drain(ctx context.Context, idle time.Duration) error {
	start := time.Now()
	m.poke(m.refresh)
	tick := time.NewTicker(min(max(idle/4, 5*time.Millisecond), 50*time.Millisecond))
	defer tick.Stop()
	for !m.drained(start, idle) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.done:
			return ErrStopped
		case <-tick.C:
		}
	}
	return nil
}

func (m *Mapping) drained(start time.Time, idle time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running || m.described.Before(start) {
		return false
	}
	quiet := start
	if m.activity.After(quiet) {
		quiet = m.activity
	}
	if time.Since(quiet) < idle {
		return false
	}
	for _, s := range m.shards {
		if s.done || !m.parentDone(s) {
			continue // finished, or waiting for a parent that is checked itself
		}
		// A shard that may run must be running and found empty after the last activity:
		// records written by the last delivery may sit in any shard.
		if !s.running || s.polledAt.Before(quiet) {
			return false
		}
	}
	return true
}
