package chaos

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// extreme is one max or min rule of rules/social.yaml whose sources share their target's
// partition: the target kind and attribute, the source kind and the value it compares.
type extreme struct {
	rule        string
	into, of    Kind
	attr, value string
	min         bool
}

// extremes are the max and min rules of rules/social.yaml.
var extremes = []extreme{
	{rule: "post-last-comment", into: Post, of: Comment, attr: "lastCommentAt", value: "createdAt"},
	{rule: "folder-oldest-upload", into: Folder, of: File, attr: "oldestUpload", value: "uploadedAt", min: true},
}

// expectExtremes sets, on every live target of a max or min rule, the greatest (least)
// value over the live sources in its partition, or absent when none has a number or string
// value (docs/rules.md, "max and min"). Equal values are the same extreme, so no tie-break
// is needed. A target inserted after its sources holds their extreme too: Denorm never
// creates one, and recomputes one when it is inserted or loses the attribute.
func (o *oracle) expectExtremes() {
	for _, x := range extremes {
		best := map[string]types.AttributeValue{}
		for _, k := range o.m.Live(x.of) {
			it, _ := o.m.Item(k)
			v := it[x.value]
			if rankOf(v) == 0 {
				continue
			}
			if b, ok := best[k.PK]; !ok || (!x.min && compareAV(v, b) > 0) || (x.min && compareAV(v, b) < 0) {
				best[k.PK] = v
			}
		}
		for _, k := range o.m.Live(x.into) {
			if w, ok := o.want[k]; ok {
				w[x.attr] = best[k.PK] // nil: no source, the attribute must be absent
			}
		}
	}
}

// expectLatest sets latestPostTitle on every live user (rule user-latest-post): the title
// of the newest published post mirrored to the user's page (user-posts: a live post with a
// userId), by createdAt; of two with the same createdAt, the one with the greater key (the
// mirrors share the user's pk, so the greater sk POST#{postId}). Absent when the user has
// no such post, or its newest one has no title (docs/rules.md, "latest"). latestPostId is
// that post's id as its mirror's key holds it (the key variable postId of POST#{postId}),
// absent when the user has no such post.
func (o *oracle) expectLatest() {
	type pick struct {
		at    types.AttributeValue
		sk    string
		title types.AttributeValue
	}
	newest := map[string]pick{}
	for _, k := range o.m.Live(Post) {
		it, _ := o.m.Item(k)
		uid, at := str(it["userId"]), it["createdAt"]
		if uid == "" || str(it["status"]) != "published" || rankOf(at) == 0 {
			continue
		}
		c := pick{at: at, sk: "POST#" + strings.TrimPrefix(k.PK, "POST#"), title: it["title"]}
		b, ok := newest["USER#"+uid]
		if !ok || compareAV(c.at, b.at) > 0 || (compareAV(c.at, b.at) == 0 && c.sk > b.sk) {
			newest["USER#"+uid] = c
		}
	}
	for _, k := range o.m.Live(User) {
		if w, ok := o.want[k]; ok {
			p, found := newest[k.PK]
			w["latestPostTitle"], w["latestPostId"] = p.title, nil // nil: absent
			if found {
				w["latestPostId"] = &types.AttributeValueMemberS{Value: strings.TrimPrefix(p.sk, "POST#")}
			}
		}
	}
}

// expectGlobal sets STATS#global's postCount (rule global-post-count): every live post,
// drafts and posts without userId included. The item is put before any post, is never
// deleted, and a post counted while it was missing would be parked and folded in, so the
// count is the live posts whatever the order.
func (o *oracle) expectGlobal() {
	for _, k := range o.m.Live(Stats) {
		if w, ok := o.want[k]; ok {
			w["postCount"] = &types.AttributeValueMemberN{Value: fmt.Sprint(len(o.m.Live(Post)))}
		}
	}
}

// rankOf orders the types max and min compare: numbers before strings; 0 for the rest,
// which no rule compares (written here, not taken from the planner, so the oracle stays an
// independent check).
func rankOf(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberN:
		if _, ok := new(big.Rat).SetString(x.Value); ok {
			return 1
		}
	case *types.AttributeValueMemberS:
		return 2
	}
	return 0
}

// compareAV compares two values rankOf accepts: numbers by value, strings byte by byte.
func compareAV(a, b types.AttributeValue) int {
	if ra, rb := rankOf(a), rankOf(b); ra != rb {
		return ra - rb
	}
	if x, ok := a.(*types.AttributeValueMemberN); ok {
		p, _ := new(big.Rat).SetString(x.Value)
		q, _ := new(big.Rat).SetString(b.(*types.AttributeValueMemberN).Value)
		return p.Cmp(q)
	}
	return strings.Compare(a.(*types.AttributeValueMemberS).Value, b.(*types.AttributeValueMemberS).Value)
}
