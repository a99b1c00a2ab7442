package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/denorm/denorm/infra/jsiiexit"
)

// TestMain's synth started the jsii runtime; jsiiexit.End must find its directory to remove it.
func TestJsiiRuntimeDirFound(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: the runtime's directory is left in the temporary folder")
	}
	dirs, ok := jsiiexit.RuntimeDirs()
	if !ok || len(dirs) != 1 {
		t.Fatalf("jsii runtime directories of this process: %v, want one", dirs)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "bin", "jsii-runtime.js")); err != nil {
		t.Errorf("%s does not hold the runtime: %v", dirs[0], err)
	}
	if jsiiexit.ParentPID(os.Getpid()) != os.Getppid() {
		t.Errorf("jsiiexit.ParentPID(self) = %d, want %d", jsiiexit.ParentPID(os.Getpid()), os.Getppid())
	}
}
