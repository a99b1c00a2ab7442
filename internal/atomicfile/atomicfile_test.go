package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJSONRoundTrip(t *testing.T) {
	type doc struct {
		Version int               `json:"version"`
		Shards  map[string]string `json:"shards"`
	}
	path := filepath.Join(t.TempDir(), "sub", "cp.json")
	var got doc
	if found, err := ReadJSON(path, &got); found || err != nil {
		t.Fatalf("missing file: found %v, err %v", found, err)
	}
	want := doc{Version: 1, Shards: map[string]string{"s1": "100"}}
	if err := WriteJSON(path, want); err != nil {
		t.Fatal(err)
	}
	if found, err := ReadJSON(path, &got); !found || err != nil || got.Version != 1 || got.Shards["s1"] != "100" {
		t.Fatalf("read back %+v, found %v, err %v", got, found, err)
	}
	if err := os.WriteFile(path, []byte("{half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON(path, &got); err == nil || !strings.Contains(err.Error(), "is not valid JSON") {
		t.Errorf("half-written file: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
