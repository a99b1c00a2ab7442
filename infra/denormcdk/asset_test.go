package denormcdk

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeZip writes a zip holding files (name: content), each with mode 0755.
func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, content := range files {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(0o755)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestCheckCode(t *testing.T) {
	dir := t.TempDir()
	withBootstrap := filepath.Join(dir, "streamproc")
	os.Mkdir(withBootstrap, 0o755)
	os.WriteFile(filepath.Join(withBootstrap, "bootstrap"), []byte("bin"), 0o755)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	good := filepath.Join(dir, "streamproc.zip")
	writeZip(t, good, map[string]string{"bootstrap": "bin"})
	nested := filepath.Join(dir, "nested.zip")
	writeZip(t, nested, map[string]string{"streamproc/bootstrap": "bin"})
	notZip := filepath.Join(dir, "bootstrap.txt")
	os.WriteFile(notZip, []byte("bin"), 0o644)

	for _, tc := range []struct {
		name, code, want string // want: a substring of the error; "": no error
	}{
		{"directory", withBootstrap, ""},
		{"zip", good, ""},
		{"empty: built at synth", "", ""},
		{"missing", filepath.Join(dir, "missing"), "leave Code empty and the construct builds the function"},
		{"directory without bootstrap", empty, "no bootstrap in"},
		{"zip without bootstrap at its root", nested, "no bootstrap at the root of the zip file"},
		{"neither", notZip, "not a directory or a zip file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCode(tc.code)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}

	// Staging takes bootstrap out of the zip, executable.
	dst := filepath.Join(dir, "staged")
	if err := copyBootstrap(good, dst); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dst)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("staged bootstrap: %v %v, want mode 0755", st.Mode(), err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "bin" {
		t.Errorf("staged bootstrap holds %q", b)
	}
}
