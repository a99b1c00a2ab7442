package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// Module is one Go module of the repository.
type Module struct {
	Path string // module path, from its go.mod
	Dir  string // its directory, slash-separated, relative to the repository's root ("." for the root)
}

// Served is a module as the proxy serves it, with the go.sum lines an app gets for it.
type Served struct {
	Module
	Version string
	ZipSum  string // h1: hash of the module zip (the "path version h1:..." go.sum line)
	ModSum  string // h1: hash of its go.mod (the "path version/go.mod h1:..." line)
}

// GoSumLines are the two lines `go mod tidy` writes into an app's go.sum for s.
func (s Served) GoSumLines() string {
	return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", s.Path, s.Version, s.ZipSum, s.Path, s.Version, s.ModSum)
}

// Repo is a checkout of the repository: its files (tracked, and untracked but not ignored,
// as they are in the working tree) and its modules.
type Repo struct {
	Root    string
	Files   []string // slash-separated, relative to Root, sorted
	Modules []Module // sorted by Dir; the root module first
}

// OpenRepo lists the repository's files with git and reads the module path of every go.mod.
func OpenRepo(root string) (*Repo, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the files of %s: %w: %s", root, err, stderr.Bytes())
	}
	r := &Repo{Root: root}
	for _, f := range strings.Split(string(out), "\x00") {
		// A tracked file deleted from the working tree is no longer part of it.
		if f == "" || !fileExists(filepath.Join(root, filepath.FromSlash(f))) {
			continue
		}
		r.Files = append(r.Files, f)
	}
	slices.Sort(r.Files)
	r.Files = slices.Compact(r.Files)
	for _, f := range r.Files {
		if path.Base(f) != "go.mod" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		mp := modfile.ModulePath(data)
		if mp == "" {
			return nil, fmt.Errorf("%s: no module line", f)
		}
		r.Modules = append(r.Modules, Module{Path: mp, Dir: path.Dir(f)})
	}
	slices.SortFunc(r.Modules, func(a, b Module) int { return strings.Compare(a.Dir, b.Dir) }) // "." first
	if len(r.Modules) == 0 || r.Modules[0].Dir != "." {
		return nil, fmt.Errorf("%s: no go.mod at the root", root)
	}
	return r, nil
}

func fileExists(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

// Published are the modules an app can require: the root module and the modules whose path
// is under it (infra, tools/...). The examples are apps, with paths of their own.
func (r *Repo) Published() []Module {
	root := r.Modules[0].Path
	var mods []Module
	for _, m := range r.Modules {
		if m.Path == root || strings.HasPrefix(m.Path, root+"/") {
			mods = append(mods, m)
		}
	}
	return mods
}

// Version is the version at which the repository's go.mod files require its published
// modules, the version the next release tags. Every such requirement must name the same
// version, and go.work must point that version at the module's directory.
func (r *Repo) Version() (string, error) {
	published := map[string]Module{}
	for _, m := range r.Published() {
		published[m.Path] = m
	}
	versions := map[string][]string{} // version: "file requires path"
	for _, m := range r.Modules {
		name := path.Join(m.Dir, "go.mod")
		f, err := r.parseMod(name)
		if err != nil {
			return "", err
		}
		for _, req := range f.Require {
			if _, ok := published[req.Mod.Path]; ok {
				versions[req.Mod.Version] = append(versions[req.Mod.Version], name+" requires "+req.Mod.Path)
			}
		}
		if len(f.Replace) > 0 {
			return "", fmt.Errorf("%s: a replace directive is ignored when an app requires the module: resolve the repository's modules in go.work instead", name)
		}
	}
	if len(versions) != 1 {
		var lines []string
		for v, who := range versions {
			lines = append(lines, v+": "+strings.Join(who, ", "))
		}
		slices.Sort(lines)
		return "", fmt.Errorf("the go.mod files must require the repository's modules at one version, found %d:\n  %s", len(versions), strings.Join(lines, "\n  "))
	}
	var version string
	for v := range versions {
		version = v
	}
	return version, r.checkWork(version, published)
}

func (r *Repo) parseMod(name string) (*modfile.File, error) {
	data, err := os.ReadFile(filepath.Join(r.Root, filepath.FromSlash(name)))
	if err != nil {
		return nil, err
	}
	return modfile.Parse(name, data, nil)
}

// checkWork checks that go.work replaces version of every required published module with
// its directory (see the comment in go.work), so that the workspace builds what the proxy
// serves.
func (r *Repo) checkWork(version string, published map[string]Module) error {
	data, err := os.ReadFile(filepath.Join(r.Root, "go.work"))
	if err != nil {
		return err
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return err
	}
	var errs []error
	for p, m := range published {
		if !r.required(p) {
			continue
		}
		i := slices.IndexFunc(wf.Replace, func(rep *modfile.Replace) bool {
			return rep.Old.Path == p && rep.Old.Version == version
		})
		want := "./" + strings.TrimPrefix(m.Dir, ".")
		if i < 0 || path.Clean(wf.Replace[i].New.Path) != path.Clean(want) {
			errs = append(errs, fmt.Errorf("go.work: want `replace %s %s => %s`", p, version, want))
		}
	}
	return errors.Join(errs...)
}

// required reports whether a go.mod of the repository requires the module path.
func (r *Repo) required(modPath string) bool {
	for _, m := range r.Modules {
		f, err := r.parseMod(path.Join(m.Dir, "go.mod"))
		if err != nil {
			continue
		}
		for _, req := range f.Require {
			if req.Mod.Path == modPath {
				return true
			}
		}
	}
	return false
}

// WriteProxy writes a module proxy directory (GOPROXY=file://DIR, the layout of `go help
// goproxy`) serving every published module of the repository at version, from the working
// tree: what an app would download after the release. Each module's zip is made with
// golang.org/x/mod/zip, as the go command makes it, so it leaves out the files of nested
// modules and refuses what a real module zip cannot hold.
func (r *Repo) WriteProxy(dir, version string) ([]Served, error) {
	var served []Served
	for _, m := range r.Published() {
		s, err := r.writeModule(dir, m, version)
		if err != nil {
			return nil, fmt.Errorf("serving %s %s: %w", m.Path, version, err)
		}
		served = append(served, s)
	}
	return served, nil
}

func (r *Repo) writeModule(dir string, m Module, version string) (Served, error) {
	s := Served{Module: m, Version: version}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return s, err
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		return s, err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return s, err
	}
	base := filepath.Join(vdir, escVersion)

	mod, err := os.ReadFile(filepath.Join(r.Root, filepath.FromSlash(m.Dir), "go.mod"))
	if err != nil {
		return s, err
	}
	if err := os.WriteFile(base+".mod", mod, 0o644); err != nil {
		return s, err
	}
	s.ModSum, err = dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(mod)), nil
	})
	if err != nil {
		return s, err
	}

	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return s, err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return s, err
	}

	zf, err := os.Create(base + ".zip")
	if err != nil {
		return s, err
	}
	err = zip.Create(zf, module.Version{Path: m.Path, Version: version}, r.moduleFiles(m))
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return s, err
	}
	if s.ZipSum, err = dirhash.HashZip(base+".zip", dirhash.Hash1); err != nil {
		return s, err
	}
	return s, os.WriteFile(filepath.Join(vdir, "list"), []byte(version+"\n"), 0o644)
}

// moduleFiles are the repository's files under m's directory, relative to it. zip.Create
// drops those of nested modules (a directory holding a go.mod) itself.
func (r *Repo) moduleFiles(m Module) []zip.File {
	prefix := ""
	if m.Dir != "." {
		prefix = m.Dir + "/"
	}
	var files []zip.File
	for _, f := range r.Files {
		if rel, ok := strings.CutPrefix(f, prefix); ok {
			files = append(files, repoFile{rel: rel, abs: filepath.Join(r.Root, filepath.FromSlash(f))})
		}
	}
	return files
}

// repoFile is a file of the working tree as zip.Create reads it.
type repoFile struct{ rel, abs string }

func (f repoFile) Path() string                 { return f.rel }
func (f repoFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f repoFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
