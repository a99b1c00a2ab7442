package denormcdk

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckFilterPatterns(t *testing.T) {
	const ok = `{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"USER#"}]}}}}`
	long := `{"dynamodb":{"Keys":{"pk":{"S":["` + strings.Repeat("x", MaxFilterPatternLength) + `"]}}}}`
	for _, tc := range []struct {
		name     string
		patterns []string
		max      int
		want     []string // substrings of the error; none: no error
	}{
		{"none", nil, 5, nil},
		{"at the limit", []string{ok, ok, ok, ok, ok}, 5, nil},
		{"raised quota", []string{ok, ok, ok, ok, ok, ok}, 10, nil},
		{"one too many", []string{ok, ok, ok, ok, ok, ok}, 5, []string{"need 6 event filters", "allows 5", "quota"}},
		{"too long", []string{long}, 5, []string{"event filter 1 is 4135 characters long, Lambda allows 4096"}},
		{"not JSON", []string{ok, `{"dynamodb":`}, 5, []string{"event filter 2 is not a JSON object"}},
		{"JSON array", []string{`[1]`}, 5, []string{"not a JSON object"}},
		{"anything-but prefix", []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"anything-but":{"prefix":"_dn"}}]}}}}`}, 5,
			[]string{"event filter 1", "anything-but takes values only"}},
		{"anything-but values", []string{`{"eventName":[{"anything-but":["REMOVE"]}]}`}, 5, nil},
		{"wildcard", []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"wildcard":"USER#*"}]}}}}`}, 5, []string{`operator "wildcard" is not supported`}},
		{"$or", []string{`{"$or":[{"eventName":["INSERT"]},{"eventName":["REMOVE"]}]}`}, 5, []string{`"$or" is not supported`}},
		{"every problem at once", []string{long, `x`, ok, ok, ok, ok}, 5, []string{"need 6", "event filter 1 is", "event filter 2 is not"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFilterPatterns(tc.patterns, tc.max)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if err := CheckFilterPatterns([]string{ok, ok}, 1); !errors.Is(err, ErrTooManyFilters) {
		t.Errorf("too many filters: %v is not ErrTooManyFilters", err)
	}
}

func TestFilterCriteriaKeepsOrder(t *testing.T) {
	fc := filterCriteria([]string{`{"a":[1]}`, `{"b":[2]}`})
	filters := fc.Filters.([]any)
	if len(filters) != 2 {
		t.Fatalf("%d filters, want 2", len(filters))
	}
}
