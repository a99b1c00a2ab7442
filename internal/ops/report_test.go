package ops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// topList is a top list of n comments, the last one's text given.
func topList(n int, last string) types.AttributeValue {
	var l []types.AttributeValue
	for i := range n {
		text := fmt.Sprintf("comment number %d", i)
		if i == n-1 {
			text = last
		}
		l = append(l, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"pk": S("POST#p1"), "sk": S(fmt.Sprintf("COMMENT#%02d", i)), "text": S(text)}})
	}
	return &types.AttributeValueMemberL{Value: l}
}

// Two long values that begin alike (top lists) print differently in the text report,
// from a little before where they differ; short ones print whole.
func TestExampleTextShowsTheDifference(t *testing.T) {
	ex := Example{PK: "POST#p1", SK: "POST", Problem: Differs, Attribute: "recent",
		Got: avJSON{topList(5, "old text")}, Want: avJSON{topList(5, "new text")}}
	line := ex.text()
	got, want, ok := strings.Cut(strings.TrimPrefix(line, "POST#p1 POST: recent is "), ", want ")
	if !ok || got == want {
		t.Fatalf("the two values print the same: %s", line)
	}
	if !strings.Contains(got, "old text") || !strings.Contains(want, "new text") || !strings.HasPrefix(got, "...") {
		t.Errorf("the difference is not shown: %s", line)
	}
	if len(got) > showWidth+3 || len(want) > showWidth+3 {
		t.Errorf("values longer than %d: %s", showWidth, line)
	}
	short := Example{PK: "USER#1", SK: "PROFILE", Problem: Differs, Attribute: "postCount", Got: avJSON{N("2")}, Want: avJSON{N("4")}}
	if got := short.text(); got != "USER#1 PROFILE: postCount is 2, want 4" {
		t.Errorf("short values: %s", got)
	}
	name := Example{PK: "USER#1", SK: "PROFILE", Problem: Differs, Attribute: "name", Got: avJSON{S(strings.Repeat("é", 40))}, Want: avJSON{nil}}
	if got := name.text(); !strings.Contains(got, "...") || !strings.HasSuffix(got, "want absent") || !utf8Valid(got) {
		t.Errorf("long string: %s", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }
