package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

const (
	exampleDir      = "examples/existing-table"
	functionPackage = "github.com/denorm/denorm/functions/streamproc"
	exampleStream   = "arn:aws:dynamodb:eu-west-1:111122223333:table/Orders/stream/2026-01-01T00:00:00.000"
)

// TestExampleAppOutsideTheRepository synthesizes examples/existing-table as an app outside
// the repository would after the release: copied out of the tree (no go.work above it), its
// go.mod with plain requires of github.com/denorm/denorm and .../infra at the version, which
// the go command downloads from a proxy serving the working tree (WriteProxy) into a module
// cache of the test's own. `cdk synth` (the pinned CLI, infra/cdk.sh) runs the app, and the
// construct builds the function in the app's module: the cloud assembly must hold a linux/arm64
// bootstrap built from the served engine, next to the app's rules.
func TestExampleAppOutsideTheRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the app and the function and runs cdk synth")
	}
	repo, err := OpenRepo("../..")
	if err != nil {
		t.Fatal(err)
	}
	version, err := repo.Version()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	served, err := repo.WriteProxy(proxy, version)
	if err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(tmp, "app")
	copyExample(t, repo, app)
	required := requireOnlyAtVersion(t, filepath.Join(app, "go.mod"), version)

	// What `go mod tidy` adds to the app's go.sum from the checksum database after the release;
	// the repository's copy has every other line.
	var sums strings.Builder
	var engine Served
	for _, s := range served {
		if slices.Contains(required, s.Path) {
			sums.WriteString(s.GoSumLines())
		}
		if s.Dir == "." {
			engine = s
		}
	}
	f, err := os.OpenFile(filepath.Join(app, "go.sum"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(sums.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	vars, err := ProxyEnv(proxy, filepath.Join(tmp, "mod"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(repo.Root, "infra", "cdk.sh"), "synth", "-q", "--no-notices",
		"-c", "tableName=Orders", "-c", "streamArn="+exampleStream)
	cmd.Env = append(append(os.Environ(), vars...),
		"CDK_APP_DIR="+app,
		// readonly: go.mod and go.sum as committed (plus the lines above) must be enough.
		// -trimpath: packages built in this module cache reuse the build cache of earlier runs
		// (without it a package's directory is part of its cache key).
		"GOFLAGS=-modcacherw -mod=readonly -trimpath",
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20",
	)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cdk synth of %s outside the repository: %v\n%s", exampleDir, err, out)
	}
	t.Logf("cdk synth of %s outside the repository: %s", exampleDir, time.Since(start).Round(time.Second))

	cdkOut := filepath.Join(app, "cdk.out")
	asset := assetOf(t, cdkOut, "OrdersDenorm", "AWS::Lambda::Function")
	if names := dirNames(t, asset); !slices.Equal(names, []string{"rules.yaml"}) {
		t.Errorf("the function's asset holds %v, want rules.yaml", names)
	}
	rules, _ := os.ReadFile(filepath.Join(asset, "rules.yaml"))
	if want, _ := os.ReadFile(filepath.Join(app, "rules.yaml")); !bytes.Equal(rules, want) {
		t.Error("the asset's rules.yaml is not the app's rules.yaml")
	}
	runtime := assetOf(t, cdkOut, "OrdersDenorm", "AWS::Lambda::LayerVersion")
	if names := dirNames(t, runtime); !slices.Equal(names, []string{"bootstrap"}) {
		t.Errorf("the runtime layer's asset holds %v, want bootstrap", names)
	}
	checkBootstrap(t, filepath.Join(runtime, "bootstrap"), engine)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// copyExample copies the example's files (those of the working tree, not its cdk.out) to dst.
func copyExample(t *testing.T, repo *Repo, dst string) {
	t.Helper()
	for _, f := range repo.Files {
		rel, ok := strings.CutPrefix(f, exampleDir+"/")
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(repo.Root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// requireOnlyAtVersion checks that the app's go.mod requires both published modules at
// version and replaces nothing: the build must not reach into the repository. It returns the
// module paths the go.mod requires.
func requireOnlyAtVersion(t *testing.T, goMod, version string) []string {
	t.Helper()
	data, err := os.ReadFile(goMod)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(goMod, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Replace) > 0 {
		t.Fatalf("%s/go.mod has a replace directive", exampleDir)
	}
	for _, want := range []string{rootModulePath, rootModulePath + "/infra"} {
		i := slices.IndexFunc(f.Require, func(r *modfile.Require) bool { return r.Mod.Path == want })
		if i < 0 || f.Require[i].Mod.Version != version {
			t.Errorf("%s/go.mod does not require %s %s", exampleDir, want, version)
		}
	}
	var paths []string
	for _, r := range f.Require {
		paths = append(paths, r.Mod.Path)
	}
	return paths
}

// assetOf is the asset directory of the one resource of type typ (a function or a layer
// version) in the stack's template.
func assetOf(t *testing.T, cdkOut, stack, typ string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cdkOut, stack+".template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Type     string
			Metadata map[string]any
		}
	}
	if err := json.Unmarshal(data, &tmpl); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for id, r := range tmpl.Resources {
		if r.Type != typ {
			continue
		}
		dir, _ := r.Metadata["aws:asset:path"].(string)
		if !strings.HasPrefix(dir, "asset.") {
			t.Fatalf("%s %s: asset path %q", typ, id, dir)
		}
		dirs = append(dirs, filepath.Join(cdkOut, dir))
	}
	if len(dirs) != 1 {
		t.Fatalf("%d resources of type %s in %s, want 1", len(dirs), typ, stack)
	}
	return dirs[0]
}

// checkBootstrap checks that path is the function built for Lambda on arm64 from the engine's
// module as the proxy served it.
func checkBootstrap(t *testing.T, path string, engine Served) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o755 {
		t.Errorf("bootstrap mode %v, want 0755", st.Mode().Perm())
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatalf("bootstrap is not an ELF executable: %v", err)
	}
	if ef.Machine != elf.EM_AARCH64 || ef.Class != elf.ELFCLASS64 || ef.Type != elf.ET_EXEC {
		t.Errorf("bootstrap is %v %v %v, want an arm64 executable", ef.Class, ef.Machine, ef.Type)
	}
	ef.Close()
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bi.Path != functionPackage {
		t.Errorf("bootstrap is %s, want %s", bi.Path, functionPackage)
	}
	if bi.Main.Path != engine.Path || bi.Main.Version != engine.Version || bi.Main.Sum != engine.ZipSum {
		t.Errorf("bootstrap built from %s %s %s, want %s %s %s (the served tree)",
			bi.Main.Path, bi.Main.Version, bi.Main.Sum, engine.Path, engine.Version, engine.ZipSum)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"GOOS": "linux", "GOARCH": "arm64", "CGO_ENABLED": "0", "-tags": "lambda.norpc", "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("bootstrap built with %s=%q, want %q", k, settings[k], want)
		}
	}
}
