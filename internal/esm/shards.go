package esm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// shardState is what the scheduler knows of one shard. Guarded by Mapping.mu.
type shardState struct {
	id, parent string
	// startLatest: the shard existed when a mapping without checkpoint started at LATEST.
	startLatest bool
	// done: read to its end and processed, so its children may start.
	done    bool
	running bool
	// polledAt is when the last read that found the shard empty, with nothing pending, began.
	polledAt time.Time
}

// describe lists the stream's shards (every page) and merges them into the shard table.
func (m *Mapping) describe(ctx context.Context) error {
	start := time.Now()
	var shards []types.Shard
	var from *string
	for {
		out, err := m.api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{
			StreamArn: aws.String(m.cfg.StreamARN), ExclusiveStartShardId: from,
		})
		if err != nil {
			return fmt.Errorf("esm: describing stream %s: %w", m.cfg.StreamARN, err)
		}
		if out.StreamDescription == nil {
			return fmt.Errorf("esm: describing stream %s: empty description", m.cfg.StreamARN)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if from = out.StreamDescription.LastEvaluatedShardId; from == nil {
			break
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	first := m.described.IsZero()
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		if id == "" || m.shards[id] != nil {
			continue
		}
		s := &shardState{id: id, parent: aws.ToString(sh.ParentShardId)}
		closed := sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil
		cp, _ := m.ckpt.get(id)
		switch {
		case cp.Completed:
			s.done = true
		case first && m.fresh && m.cfg.StartingPosition == Latest:
			// LATEST skips what the stream holds when the mapping is created: closed shards
			// entirely, open ones up to their tip. Their completion is saved so a restart
			// does not read them from the start.
			if closed {
				s.done = true
				if err := m.ckpt.complete(id); err != nil {
					return err
				}
			} else {
				s.startLatest = true
			}
		}
		m.shards[id] = s
		m.log.Debug("esm: shard found", "shard", id, "parent", s.parent, "closed", closed, "done", s.done)
	}
	m.described = start
	return nil
}

// parentDone reports whether s may start: its parent is processed, or gone from the stream
// (trimmed after 24 hours, so nothing of it can be read anyway). Call with m.mu held.
func (m *Mapping) parentDone(s *shardState) bool {
	if s.parent == "" {
		return true
	}
	p, ok := m.shards[s.parent]
	return !ok || p.done
}

// schedule starts a worker for every shard that is ready: not done, not running, parent
// processed. Shards of unrelated lineages thus run concurrently, each strictly in order.
func (m *Mapping) schedule(ctx context.Context, wg *sync.WaitGroup, fail context.CancelCauseFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.shards {
		if s.done || s.running || !m.parentDone(s) {
			continue
		}
		s.running = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.runShard(ctx, s)
			m.mu.Lock()
			s.running = false
			m.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				fail(err)
				return
			}
			m.poke(m.wake)
		}()
	}
}

// poke signals ch without blocking; one pending signal is enough.
func (m *Mapping) poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// touch notes that records moved, for Drain.
func (m *Mapping) touch() {
	m.mu.Lock()
	m.activity = time.Now()
	m.mu.Unlock()
}

// polled notes that a read of s starting at t found nothing, for Drain.
func (m *Mapping) polled(s *shardState, t time.Time) {
	m.mu.Lock()
	s.polledAt = t
	m.mu.Unlock()
}
