package esm

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer keeps what a mapping logs, for tests that check a warning is (or is not) given.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// captureWarnings sets cfg's logger to keep warnings and errors (also shown in the test's
// output) and returns what it keeps.
func captureWarnings(t *testing.T, cfg *Config) *logBuffer {
	lb := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(lb, t.Output()), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return lb
}

const trimmedWarning = "trimmed from the stream"

// A new mapping (no checkpoint) on a new, empty shard: DynamoDB Local refuses its iterator
// as trimmed once the first record arrives with a later sequence number than the shard's
// start (several tables started at once share the sequence). Nothing was lost, so nothing
// is said; every record is delivered once, from either starting position.
func TestNewShardRefusedWithoutCheckpoint(t *testing.T) {
	for _, pos := range []StartingPosition{TrimHorizon, Latest} {
		t.Run(string(pos), func(t *testing.T) {
			f := newFakeStream()
			f.add("s", "", time.Now())
			f.startGap("s")
			cfg := fakeConfig(t)
			cfg.StartingPosition = pos
			logs := captureWarnings(t, &cfg)
			sn := &seen{}
			m := start(t, f, sn.handler(), cfg)
			// The iterator is taken and read while the shard is empty.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				if calls, _ := f.getCalls("s"); calls > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the mapping never read the shard")
				}
			}
			f.add("s", "", time.Now(), "s-1", "s-2", "s-3")
			drainFake(t, m)
			if got := sn.get(); !slices.Equal(got, []string{"s-1", "s-2", "s-3"}) {
				t.Errorf("delivered %v, want s-1 s-2 s-3 once each", got)
			}
			if _, refused := f.getCalls("s"); refused == 0 {
				t.Error("the iterator was never refused: the test did not run into the race")
			}
			if strings.Contains(logs.String(), trimmedWarning) {
				t.Errorf("warned of trimmed records though none were lost:\n%s", logs)
			}
		})
	}
}

// With a checkpoint, records after it that retention removed are lost: the mapping warns
// and goes on at the oldest record left.
func TestTrimmedAfterCheckpointWarns(t *testing.T) {
	f := newFakeStream()
	f.add("s", "", time.Now(), "s-1", "s-2")
	cfg := fakeConfig(t)
	cfg.CheckpointFile = filepath.Join(t.TempDir(), "ckpt.json")
	sn := &seen{}
	m, err := New(f, sn.handler(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, m)
	drainFake(t, m)
	stop()

	f.add("s", "", time.Now(), "s-3", "s-4", "s-5")
	f.trim("s", 4) // s-3 and s-4 were never delivered
	logs := captureWarnings(t, &cfg)
	sn2 := &seen{}
	m2 := start(t, f, sn2.handler(), cfg)
	drainFake(t, m2)
	if got := sn2.get(); !slices.Equal(got, []string{"s-5"}) {
		t.Errorf("after the trim delivered %v, want s-5", got)
	}
	if !strings.Contains(logs.String(), trimmedWarning) {
		t.Errorf("no warning of the trimmed records; logs:\n%s", logs)
	}
}
