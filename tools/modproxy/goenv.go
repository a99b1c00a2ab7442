package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// ProxyEnv are the variables, to add to the environment, of a go command that builds
// outside the workspace (as an app outside the repository does) and resolves the
// repository's modules from the proxy at proxyDir, every other module as on this machine: from
// its module cache, then from its GOPROXY without `direct` (a module the proxy does not serve
// must not be looked up in the repository's remote instead).
//
// The module cache is modCache, made by linkModCache: the repository's modules change with
// the tree at one version, and a module cache keeps the first download of a version for good.
// GONOSUMDB spares the checksum database a lookup of them: they hash this tree, which no
// release has published.
func ProxyEnv(proxyDir, modCache string) ([]string, error) {
	abs, err := filepath.Abs(proxyDir)
	if err != nil {
		return nil, err
	}
	if modCache, err = filepath.Abs(modCache); err != nil {
		return nil, err
	}
	out, err := exec.Command("go", "env", "GOPROXY", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("go env GOPROXY GOMODCACHE printed %q", out)
	}
	if err := linkModCache(lines[1], modCache); err != nil {
		return nil, fmt.Errorf("module cache %s: %w", modCache, err)
	}
	proxies := []string{fileURL(abs)}
	for _, p := range strings.FieldsFunc(lines[0], func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" && p != "off" {
			proxies = append(proxies, p)
		}
	}
	return []string{
		"GOWORK=off",
		"GOMODCACHE=" + modCache,
		// Writable, so that the repository's modules extracted into it can be removed.
		"GOFLAGS=-modcacherw",
		"GOPROXY=" + strings.Join(proxies, ","),
		"GONOSUMDB=" + rootModulePath,
	}, nil
}

// linkModCache makes dir a module cache holding the machine's modules but not the
// repository's: every entry of the machine's module cache (and of its download cache) is a
// link to it, except the directory of the repository's owner (github.com/denorm), which the go
// command fills from the proxy. Extracting the CDK bindings again (25,000 files) would cost
// more than the rest of a build that the build cache serves.
func linkModCache(machine, dir string) error {
	owner := strings.Split(path.Dir(rootModulePath), "/")
	if err := linkTree(machine, dir, [][]string{{"cache"}, owner}); err != nil {
		return err
	}
	if err := linkTree(filepath.Join(machine, "cache"), filepath.Join(dir, "cache"), [][]string{{"download"}}); err != nil {
		return err
	}
	return linkTree(filepath.Join(machine, "cache", "download"), filepath.Join(dir, "cache", "download"), [][]string{owner})
}

// linkTree makes dst a directory of links to the entries of src, except the paths in skip
// (element lists relative to src): the directories leading to one are made real and filled
// the same way, and the path itself is left out.
func linkTree(src, dst string, skip [][]string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		var under [][]string
		skipped := false
		for _, s := range skip {
			if s[0] != name {
				continue
			}
			if len(s) == 1 {
				skipped = true
			} else {
				under = append(under, s[1:])
			}
		}
		switch {
		case skipped:
		case len(under) > 0:
			if err := linkTree(filepath.Join(src, name), filepath.Join(dst, name), under); err != nil {
				return err
			}
		default:
			if err := os.Symlink(filepath.Join(src, name), filepath.Join(dst, name)); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
	}
	return nil
}

// rootModulePath is the repository's root module; GONOSUMDB matches it and the modules
// under it.
const rootModulePath = "github.com/denorm/denorm"

func fileURL(dir string) string { return "file://" + filepath.ToSlash(dir) }
