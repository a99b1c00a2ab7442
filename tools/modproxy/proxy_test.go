package main

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/semver"
)

// TestWriteProxyServesTheTree serves this repository and reads the module zips back: each
// holds its module's files and none of a nested module's.
func TestWriteProxyServesTheTree(t *testing.T) {
	repo, err := OpenRepo("../..")
	if err != nil {
		t.Fatal(err)
	}
	version, err := repo.Version()
	if err != nil {
		t.Fatal(err)
	}
	if !semver.IsValid(version) {
		t.Fatalf("version %q is not a semantic version", version)
	}
	dir := t.TempDir()
	served, err := repo.WriteProxy(dir, version)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		module       string
		has, hasNone []string // files in the zip; prefixes of files it must not hold
		wantInServed bool
	}{
		{"github.com/denorm/denorm", []string{"go.mod", "functions/streamproc/main.go", "internal/rules/load.go"},
			[]string{"infra/", "examples/", "tools/"}, true},
		{"github.com/denorm/denorm/infra", []string{"go.mod", "go.sum", "denormcdk/construct.go"}, []string{"cdk.out/"}, true},
	} {
		i := slices.IndexFunc(served, func(s Served) bool { return s.Path == tc.module })
		if i < 0 {
			t.Errorf("%s is not served", tc.module)
			continue
		}
		s := served[i]
		if !strings.HasPrefix(s.ZipSum, "h1:") || !strings.HasPrefix(s.ModSum, "h1:") {
			t.Errorf("%s: sums %q %q", tc.module, s.ZipSum, s.ModSum)
		}
		base := filepath.Join(dir, filepath.FromSlash(tc.module), "@v", version)
		for _, ext := range []string{".info", ".mod"} {
			if _, err := os.Stat(base + ext); err != nil {
				t.Error(err)
			}
		}
		list, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(tc.module), "@v", "list"))
		if err != nil || string(list) != version+"\n" {
			t.Errorf("%s: list %q, %v", tc.module, list, err)
		}
		names := zipNames(t, base+".zip", tc.module+"@"+version+"/")
		for _, f := range tc.has {
			if !slices.Contains(names, f) {
				t.Errorf("%s zip lacks %s", tc.module, f)
			}
		}
		for _, n := range names {
			for _, p := range tc.hasNone {
				if strings.HasPrefix(n, p) {
					t.Errorf("%s zip holds %s", tc.module, n)
				}
			}
		}
	}
}

// zipNames lists a module zip's files without their module@version/ prefix.
func zipNames(t *testing.T, path, prefix string) []string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		n, ok := strings.CutPrefix(f.Name, prefix)
		if !ok {
			t.Fatalf("%s: %s outside %s", path, f.Name, prefix)
		}
		names = append(names, n)
	}
	return names
}

// TestVersion checks the rules Version enforces on the go.mod files and go.work.
func TestVersion(t *testing.T) {
	const work = "go 1.26\nuse (\n\t.\n\t./infra\n)\nreplace github.com/denorm/denorm v0.1.0 => ./\n"
	infra := func(version string) string {
		return "module github.com/denorm/denorm/infra\ngo 1.26\nrequire github.com/denorm/denorm " + version + "\n"
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // the version, or a substring of the error
	}{
		{"one version", map[string]string{"infra/go.mod": infra("v0.1.0"), "go.work": work}, "v0.1.0"},
		{"two versions", map[string]string{
			"infra/go.mod": infra("v0.1.0"),
			"tools/go.mod": "module github.com/denorm/denorm/tools\ngo 1.26\nrequire github.com/denorm/denorm v0.2.0\n",
			"go.work":      work,
		}, "at one version, found 2"},
		{"replace", map[string]string{"infra/go.mod": infra("v0.1.0") + "replace github.com/denorm/denorm => ../\n", "go.work": work},
			"a replace directive is ignored"},
		{"go.work without the replace", map[string]string{"infra/go.mod": infra("v0.1.0"), "go.work": "go 1.26\nuse .\n"},
			"want `replace github.com/denorm/denorm v0.1.0 => ./`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.files["go.mod"] = "module github.com/denorm/denorm\ngo 1.26\n"
			for name, content := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
				t.Fatalf("git init: %v: %s", err, out)
			}
			repo, err := OpenRepo(dir)
			if err != nil {
				t.Fatal(err)
			}
			v, err := repo.Version()
			got := v
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStripSums(t *testing.T) {
	goSum := filepath.Join(t.TempDir(), "go.sum")
	in := "github.com/aws/smithy-go v1.28.8 h1:a=\n" +
		"github.com/denorm/denorm v0.1.0 h1:b=\n" +
		"github.com/denorm/denorm v0.1.0/go.mod h1:c=\n" +
		"github.com/denorm/denorm/infra v0.1.0/go.mod h1:d=\n" +
		"github.com/denorm/denorm v0.0.9/go.mod h1:e=\n"
	os.WriteFile(goSum, []byte(in), 0o644)
	published := []Module{{Path: "github.com/denorm/denorm", Dir: "."}, {Path: "github.com/denorm/denorm/infra", Dir: "infra"}}
	if err := stripSums(goSum, published, "v0.1.0"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(goSum)
	want := "github.com/aws/smithy-go v1.28.8 h1:a=\ngithub.com/denorm/denorm v0.0.9/go.mod h1:e=\n"
	if string(got) != want {
		t.Errorf("go.sum:\n%s\nwant:\n%s", got, want)
	}
}
