package esm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrCheckpointHeld is wrapped by Run when another run holds the checkpoint file's lock.
var ErrCheckpointHeld = errors.New("in use by another run")

// lockCheckpoint takes the lock of the checkpoint at path (path + ".lock", holding the
// holder's pid), so that two runs never read the same stream into one checkpoint: each
// would skip what the other saved. The lock goes with the process, however it ends.
func lockCheckpoint(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("esm: locking checkpoint %s: %w", path, err)
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("esm: locking checkpoint %s: %w", path, err)
	}
	if err := flock(f); err != nil {
		holder, _ := os.ReadFile(path + ".lock")
		f.Close()
		who := "another run"
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(holder))); perr == nil {
			who += " (pid " + strconv.Itoa(pid) + ")"
		}
		return nil, fmt.Errorf("esm: checkpoint %s is %w: %s reads the stream into it; stop it, or give this run its own checkpoint file: %w",
			path, ErrCheckpointHeld, who, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { funlock(f); f.Close() }, nil
}
