package streamclient

import (
	"encoding/json"
	"testing"
)

// DynamoDB Local writes empty maps as {} in stream records; the repair restores DynamoDB's
// {"M":{}} at any depth, in keys and both images, and leaves everything else alone.
func TestRepairEmptyMaps(t *testing.T) {
	in := `{"Records":[{"eventID":"e1","dynamodb":{"ApproximateCreationDateTime":1795332780.000,` +
		`"Keys":{"pk":{"S":"a"}},"NewImage":{"pk":{"S":"a"},"l":{"L":[{},{"M":{"x":{}}}]},"m":{},"n":{"M":{"x":{}}},"s":{"S":"{}"}},` +
		`"OldImage":{"m":{}},"SequenceNumber":"000000000000000000003","SizeBytes":29}}],"NextShardIterator":"it"}`
	out, changed := RepairEmptyMaps([]byte(in))
	if !changed {
		t.Fatal("nothing repaired")
	}
	want := `{"NextShardIterator":"it","Records":[{"dynamodb":{"ApproximateCreationDateTime":1795332780.000,` +
		`"Keys":{"pk":{"S":"a"}},"NewImage":{"l":{"L":[{"M":{}},{"M":{"x":{"M":{}}}}]},"m":{"M":{}},"n":{"M":{"x":{"M":{}}}},"pk":{"S":"a"},"s":{"S":"{}"}},` +
		`"OldImage":{"m":{"M":{}}},"SequenceNumber":"000000000000000000003","SizeBytes":29},"eventID":"e1"}]}`
	if string(out) != want {
		t.Errorf("repaired\n%s\nwant\n%s", out, want)
	}
	if !json.Valid(out) {
		t.Error("not JSON")
	}
	for _, body := range []string{`{"Records":[{"dynamodb":{"NewImage":{"m":{"M":{}}}}}]}`, `{"Records":[]}`, `not json {}`} {
		if got, changed := RepairEmptyMaps([]byte(body)); changed || string(got) != body {
			t.Errorf("%s: changed to %s", body, got)
		}
	}
}
