package chaos

import (
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// Mismatch is one way the table differs from what the application wrote plus what
// rules/social.yaml says Denorm keeps.
type Mismatch struct {
	Key  Key
	What string // "missing", "zombie", "attribute", "unfinished job"
	Attr string
	Got  string
	Want string
	// Cases are the application-class cases that touched the item (Model.Cases): where
	// the drift most likely comes from. None for items no such write touched.
	Cases []string
}

func (m Mismatch) String() string {
	s := fmt.Sprintf("%s %s %s: %s", m.What, m.Key.PK, m.Key.SK, m.Attr)
	if m.Got != "" || m.Want != "" {
		s += fmt.Sprintf(" = %s, want %s", m.Got, m.Want)
	}
	if len(m.Cases) > 0 {
		s += " [application: " + strings.Join(m.Cases, "; ") + "]"
	}
	return s
}

// ruleWritten lists, per kind, the attributes Denorm writes on items the application also
// writes: the application's value is not expected there.
var ruleWritten = map[Kind][]string{
	User:       {"postCount", "commentCount", "latestPostTitle", "latestPostId"},
	Post:       {"commentCount", "lastCommentAt", "recentComments"},
	Group:      {"memberCount", "roleCount"},
	Folder:     {"fileCount", "totalBytes", "largeFileCount", "oldestUpload"},
	Comment:    {"userName", "userAvatar"},
	Membership: {"groupName"},
	Stats:      {"postCount"},
}

// Oracle computes, from the model alone, every counter, sum, copy and mirror of
// rules/social.yaml, and compares the table with it: a check independent of the planner
// and of the verify engine (which both evaluate the rules file). Items Denorm reserves
// (_dn...) are ignored, except fan-out jobs, which must all have finished, and so are
// Denorm's attributes (_dn...) of every item.
//
// A counter or sum of a target that exists is the aggregate over the sources that exist
// and link to it, whatever the application wrote into it (Faults.Application): a target
// created after its sources, or deleted and put again, holds theirs. A target that does
// not exist must stay so (every count and sum rule of rules/social.yaml but one has
// missingTarget: skip). The one with create, post-daily-comments, counts comments into
// day items that only Denorm writes (expectDays). A post without userId counts into no user
// and has no mirror.
//
// folder-daily-files (expectFolderDays) is the top list of each folder's day bucket, with its
// ttl, over the live files of that day.
//
// folder-large-file-count counts the live files whose size is a number of at least
// largeFile (size gte 524288), compared here as an exact decimal, or whose pinned is the
// boolean true: its where's any of the two (bigFile).
//
// A distinct (group-role-count) is the number of different roles among the group's live
// memberships, whatever the order of their writes.
//
// A max or min (expectExtremes) is the extreme over the live sources, whatever the order:
// Denorm never creates the target and recomputes it when it is inserted or loses the
// attribute. A latest (expectLatest) copies from the newest
// live source, ties to the greater key, with the postId of that source's key. STATS#global's postCount (expectGlobal) counts every live post.
// A top list (expectTop) is the 3 newest live comments of the post, each entry built from
// the comment.
func Oracle(m *Model, table map[Key]record.Item) []Mismatch {
	o := &oracle{m: m, table: table}
	o.expectAll()
	o.compare()
	for i := range o.out {
		o.out[i].Cases = m.Cases(o.out[i].Key)
	}
	sort.Slice(o.out, func(i, j int) bool {
		a, b := o.out[i], o.out[j]
		if a.Key != b.Key {
			return a.Key.PK+"\x00"+a.Key.SK < b.Key.PK+"\x00"+b.Key.SK
		}
		return a.Attr < b.Attr
	})
	return o.out
}

type oracle struct {
	m     *Model
	table map[Key]record.Item
	want  map[Key]record.Item // every non-reserved item the table must hold, with the attributes checked
	extra map[Key][]string    // attributes the table item may hold beyond want
	out   []Mismatch
}

// expectAll fills o.want and o.extra with what every rule of rules/social.yaml says.
func (o *oracle) expectAll() {
	o.expect()
	o.expectExtremes()
	o.expectLatest()
	o.expectGlobal()
	o.expectDays()
	o.expectTop()
	o.expectFolderDays()
}

func (o *oracle) expect() {
	m := o.m
	o.want = map[Key]record.Item{}
	o.extra = map[Key][]string{}
	comments, authored, posts, members, files, large := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	bytes := map[string]*big.Rat{}
	for _, k := range m.Live(Comment) {
		it, _ := m.Item(k)
		comments[k.PK]++
		authored[str(it["gsi1pk"])]++
	}
	for _, k := range m.Live(Post) {
		it, _ := m.Item(k)
		if uid := str(it["userId"]); uid != "" && str(it["status"]) == "published" {
			posts["USER#"+uid]++
		}
	}
	roles := map[string]map[string]bool{} // group pk -> the roles its members hold
	for _, k := range m.Live(Membership) {
		g := "GROUP#" + strings.TrimPrefix(k.SK, "GROUP#")
		members[g]++
		it, _ := m.Item(k)
		if role, ok := it["role"].(*types.AttributeValueMemberS); ok { // the only type the workload writes
			if roles[g] == nil {
				roles[g] = map[string]bool{}
			}
			roles[g][role.Value] = true
		}
	}
	for _, k := range m.Live(File) {
		it, _ := m.Item(k)
		files[k.PK]++
		if bytes[k.PK] == nil {
			bytes[k.PK] = new(big.Rat)
		}
		if n, ok := it["size"].(*types.AttributeValueMemberN); ok {
			if r, ok := new(big.Rat).SetString(n.Value); ok {
				bytes[k.PK].Add(bytes[k.PK], r)
			}
		}
		if bigFile(it) {
			large[k.PK]++
		}
	}
	count := func(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(n)} }
	m.Items(func(k Key, it record.Item) {
		kind := KindOf(k, it)
		w := record.Item{}
		for a, v := range it {
			if !strings.HasPrefix(a, "_dn") {
				w[a] = v
			}
		}
		for _, a := range ruleWritten[kind] {
			delete(w, a)
		}
		o.extra[k] = ruleWritten[kind]
		switch kind {
		case User:
			w["postCount"] = count(posts[k.PK])
			w["commentCount"] = count(authored[k.PK])
		case Post:
			w["commentCount"] = count(comments[k.PK])
			if uid := str(it["userId"]); uid != "" { // no userId, no mirror
				mk := Key{"USER#" + uid, "POST#" + strings.TrimPrefix(k.PK, "POST#")}
				o.want[mk] = record.Item{"title": it["title"], "status": it["status"]}
				if at := it["createdAt"]; at != nil { // without it, the mirror must lack it too (not allowed extra)
					o.want[mk]["createdAt"] = at
				}
			}
		case Group:
			w["memberCount"] = count(members[k.PK])
			w["roleCount"] = count(len(roles[k.PK]))
		case Folder:
			w["fileCount"] = count(files[k.PK])
			w["largeFileCount"] = count(large[k.PK])
			total := bytes[k.PK]
			if total == nil {
				total = new(big.Rat)
			}
			w["totalBytes"] = &types.AttributeValueMemberN{Value: total.FloatString(2)}
		case Comment:
			if u, ok := m.Item(Key{str(it["gsi1pk"]), "PROFILE"}); ok {
				w["userName"], w["userAvatar"] = u["name"], u["avatar"]
			}
		case Membership:
			gid := strings.TrimPrefix(k.SK, "GROUP#")
			if gr, ok := m.Item(Key{"GROUP#" + gid, "METADATA"}); ok {
				w["groupName"] = gr["name"]
			} else {
				w["groupName"] = nil // onSourceDelete: remove
			}
			mk := Key{"GROUP#" + gid, k.PK}
			mirror := record.Item{"role": it["role"], "joinedAt": it["joinedAt"], "gsi1pk": &types.AttributeValueMemberS{Value: k.PK},
				"gsi1sk": &types.AttributeValueMemberS{Value: "MEMBER#" + gid}}
			if u, ok := m.Item(Key{k.PK, "PROFILE"}); ok {
				mirror["userName"] = u["name"]
			}
			o.want[mk] = mirror
			o.extra[mk] = []string{"userName"}
		}
		o.want[k] = w
	})
}

// largeFile is the bound of the first alternative of folder-large-file-count's where
// (size gte 524288).
var largeFile = big.NewRat(524288, 1)

// bigFile reports whether folder-large-file-count counts the file it: its size is a number
// of at least largeFile, or its pinned is the boolean true (any: [{size: {gte: 524288}},
// {pinned: true}]). Written out here, not evaluated by internal/value.
func bigFile(it record.Item) bool {
	if p, ok := it["pinned"].(*types.AttributeValueMemberBOOL); ok && p.Value {
		return true
	}
	n, ok := it["size"].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	r, ok := new(big.Rat).SetString(n.Value)
	return ok && r.Cmp(largeFile) >= 0
}

func (o *oracle) compare() {
	for k, it := range o.table {
		if strings.HasPrefix(k.PK, "_dn") { // Denorm's items, all outside the application's partitions
			if strings.HasPrefix(k.PK, "_dn#job#") {
				o.add(k, "unfinished job", "", "", "")
			}
			continue
		}
		if _, ok := o.want[k]; !ok {
			o.add(k, "zombie", "", render(it), "no item")
		}
	}
	for k, w := range o.want {
		it, ok := o.table[k]
		if !ok {
			o.add(k, "missing", "", "", render(w))
			continue
		}
		for a, v := range w {
			if !equalAV(it[a], v) {
				o.add(k, "attribute", a, renderAV(it[a]), renderAV(v))
			}
		}
		allowed := map[string]bool{"pk": true, "sk": true}
		for _, a := range o.extra[k] {
			allowed[a] = true
		}
		for a, v := range it {
			if _, checked := w[a]; !checked && !allowed[a] && !strings.HasPrefix(a, "_dn") {
				o.add(k, "attribute", a, renderAV(v), "absent")
			}
			if !ownAttr(a) {
				o.add(k, "reserved attribute on the application's item", a, renderAV(v), "absent")
			}
		}
	}
}

// ownAttr reports whether attribute a may be on an application's item: any but a reserved
// one, or the version of a copy (_dn_cv for counts and sums, _dnv_<rule> for copies and
// mirrors) and what a latest or top keeps with its value (_dnl_, _dnk_, _dnt_). Denorm's
// exactly-once state is in its own items.
func ownAttr(a string) bool {
	if !strings.HasPrefix(a, rules.ReservedPrefix) || a == rules.CopyVersionAttr {
		return true
	}
	for _, p := range []string{"_dnv_", "_dnl_", "_dnk_", "_dnt_"} {
		if strings.HasPrefix(a, p) {
			return true
		}
	}
	return false
}

func (o *oracle) add(k Key, what, attr, got, want string) {
	o.out = append(o.out, Mismatch{Key: k, What: what, Attr: attr, Got: got, Want: want})
}

// equalAV compares attribute values; numbers by value (DynamoDB normalizes them), a
// missing counter as zero, nil as absent.
func equalAV(got, want types.AttributeValue) bool {
	if want == nil {
		l, empty := got.(*types.AttributeValueMemberL) // a top list that emptied
		return got == nil || (empty && len(l.Value) == 0)
	}
	switch w := want.(type) {
	case *types.AttributeValueMemberL:
		g, ok := got.(*types.AttributeValueMemberL)
		if !ok || len(g.Value) != len(w.Value) {
			return false
		}
		for i := range w.Value {
			if !equalAV(g.Value[i], w.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberM:
		g, ok := got.(*types.AttributeValueMemberM)
		if !ok || len(g.Value) != len(w.Value) {
			return false
		}
		for a, v := range w.Value {
			if !equalAV(g.Value[a], v) {
				return false
			}
		}
		return true
	}
	wn, wok := want.(*types.AttributeValueMemberN)
	if wok {
		gv := "0"
		if gn, ok := got.(*types.AttributeValueMemberN); ok {
			gv = gn.Value
		} else if got != nil {
			return false
		}
		a, ok1 := new(big.Rat).SetString(gv)
		b, ok2 := new(big.Rat).SetString(wn.Value)
		return ok1 && ok2 && a.Cmp(b) == 0
	}
	return reflect.DeepEqual(got, want)
}

func renderAV(v types.AttributeValue) string {
	switch x := v.(type) {
	case nil:
		return "absent"
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("%q", x.Value)
	case *types.AttributeValueMemberN:
		return x.Value
	case *types.AttributeValueMemberM:
		return render(x.Value)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(x.Value))
		for i, e := range x.Value {
			parts[i] = renderAV(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%T", v)
}

func render(it record.Item) string {
	names := make([]string, 0, len(it))
	for a := range it {
		names = append(names, a)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("{")
	for i, a := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a + ": " + renderAV(it[a]))
	}
	b.WriteString("}")
	return b.String()
}

// oracleProblems reports the oracle's mismatches for Result.Problems. When application-class
// cases touched some of the items: how many mismatches each case's items have, then up to
// 20 mismatches on items no case touched (drift the class does not explain) and up to 3
// more of each case's (a mismatch is shown once). Otherwise the first 20.
func oracleProblems(ms []Mismatch) []string {
	var plain []Mismatch
	byCase := map[string][]Mismatch{}
	for _, m := range ms {
		if len(m.Cases) == 0 {
			plain = append(plain, m)
		}
		for _, c := range m.Cases {
			byCase[c] = append(byCase[c], m)
		}
	}
	var out []string
	cases := make([]string, 0, len(byCase))
	for c := range byCase {
		cases = append(cases, c)
	}
	sort.Strings(cases)
	if len(cases) > 0 {
		out = append(out, fmt.Sprintf("oracle: %d mismatches, %d of them on items no application-class case touched", len(ms), len(plain)))
		for _, c := range cases {
			out = append(out, fmt.Sprintf("oracle: %d on items the application touched by: %s", len(byCase[c]), c))
		}
	}
	for i, m := range plain {
		if i == 20 {
			out = append(out, fmt.Sprintf("oracle: ... %d more", len(plain)-20))
			break
		}
		out = append(out, "oracle: "+m.String())
	}
	shown := map[string]bool{}
	for _, c := range cases {
		n := 0
		for _, m := range byCase[c] {
			line := "oracle: " + m.String()
			if shown[line] {
				continue
			}
			if n == 3 {
				break
			}
			shown[line] = true
			out = append(out, line)
			n++
		}
	}
	return out
}
