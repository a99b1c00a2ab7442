package plan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/value"
)

func topRule(t *testing.T) *rules.CompiledRule {
	t.Helper()
	for _, r := range socialSet(t).Compiled() {
		if r.Kind == rules.KindTop {
			return r
		}
	}
	t.Fatal("rules/social.yaml has no top rule")
	return nil
}

// entry is the top entry of comment id of post p1, created on day `day`.
func entry(t *testing.T, r *rules.CompiledRule, id string, day int, text string) value.TopEntry {
	t.Helper()
	at := fmt.Sprintf("2026-01-%02dT00:00:00Z", day)
	e, ok := plan.TopEntryOf(r, record.Item{"pk": s("POST#p1"), "sk": s("COMMENT#2026#" + id), "createdAt": s(at), "text": s(text)})
	if !ok {
		t.Fatalf("comment %s is no member", id)
	}
	return e
}

func ids(es []value.TopEntry) string {
	var out []string
	for _, e := range es {
		sk := e.Item["sk"].(*types.AttributeValueMemberS).Value
		out = append(out, sk[strings.LastIndex(sk, "#")+1:])
	}
	return strings.Join(out, ",")
}

// TopNext applies a batch to a stored list, and asks for a query exactly when an unlisted
// source may belong: a full list lost or lowered a listed entry.
func TestTopNext(t *testing.T) {
	r := topRule(t)
	e := func(id string, day int) value.TopEntry { return entry(t, r, id, day, "x") }
	full := []value.TopEntry{e("c", 9), e("b", 8), e("a", 7)}
	cases := []struct {
		name   string
		stored []value.TopEntry
		ups    []value.TopEntry
		left   []string
		want   string
		query  bool
	}{
		{"newer comment pushes the oldest out", full, []value.TopEntry{e("d", 10)}, nil, "d,c,b", false},
		{"older comment than the list", full, []value.TopEntry{e("d", 1)}, nil, "c,b,a", false},
		{"listed comment edited in place", full, []value.TopEntry{entry(t, r, "b", 8, "edited")}, nil, "c,b,a", false},
		{"listed comment moved later", full, []value.TopEntry{e("a", 11)}, nil, "a,c,b", false},
		{"listed comment moved earlier in a full list", full, []value.TopEntry{e("c", 1)}, nil, "b,a,c", true},
		{"listed comment deleted from a full list", full, nil, []string{e("b", 8).Key}, "c,a", true},
		{"unlisted comment deleted", full, nil, []string{e("z", 1).Key}, "c,b,a", false},
		{"listed comment deleted from a short list", full[:2], nil, []string{e("c", 9).Key}, "b", false},
		{"deleted and a newer one added", full, []value.TopEntry{e("d", 10)}, []string{e("a", 7).Key}, "d,c,b", true},
		{"first comment", nil, []value.TopEntry{e("a", 7)}, nil, "a", false},
		{"ties broken by key", nil, []value.TopEntry{e("a", 7), e("c", 7), e("b", 7), e("d", 7)}, nil, "d,c,b", false},
	}
	for _, tc := range cases {
		got, query := value.TopNext(r.Agg.N, append([]value.TopEntry(nil), tc.stored...), tc.ups, tc.left)
		if ids(got) != tc.want || query != tc.query {
			t.Errorf("%s: %s query=%v, want %s query=%v", tc.name, ids(got), query, tc.want, tc.query)
		}
	}
}

// A list reads back as written; anything else an application writes there is not a list
// of entries and makes the processor recompute it.
func TestDecodeTop(t *testing.T) {
	r := topRule(t)
	es := []value.TopEntry{entry(t, r, "b", 8, "x"), entry(t, r, "a", 7, "y")}
	got, ok := value.DecodeTop(r, value.TopList(es))
	if !ok || !value.SameTop(got, es) {
		t.Fatalf("round trip: %v %v", ok, ids(got))
	}
	if got, ok := value.DecodeTop(r, nil); !ok || len(got) != 0 {
		t.Errorf("absent list: %v %v", got, ok)
	}
	bad := map[string]types.AttributeValue{
		"a string":               s("recent"),
		"a list of strings":      &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x")}},
		"an entry without a key": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"createdAt": s("2026")}}}},
		"one source twice":       value.TopList([]value.TopEntry{es[0], es[0]}),
		"out of order":           value.TopList([]value.TopEntry{es[1], es[0]}),
		"longer than n":          value.TopList([]value.TopEntry{entry(t, r, "d", 9, ""), entry(t, r, "c", 8, ""), es[0], es[1]}),
	}
	for name, v := range bad {
		if _, ok := value.DecodeTop(r, v); ok {
			t.Errorf("%s decoded as a list of entries", name)
		}
	}
}

// An entry keeps the source's key and by value whatever their size; a set attribute that
// would pass EntryBytes is left out, and a later one that fits is kept.
func TestTopEntryBound(t *testing.T) {
	r := topRule(t)
	big := strings.Repeat("x", r.EntryBytes)
	at := "2026-01-01T00:00:00Z"
	item := record.Item{"pk": s("POST#p1"), "sk": s("COMMENT#" + at + "#c1"), "createdAt": s(at), "text": s(big), "userName": s("Ann")}
	vals := plan.TopValues(r, item)
	var names []string
	size := 0
	for _, a := range vals {
		names = append(names, a.Name)
		size += len(a.Name) + value.ItemSize(a.Value)
	}
	if got := strings.Join(names, ","); got != "pk,sk,createdAt,author" {
		t.Errorf("entry of a comment with a %d-byte text holds %s, want pk,sk,createdAt,author", len(big), got)
	}
	if size > r.EntryBytes {
		t.Errorf("entry of %d bytes, bound %d", size, r.EntryBytes)
	}
}
