package table

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // fragment of the error; "" for a valid name
	}{
		{"Social", ""},
		{"my-table_1.v2", ""},
		{"abc", ""},
		{strings.Repeat("a", 255), ""},
		{"", "the name is empty"},
		{"ab", `"ab": too short (2 characters)`},
		{strings.Repeat("a", 256), "too long (256 characters)"},
		{"my table!", `"my table!": ' ' at offset 2 is not allowed`},
		{"tábla", `'á' at offset 1 is not allowed`},
		{"a/b", `'/' at offset 1`},
	} {
		err := CheckName(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckName(%.30q) = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadName)):
			t.Errorf("CheckName(%.30q) = %v, want ErrBadName with %q", tc.name, err, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), "3 to 255 characters of a-z A-Z 0-9 _ - ."):
			t.Errorf("CheckName(%.30q) = %v: does not say what a name may hold", tc.name, err)
		}
	}
}
