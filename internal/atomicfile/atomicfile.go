// Package atomicfile writes files that a crash never leaves half written: checkpoints of
// the event source mapping emulator and of backfills.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data through a synced temporary file in the same folder and a
// rename, creating the folder if needed. A reader sees the old file or the new, never a mix.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
