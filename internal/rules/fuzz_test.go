package rules

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that what it returns is coherent:
// a File always, and an error that is Problems with a message in each.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"../../rules/*.yaml", "testdata/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, path := range files {
			if data, err := os.ReadFile(path); err == nil {
				f.Add(data)
			}
		}
	}
	for _, s := range []string{
		"", "version: 1", "- a", "{", "version: 1\nentities: {A: {pk: \"{a}{b}\"}}",
		"version: 1\nentities:\n  A: &a {pk: \"A#{x}\", sk: A}\n  B: *a\n",
		"version: 1\nrules: [{name: r, count: {of: A, into: A, attribute: c, where: {x: .nan}}}]\n",
		"version: 1\ntable: {partitionKey: pk, globalIndexes: [{name: g, partitionKey: g, projection: include}]}\n",
		"version: 1\nentities: {A: {pk: \"A#{x}\", sk: A, gsi1pk: \"B#{y}\", sparse: [gsi1pk, sk, [x]]}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if file == nil {
			t.Fatal("Parse returned no File")
		}
		if err == nil {
			return
		}
		var ps Problems
		if !errors.As(err, &ps) || len(ps) == 0 {
			t.Fatalf("error %T is not Problems: %v", err, err)
		}
		for _, p := range ps {
			if p.Msg == "" || p.File != "fuzz.yaml" {
				t.Fatalf("problem without message or file: %#v", p)
			}
		}
	})
}
