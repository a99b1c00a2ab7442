package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ProxyEnv are the variables, to add to the environment, of a go command that builds
// outside the workspace (as an app outside the repository does) and resolves the
// repository's modules from the proxy at proxyDir. Every other module comes, as on this
// machine, from its module cache's download directory (itself a proxy directory), then from
// its GOPROXY without `direct`: a module the proxy does not serve must not be looked up in the
// repository's remote instead.
//
// The module cache is modCache, not the machine's: the repository's modules change with the
// tree at one version, and a module cache keeps the first download of a version for good.
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
	proxies := []string{fileURL(abs), fileURL(filepath.Join(lines[1], "cache", "download"))}
	for _, p := range strings.FieldsFunc(lines[0], func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" && p != "off" {
			proxies = append(proxies, p)
		}
	}
	return []string{
		"GOWORK=off",
		"GOMODCACHE=" + modCache,
		// Writable, so that the temporary module cache can be removed.
		"GOFLAGS=-modcacherw",
		"GOPROXY=" + strings.Join(proxies, ","),
		"GONOSUMDB=" + rootModulePath,
	}, nil
}

// rootModulePath is the repository's root module; GONOSUMDB matches it and the modules
// under it.
const rootModulePath = "github.com/denorm/denorm"

func fileURL(dir string) string { return "file://" + filepath.ToSlash(dir) }

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
