package chaos

import (
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// topN is n of rule post-recent-comments.
const topN = 3

// expectTop checks recentComments on every live post (rule post-recent-comments): the 3
// live comments of the post's partition greatest by createdAt (a number or a string),
// ties to the greater key (pk, then sk), newest first, each entry {pk, sk, createdAt,
// author, text} with author the comment's userName as the table holds it (the oracle
// checks that against the user where one exists, in expect) and text the model's; an
// attribute the comment lacks is absent from its entry. No list, or an empty one, when the
// post has no such comment. The entry size bound (1024 bytes) is never reached here: the
// generator's texts and names are a few dozen bytes. Written without the planner's code, so
// the check stays independent.
func (o *oracle) expectTop() {
	byPost := map[string][]topSource{}
	for _, k := range o.m.Live(Comment) {
		it, _ := o.m.Item(k)
		at := it["createdAt"]
		if rankOf(at) == 0 {
			continue
		}
		e := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK}, "createdAt": at}
		if t, ok := it["text"]; ok {
			e["text"] = t
		}
		if u := o.want[k]["userName"]; u != nil { // the author's name, where the author exists
			e["author"] = u
		} else if got, ok := o.table[k]; ok && got["userName"] != nil { // what the comment kept
			e["author"] = got["userName"]
		}
		byPost[k.PK] = append(byPost[k.PK], topSource{at: at, key: k.PK + "\x00" + k.SK, e: e})
	}
	for _, k := range o.m.Live(Post) {
		ss := byPost[k.PK]
		if w, ok := o.want[k]; ok && len(ss) > 0 {
			w["recentComments"] = &types.AttributeValueMemberL{Value: topList(ss, topN)}
		} else if ok {
			w["recentComments"] = nil // absent, or an empty list once it had entries
		}
	}
}

// topSource is one source of a top list: the value that orders it, its key (pk NUL sk) and
// its entry.
type topSource struct {
	at  types.AttributeValue
	key string
	e   map[string]types.AttributeValue
}

// topList returns the entries of the n sources of ss greatest by at, ties to the greater
// key, greatest first; never nil. It sorts ss.
func topList(ss []topSource, n int) []types.AttributeValue {
	sort.Slice(ss, func(i, j int) bool {
		if c := compareAV(ss[i].at, ss[j].at); c != 0 {
			return c > 0
		}
		return ss[i].key > ss[j].key
	})
	out := []types.AttributeValue{}
	for _, s := range ss[:min(n, len(ss))] {
		out = append(out, &types.AttributeValueMemberM{Value: s.e})
	}
	return out
}
