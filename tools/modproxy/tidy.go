package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tidy runs `go mod tidy` in every module of the repository, outside the workspace, with
// the repository's own modules served at version from the working tree (see WriteProxy).
// It then removes their lines from each go.sum: those hash this tree, not the release an
// app downloads, whose lines `go mod tidy` adds from the checksum database.
func (r *Repo) Tidy(version string, log io.Writer) error {
	dir, err := os.MkdirTemp("", "denorm-modproxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	proxy, modCache := filepath.Join(dir, "proxy"), filepath.Join(dir, "mod")
	if _, err := r.WriteProxy(proxy, version); err != nil {
		return err
	}
	vars, err := ProxyEnv(proxy, modCache)
	if err != nil {
		return err
	}
	env := append(os.Environ(), vars...)
	for _, m := range r.Modules {
		fmt.Fprintf(log, "go mod tidy in %s\n", m.Dir)
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir = filepath.Join(r.Root, filepath.FromSlash(m.Dir))
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go mod tidy in %s: %w", m.Dir, err)
		}
		goSum := filepath.Join(cmd.Dir, "go.sum")
		if _, err := os.Stat(goSum); err != nil {
			continue // a module without dependencies has none
		}
		if err := stripSums(goSum, r.Published(), version); err != nil {
			return err
		}
	}
	return nil
}

// stripSums removes the lines of the published modules at version from a go.sum file.
func stripSums(goSum string, published []Module, version string) error {
	data, err := os.ReadFile(goSum)
	if err != nil {
		return err
	}
	var kept bytes.Buffer
	for _, line := range strings.SplitAfter(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && isPublished(f[0], published) && strings.TrimSuffix(f[1], "/go.mod") == version {
			continue
		}
		kept.WriteString(line)
	}
	return os.WriteFile(goSum, kept.Bytes(), 0o644)
}

func isPublished(modPath string, published []Module) bool {
	for _, m := range published {
		if m.Path == modPath {
			return true
		}
	}
	return false
}
