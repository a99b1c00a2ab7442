package record

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
)

// A comment INSERT with 8 string attributes: the most common record the engine sees.
func BenchmarkDecode(b *testing.B) {
	raw := compactRecord(b, "comment_insert.json", 0)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// Every attribute type, old and new images: the worst ordinary case.
func BenchmarkDecodeAllTypes(b *testing.B) {
	raw := compactRecord(b, "all_types.json", 1)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSplitEvent(b *testing.B) {
	raw := compactRecord(b, "comment_insert.json", 0)
	records := make([][]byte, 100)
	for i := range records {
		records[i] = raw
	}
	payload := EncodeEvent(toRaw(records))
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SplitEvent(payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeChange(b *testing.B) {
	c, err := Decode(splitFile(b, filepath.Join("testdata", "comment_insert.json"))[0])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeChange(c, "", "us-east-1"); err != nil {
			b.Fatal(err)
		}
	}
}

func toRaw(bs [][]byte) (out []json.RawMessage) {
	for _, b := range bs {
		out = append(out, b)
	}
	return out
}

// compactRecord returns a testdata record without indentation, as Lambda delivers it.
func compactRecord(b *testing.B, file string, i int) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, splitFile(b, filepath.Join("testdata", file))[i]); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}
