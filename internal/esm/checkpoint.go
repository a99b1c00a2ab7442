package esm

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/denorm/denorm/internal/atomicfile"
	"github.com/denorm/denorm/internal/record"
)

// checkpointVersion is the file format's version, checked when loading.
const checkpointVersion = 1

// checkpointFile is what CheckpointFile holds.
type checkpointFile struct {
	Version   int                        `json:"version"`
	StreamARN string                     `json:"streamArn"`
	UpdatedAt time.Time                  `json:"updatedAt"`
	Shards    map[string]shardCheckpoint `json:"shards"`
}

// shardCheckpoint is one shard's progress.
type shardCheckpoint struct {
	// SequenceNumber is the last record fully processed (delivered, filtered out or sent to
	// the on-failure destination); reading resumes after it.
	SequenceNumber string `json:"sequenceNumber,omitempty"`
	// Completed is set once a closed shard was read to its end, so its children may start.
	Completed bool `json:"completed,omitempty"`
}

// checkpoint is the mapping's progress, saved to path (when set) after every change.
type checkpoint struct {
	path string
	mu   sync.Mutex
	data checkpointFile
}

// loadCheckpoint reads path. A missing file is an empty checkpoint; a checkpoint of another
// stream (the table was re-created, as on every start of scripts/dynamodb-local.sh) is
// ignored with a warning, because its sequence numbers mean nothing for this stream.
func loadCheckpoint(path, streamARN string, log *slog.Logger) (*checkpoint, error) {
	c := &checkpoint{path: path, data: checkpointFile{Version: checkpointVersion, StreamARN: streamARN, Shards: map[string]shardCheckpoint{}}}
	if path == "" {
		return c, nil
	}
	var f checkpointFile
	found, err := atomicfile.ReadJSON(path, &f)
	if err != nil {
		return nil, fmt.Errorf("esm: reading checkpoint: %w", err)
	}
	if !found {
		return c, nil
	}
	if f.Version != checkpointVersion {
		return nil, fmt.Errorf("esm: checkpoint %s has version %d, want %d", path, f.Version, checkpointVersion)
	}
	if f.StreamARN != streamARN {
		log.Warn("esm: checkpoint belongs to another stream; starting without it",
			"checkpoint", path, "checkpointStream", f.StreamARN, "stream", streamARN)
		return c, nil
	}
	if f.Shards != nil {
		c.data.Shards = f.Shards
	}
	return c, nil
}

func (c *checkpoint) empty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.data.Shards) == 0
}

func (c *checkpoint) get(shardID string) (shardCheckpoint, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.data.Shards[shardID]
	return s, ok
}

// advance records seq as processed on the shard and saves. A seq at or before the current
// one is ignored: bisected halves and trailing filtered records may repeat a position.
func (c *checkpoint) advance(shardID, seq string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.data.Shards[shardID]
	if seq == "" || (s.SequenceNumber != "" && record.CompareSeq(seq, s.SequenceNumber) <= 0) {
		return nil
	}
	s.SequenceNumber = seq
	c.data.Shards[shardID] = s
	return c.saveLocked()
}

// complete marks a closed shard as read to its end and saves.
func (c *checkpoint) complete(shardID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.data.Shards[shardID]
	if s.Completed {
		return nil
	}
	s.Completed = true
	c.data.Shards[shardID] = s
	return c.saveLocked()
}

// save writes the checkpoint, for shutdown.
func (c *checkpoint) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.saveLocked()
}

func (c *checkpoint) saveLocked() error {
	if c.path == "" {
		return nil
	}
	c.data.UpdatedAt = time.Now().UTC()
	if err := atomicfile.WriteJSON(c.path, c.data); err != nil {
		return fmt.Errorf("esm: saving checkpoint: %w", err)
	}
	return nil
}
