package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
