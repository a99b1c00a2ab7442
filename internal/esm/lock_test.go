package esm

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// A checkpoint one run holds is refused to a second, with the holder's pid, and free again
// once the first lets go.
func TestCheckpointLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	path := filepath.Join(t.TempDir(), "t.checkpoint.json")
	unlock, err := lockCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockCheckpoint(path)
	if !errors.Is(err, ErrCheckpointHeld) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second lock: %v, want it held by pid %d", err, os.Getpid())
	}
	unlock()
	unlock2, err := lockCheckpoint(path)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock2()
}
