package esm

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Run processes the stream until ctx ends, then stops every shard between invocations,
// saves the checkpoint and returns nil. It returns an error when the stream cannot be
// described at start, or when progress cannot be saved (checkpoint or on-failure
// destination). A Mapping runs once.
func (m *Mapping) Run(ctx context.Context) (err error) {
	m.mu.Lock()
	if m.running || m.stopped() {
		m.mu.Unlock()
		return errors.New("esm: a Mapping runs once")
	}
	m.running = true
	m.mu.Unlock()
	defer close(m.done)
	if m.cfg.CheckpointFile != "" {
		// Two runs reading into one checkpoint would each skip what the other saved.
		unlock, err := lockCheckpoint(m.cfg.CheckpointFile)
		if err != nil {
			return err
		}
		defer unlock() // after the checkpoint's last save, below
	}

	runCtx, fail := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		fail(nil)
		wg.Wait()
		if serr := m.ckpt.save(); err == nil {
			err = serr
		}
	}()

	if err := m.describe(runCtx); err != nil {
		return err
	}
	m.log.Info("esm: mapping started", "stream", m.cfg.StreamARN, "batchSize", m.cfg.BatchSize,
		"startingPosition", m.cfg.StartingPosition, "checkpoint", m.cfg.CheckpointFile)
	close(m.started)
	tick := time.NewTicker(m.describeInterval())
	defer tick.Stop()
	for {
		m.schedule(runCtx, &wg, fail)
		select {
		case <-runCtx.Done():
			if ctx.Err() != nil {
				m.log.Info("esm: mapping stopping", "stream", m.cfg.StreamARN)
				return nil
			}
			return context.Cause(runCtx)
		case <-m.wake:
		case <-m.refresh:
			m.redescribe(runCtx)
		case <-tick.C:
			m.redescribe(runCtx)
		}
	}
}

// redescribe looks for new shards (a parent closing opens children); errors are transient.
func (m *Mapping) redescribe(ctx context.Context) {
	if err := m.describe(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("esm: re-describing stream", "error", err)
	}
}

// describeInterval is how often shards are re-listed: ten polls, so new shards start soon
// after their parent closes without flooding DescribeStream.
func (m *Mapping) describeInterval() time.Duration {
	return 10 * m.cfg.PollInterval
}

// Started is closed once Run holds the checkpoint and has described the stream: from then
// on it runs until its context ends (or progress cannot be saved). A Run that fails at start
// (the checkpoint held by another run, the stream not found) returns without closing it.
func (m *Mapping) Started() <-chan struct{} { return m.started }

// stopped reports whether Run has returned.
func (m *Mapping) stopped() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}
