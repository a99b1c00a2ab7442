// Package opstest builds tables for the backfill and verify tests: the social example
// (rules/social.yaml) with every copy, mirror, count, sum, max, min and latest written correct — computed
// here, independently of the engine — and a way to corrupt a known set of them.
package opstest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/rules"
)

// Item is one table item.
type Item = map[string]types.AttributeValue

// Scale sizes a data set. About Users + 3.75*Posts + Comments + Groups + 2*Memberships +
// Folders + Files items, plus a day item per post and day with comments.
type Scale struct {
	Users, Posts, Comments, Groups, Memberships, Folders, Files int
}

// Small is a few thousand items: what `make test` can afford on two shared cores.
var Small = Scale{Users: 50, Posts: 150, Comments: 1200, Groups: 15, Memberships: 250, Folders: 15, Files: 350}

// Backfill is a couple of hundred sources: a backfill writes almost every target, and
// DynamoDB Local applies only some 20 single-item writes per second to the social table
// (it serializes them; five LSIs and two GSIs each), so backfill tests stay this size.
var Backfill = Scale{Users: 10, Posts: 24, Comments: 120, Groups: 4, Memberships: 30, Folders: 3, Files: 30}

// Tiny is for the command's tests.
var Tiny = Scale{Users: 10, Posts: 20, Comments: 100, Groups: 4, Memberships: 30, Folders: 3, Files: 30}

// Data is a generated table: its items by key, in a stable order.
type Data struct {
	items map[[2]string]Item
	order [][2]string
	rng   *rand.Rand
	posts int
}

// Items returns every item, in generation order.
func (d *Data) Items() []Item {
	out := make([]Item, 0, len(d.order))
	for _, k := range d.order {
		if it, ok := d.items[k]; ok {
			out = append(out, it)
		}
	}
	return out
}

// Len is the number of items.
func (d *Data) Len() int { return len(d.items) }

// Get returns the item at pk, sk (nil if none).
func (d *Data) Get(pk, sk string) Item { return d.items[[2]string{pk, sk}] }

func (d *Data) put(it Item) {
	k := [2]string{str(it["pk"]), str(it["sk"])}
	if _, ok := d.items[k]; !ok {
		d.order = append(d.order, k)
	}
	d.items[k] = it
}

func (d *Data) del(pk, sk string) { delete(d.items, [2]string{pk, sk}) }

// keys returns the keys of items whose pk and sk start with the prefixes, in order.
func (d *Data) keys(pkPrefix, skPrefix string) [][2]string {
	var out [][2]string
	for _, k := range d.order {
		if _, ok := d.items[k]; ok && hasPrefix(k[0], pkPrefix) && hasPrefix(k[1], skPrefix) {
			out = append(out, k)
		}
	}
	return out
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }

func str(v types.AttributeValue) string {
	if x, ok := v.(*types.AttributeValueMemberS); ok {
		return x.Value
	}
	return ""
}

// dayTTL is the ttl of rule post-daily-comments in rules/social.yaml.
const dayTTL = 3650 * 24 * time.Hour

func id(prefix string, i int) string { return fmt.Sprintf("%s%04d", prefix, i) }

// Raw returns the sources only, as an application writes them before any rule was applied:
// users, posts, comments (without copied names), groups, memberships (without group names),
// folders and files; no mirrors and no counters.
func Raw(seed uint64, sc Scale) *Data { return build(seed, sc, false) }

// Correct returns the same sources with every rule of rules/social.yaml applied: copies,
// mirrors and counters hold their true values. Some users and groups are deleted, so copies
// with onSourceDelete keep stale values, remove drops them, and counts into missing
// targets are skipped. Some copies carry a version attribute. Every count and sum target
// with a value other than 0 has a state item holding its values, and carries the version
// of its copy, as the stream processor leaves them (a state item's values are the truth a
// backfill repairs: a target that shows the right value over an empty state is wrong).
// Reserved items are mixed in.
func Correct(seed uint64, sc Scale) *Data { return build(seed, sc, true) }

func build(seed uint64, sc Scale, applied bool) *Data {
	d := &Data{items: map[[2]string]Item{}, rng: rand.New(rand.NewPCG(seed, 0xbacf11)), posts: sc.Posts}
	rng := d.rng
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := func() string { return base.Add(time.Duration(rng.IntN(86400*60)) * time.Second).Format(time.RFC3339) }
	userGone := func(u int) bool { return u%13 == 12 }
	groupGone := func(g int) bool { return g%7 == 6 }
	userName := func(u int) string { return fmt.Sprintf("User %d", u) }
	avatar := func(u int) string { return fmt.Sprintf("https://img.example/%s.png", id("u", u)) }

	postCount := map[int]int{}
	latestPost := map[int][3]string{} // createdAt, postId, title
	userComments := map[int]int{}
	postComments := map[int]int{}
	lastComment := map[int]string{} // post-last-comment: the greatest createdAt (RFC 3339 UTC sorts)
	recent := map[int][]Item{}      // post-recent-comments: every comment's entry, per post
	postDays := map[[2]string]int{} // post-daily-comments: POST#p, DAY#<UTC day>
	var dayOrder [][2]string
	groupMembers := map[int]int{}
	groupRoles := map[int]map[string]int{} // group -> role -> members holding it
	for u := 0; u < sc.Users; u++ {
		if !userGone(u) {
			d.put(Item{"pk": s("USER#" + id("u", u)), "sk": s("PROFILE"), "name": s(userName(u)), "avatar": s(avatar(u)),
				"email": s(id("u", u) + "@example.com")})
		}
	}
	for g := 0; g < sc.Groups; g++ {
		if !groupGone(g) {
			d.put(Item{"pk": s("GROUP#" + id("g", g)), "sk": s("METADATA"), "name": s(fmt.Sprintf("Group %d", g)),
				"description": s("about group " + strconv.Itoa(g))})
		}
	}
	for p := 0; p < sc.Posts; p++ {
		u := rng.IntN(sc.Users)
		status := "published"
		if rng.IntN(4) == 0 {
			status = "draft"
		}
		title := fmt.Sprintf("Post %d", p)
		at := ts()
		d.put(Item{"pk": s("POST#" + id("p", p)), "sk": s("METADATA"), "userId": s(id("u", u)), "title": s(title), "status": s(status),
			"createdAt": s(at)})
		if status == "published" {
			postCount[u]++
			// user-latest-post: the newest by createdAt, ties to the greater key (POST#{postId})
			if l, ok := latestPost[u]; !ok || at > l[0] || (at == l[0] && id("p", p) > l[1]) {
				latestPost[u] = [3]string{at, id("p", p), title}
			}
		}
		if applied {
			d.put(Item{"pk": s("USER#" + id("u", u)), "sk": s("POST#" + id("p", p)), "title": s(title), "status": s(status),
				"createdAt": s(at), "_dnv_user-posts": n(1000 + p)})
		}
	}
	// The global post count's one target (global-post-count), which the application puts:
	// every post counts, drafts included.
	stats := Item{"pk": s("STATS#global"), "sk": s("STATS")}
	if applied && sc.Posts > 0 {
		stats["postCount"] = n(sc.Posts)
		d.put(StateOf(stats, 1+sc.Posts, []string{"postCount"}, rules.RelayWatermarkAttr, n(50)))
	}
	d.put(stats)
	for c := 0; c < sc.Comments; c++ {
		p, u := rng.IntN(sc.Posts-1), rng.IntN(sc.Users) // the last post gets no comments
		at := ts()
		it := Item{"pk": s("POST#" + id("p", p)), "sk": s("COMMENT#" + at + "#" + id("c", c)),
			"gsi1pk": s("USER#" + id("u", u)), "gsi1sk": s("COMMENT#" + at), "text": s(fmt.Sprintf("comment %d", c)),
			"createdAt": s(at)}
		postComments[p]++
		if at > lastComment[p] {
			lastComment[p] = at
		}
		userComments[u]++
		dk := [2]string{"POST#" + id("p", p), "DAY#" + at[:len("2006-01-02")]}
		if postDays[dk] == 0 {
			dayOrder = append(dayOrder, dk)
		}
		postDays[dk]++
		if applied {
			if userGone(u) {
				it["userName"] = s("Former user") // keep: the last values stay
			} else {
				it["userName"], it["userAvatar"] = s(userName(u)), s(avatar(u))
			}
			if c%3 == 0 {
				it["_dnv_comment-author"] = n(5000 + c)
			}
			recent[p] = append(recent[p], Item{"pk": it["pk"], "sk": it["sk"], "createdAt": it["createdAt"], "author": it["userName"], "text": it["text"]})
		}
		d.put(it)
	}
	for m := 0; m < sc.Memberships; m++ {
		u, g := rng.IntN(sc.Users), rng.IntN(sc.Groups)
		mk := [2]string{"USER#" + id("u", u), "GROUP#" + id("g", g)}
		if _, dup := d.items[mk]; dup {
			continue
		}
		role := []string{"member", "member", "admin"}[rng.IntN(3)]
		joined := ts()
		ms := Item{"pk": s(mk[0]), "sk": s(mk[1]), "gsi2pk": s("GROUP#" + id("g", g)), "gsi2sk": s("USER#" + id("u", u)),
			"role": s(role), "joinedAt": s(joined)}
		if applied {
			if !groupGone(g) {
				ms["groupName"] = s(fmt.Sprintf("Group %d", g)) // remove: a deleted group's name is gone
			}
			mb := Item{"pk": s("GROUP#" + id("g", g)), "sk": s("USER#" + id("u", u)), "gsi1pk": s("USER#" + id("u", u)),
				"gsi1sk": s("MEMBER#" + id("g", g)), "role": s(role), "joinedAt": s(joined), "_dnv_group-members": n(7000 + m)}
			if userGone(u) {
				mb["userName"] = s("Former user")
			} else {
				mb["userName"] = s(userName(u))
			}
			d.put(mb)
			groupMembers[g]++
			if groupRoles[g] == nil {
				groupRoles[g] = map[string]int{}
			}
			groupRoles[g][role]++
		}
		d.put(ms)
	}
	folderFiles, folderBytes, folderLarge := map[int]int{}, map[int]int{}, map[int]int{}
	oldestUpload := map[int]string{}     // folder-oldest-upload: the least uploadedAt
	folderDays := map[[2]string][]Item{} // folder-daily-files: a folder's day -> its files' entries
	for f := 0; f < sc.Files; f++ {
		fo := rng.IntN(sc.Folders)
		size := rng.IntN(1<<20) + 1
		day := ts()[:10]
		d.put(Item{"pk": s("FOLDER#" + id("f", fo)), "sk": s("FILE#" + day + "#" + id("x", f)), "name": s(fmt.Sprintf("file-%d.pdf", f)),
			"size": n(size), "uploadedAt": s(day)})
		folderFiles[fo]++
		folderBytes[fo] += size
		if size >= 524288 { // folder-large-file-count: size gte 524288 (no file here is pinned, its other alternative)
			folderLarge[fo]++
		}
		dk := [2]string{"FOLDER#" + id("f", fo), "DAY#" + day}
		folderDays[dk] = append(folderDays[dk], Item{"pk": s(dk[0]), "sk": s("FILE#" + day + "#" + id("x", f)),
			"uploadedAt": s(day), "name": s(fmt.Sprintf("file-%d.pdf", f))})
		if o, ok := oldestUpload[fo]; !ok || day < o {
			oldestUpload[fo] = day
		}
	}
	for f := 0; f < sc.Folders; f++ {
		it := Item{"pk": s("FOLDER#" + id("f", f)), "sk": s("METADATA"), "name": s(fmt.Sprintf("Folder %d", f))}
		if applied && folderFiles[f] > 0 {
			it["fileCount"], it["totalBytes"] = n(folderFiles[f]), n(folderBytes[f])
			if folderLarge[f] > 0 {
				it["largeFileCount"] = n(folderLarge[f])
			}
			it["oldestUpload"] = s(oldestUpload[f])
		}
		d.put(it)
		if applied && folderFiles[f] > 0 {
			d.put(StateOf(it, 2+f%3, []string{"fileCount", "totalBytes", "largeFileCount"}, rules.WatermarkAttr, n(900+f)))
		}
	}
	if applied {
		// A day item per folder and day with files: the 2 uploaded last (ties: the greater
		// key), its version and its ttl.
		for dk, es := range folderDays {
			sort.Slice(es, func(i, j int) bool {
				return str(es[i]["uploadedAt"]) > str(es[j]["uploadedAt"]) ||
					str(es[i]["uploadedAt"]) == str(es[j]["uploadedAt"]) && str(es[i]["sk"]) > str(es[j]["sk"])
			})
			day, _ := time.Parse("2006-01-02", dk[1][len("DAY#"):])
			d.put(Item{"pk": s(dk[0]), "sk": s(dk[1]), "recentFiles": newestFiles(es, 2), "_dnt_folder-daily-files": n(1),
				"ttl": n(int(day.Add(24*time.Hour + dayTTL).Unix()))})
		}
	}
	if applied {
		for u := 0; u < sc.Users; u++ {
			if it := d.Get("USER#"+id("u", u), "PROFILE"); it != nil {
				if postCount[u] > 0 {
					it["postCount"] = n(postCount[u])
				}
				if l, ok := latestPost[u]; ok {
					it["latestPostTitle"], it["latestPostId"] = s(l[2]), s(l[1])
					it["_dnl_user-latest-post"] = s(l[0])
					it["_dnk_user-latest-post"] = s("USER#" + id("u", u) + "\x00POST#" + l[1])
				}
				if userComments[u] > 0 || u%2 == 0 {
					it["commentCount"] = n(userComments[u]) // sometimes an explicit 0
				}
				if postCount[u] > 0 || userComments[u] > 0 {
					d.put(StateOf(it, 1+u%4, []string{"postCount", "commentCount"}, rules.RelayWatermarkAttr, n(200+u)))
				}
			}
		}
		for p := 0; p < sc.Posts; p++ {
			it := d.Get("POST#"+id("p", p), "METADATA")
			if postComments[p] > 0 {
				it["commentCount"] = n(postComments[p])
				it["lastCommentAt"] = s(lastComment[p])
				it["recentComments"] = newest(recent[p], 3)
				it["_dnt_post-recent-comments"] = n(1 + p%4)
				d.put(StateOf(it, 1+p%5, []string{"commentCount"}, rules.WatermarkAttr, n(100+p)))
			}
		}
		// Day items exist for days with comments only (missingTarget: create); their ttl is
		// the end of the day plus the rule's 3650d.
		for i, dk := range dayOrder {
			day, _ := time.Parse("2006-01-02", dk[1][len("DAY#"):])
			it := Item{"pk": s(dk[0]), "sk": s(dk[1]), "commentCount": n(postDays[dk]),
				"ttl": n(int(day.Add(24*time.Hour + dayTTL).Unix()))}
			d.put(it)
			// A bucket's state item expires with it.
			d.put(StateOf(it, 1+i%3, []string{"commentCount"}, rules.WatermarkAttr, n(300+i), "ttl", it["ttl"]))
		}
		for g := 0; g < sc.Groups; g++ {
			if it := d.Get("GROUP#"+id("g", g), "METADATA"); it != nil && groupMembers[g] > 0 {
				// group-role-count: a reference item per role its members hold, in the
				// group's relay partition, and the number of roles beside the members.
				for role, k := range groupRoles[g] {
					ref := plan.DistinctRef(plan.Key{PK: str(it["pk"]), SK: "METADATA"}, "group-role-count", "S"+role)
					d.put(Item{"pk": s(ref.PK), "sk": s(ref.SK), "roleCount": n(k), rules.StateVersionAttr: n(k), rules.RelayWatermarkAttr: n(500 + g)})
				}
				it["memberCount"], it["roleCount"] = n(groupMembers[g]), n(len(groupRoles[g]))
				d.put(StateOf(it, 1+g%2, []string{"memberCount", "roleCount"}, rules.WatermarkAttr, n(400+g)))
			}
		}
		// The stream processor's own items: markers and a finished job; no rule reads them.
		for i := 0; i < 5; i++ {
			d.put(Item{"pk": s("_dn#m#event" + strconv.Itoa(i)), "sk": s("_dn#m#"), "seq": n(i), "ttl": n(1999999999)})
		}
	}
	return d
}

// newestFiles is the top list of es, sorted already: its first n.
func newestFiles(es []Item, n int) types.AttributeValue {
	l := &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	for _, e := range es[:min(n, len(es))] {
		l.Value = append(l.Value, &types.AttributeValueMemberM{Value: e})
	}
	return l
}

// newest is the top list of entries es: the n greatest by createdAt, then by key (pk, sk).
func newest(es []Item, n int) types.AttributeValue {
	key := func(it Item) string { return str(it["createdAt"]) + "\x01" + str(it["pk"]) + "\x00" + str(it["sk"]) }
	sort.Slice(es, func(i, j int) bool { return key(es[i]) > key(es[j]) })
	if len(es) > n {
		es = es[:n]
	}
	l := &types.AttributeValueMemberL{}
	for _, e := range es {
		l.Value = append(l.Value, &types.AttributeValueMemberM{Value: e})
	}
	return l
}

// Corruption is what Corrupt changed: the drifted items per rule and the writes that
// make the table so (items to put whole, keys to delete).
type Corruption struct {
	PerRule map[string]int
	Puts    []Item
	Deletes [][2]string
	// Counters are the count and sum targets corrupted (changed or deleted), each with its
	// attributes: a repair sets them in the target's state item.
	Counters map[[2]string][]string
}

// counters are the count, sum and distinct rules of rules/social.yaml: the prefixes of their
// targets' keys and their attributes.
var counters = []struct{ rule, pk, sk, attr string }{
	{"post-comment-count", "POST#", "METADATA", "commentCount"},
	{"user-post-count", "USER#", "PROFILE", "postCount"},
	{"group-member-count", "GROUP#", "METADATA", "memberCount"},
	{"folder-file-count", "FOLDER#", "METADATA", "fileCount"},
	{"folder-size", "FOLDER#", "METADATA", "totalBytes"},
	{"user-comment-count", "USER#", "PROFILE", "commentCount"},
	{"global-post-count", "STATS#", "STATS", "postCount"},
	{"post-daily-comments", "POST#", "DAY#", "commentCount"},
	{"group-role-count", "GROUP#", "METADATA", "roleCount"},
	{"folder-large-file-count", "FOLDER#", "METADATA", "largeFileCount"},
}

// Counters returns the count and sum targets holding a value other than 0, each with
// those of its attributes.
func (d *Data) Counters() map[[2]string][]string {
	out := map[[2]string][]string{}
	for _, c := range counters {
		for _, k := range d.keys(c.pk, c.sk) {
			if v, ok := d.items[k][c.attr].(*types.AttributeValueMemberN); ok && v.Value != "0" {
				out[k] = append(out[k], c.attr)
			}
		}
	}
	return out
}

// Corrupt damages about rate of each rule's targets (at least one per rule), each in a way
// that drifts only that rule, and returns what it did. d is changed too.
func (d *Data) Corrupt(rate float64) Corruption {
	c := Corruption{PerRule: map[string]int{}, Counters: map[[2]string][]string{}}
	pick := func(keys [][2]string, want func(Item) bool) [][2]string {
		var ok [][2]string
		for _, k := range keys {
			if want == nil || want(d.items[k]) {
				ok = append(ok, k)
			}
		}
		n := int(float64(len(ok))*rate + 0.5)
		if n < 1 {
			n = 1
		}
		d.rng.Shuffle(len(ok), func(i, j int) { ok[i], ok[j] = ok[j], ok[i] })
		if n > len(ok) {
			n = len(ok)
		}
		sort.Slice(ok[:n], func(i, j int) bool { return ok[i][0]+ok[i][1] < ok[j][0]+ok[j][1] })
		return ok[:n]
	}
	put := map[[2]string]bool{} // an item drifted for two rules is written once
	change := func(rule string, k [2]string, f func(Item)) {
		it := d.items[k]
		f(it)
		if !put[k] {
			put[k] = true
			c.Puts = append(c.Puts, it)
		}
		c.PerRule[rule]++
	}
	named := func(it Item) bool { return str(it["userName"]) != "Former user" }
	// Not a comment a post lists: its entry's author would drift post-recent-comments too.
	listed := map[string]bool{}
	for _, k := range d.keys("POST#", "METADATA") {
		if l, ok := d.items[k]["recentComments"].(*types.AttributeValueMemberL); ok {
			for _, e := range l.Value {
				listed[str(e.(*types.AttributeValueMemberM).Value["sk"])] = true
			}
		}
	}
	for _, k := range pick(d.keys("POST#", "COMMENT#"), func(it Item) bool { return named(it) && !listed[str(it["sk"])] }) {
		change("comment-author", k, func(it Item) {
			if d.rng.IntN(2) == 0 {
				it["userName"] = s("Wrong name")
			} else {
				delete(it, "userAvatar")
			}
		})
	}
	for _, k := range pick(d.keys("GROUP#", "USER#"), named) {
		change("member-name", k, func(it Item) { it["userName"] = s("Wrong name") })
	}
	for _, k := range pick(d.keys("GROUP#", "USER#"), nil) {
		change("group-members", k, func(it Item) { it["role"] = s("owner") })
	}
	withGroup := func(it Item) bool { return it["groupName"] != nil }
	for _, k := range pick(d.keys("USER#", "GROUP#"), withGroup) {
		change("membership-group-name", k, func(it Item) { it["groupName"] = s("Wrong group") })
	}
	for _, k := range d.keys("USER#", "GROUP#") {
		if !withGroup(d.items[k]) { // a membership of a deleted group: its name must be gone
			change("membership-group-name", k, func(it Item) { it["groupName"] = s("Deleted group") })
			break
		}
	}
	// Not a user's newest post: changing or deleting that one would drift user-latest-post too.
	notLatest := func(it Item) bool {
		u := d.items[[2]string{str(it["pk"]), "PROFILE"}]
		return u == nil || str(u["_dnk_user-latest-post"]) != str(it["pk"])+"\x00"+str(it["sk"])
	}
	posts := pick(d.keys("USER#", "POST#"), notLatest)
	for i, k := range posts {
		if i == 0 && len(posts) > 1 {
			c.Deletes = append(c.Deletes, k)
			d.del(k[0], k[1])
			c.PerRule["user-posts"]++
			continue
		}
		change("user-posts", k, func(it Item) { it["title"] = s("Wrong title") })
	}
	orphan := Item{"pk": s("USER#" + id("u", 0)), "sk": s("POST#p9999"), "title": s("Deleted post"), "status": s("published")}
	d.put(orphan)
	c.Puts = append(c.Puts, orphan)
	c.PerRule["user-posts"]++
	counter := func(rule, pk, sk, attr string) {
		nonZero := func(it Item) bool {
			v, ok := it[attr].(*types.AttributeValueMemberN)
			return ok && v.Value != "0"
		}
		for _, k := range pick(d.keys(pk, sk), nonZero) {
			c.Counters[k] = append(c.Counters[k], attr)
			change(rule, k, func(it Item) {
				switch d.rng.IntN(3) {
				case 0:
					delete(it, attr)
				case 1:
					it[attr] = n(0)
				default:
					it[attr] = n(7777)
				}
			})
		}
	}
	for _, ct := range counters {
		if ct.rule != "post-daily-comments" { // below, after a day item is deleted
			counter(ct.rule, ct.pk, ct.sk, ct.attr)
		}
	}
	// A max or min removed, or set to a value no source holds.
	extreme := func(rule, pk, attr, wrong string) {
		for _, k := range pick(d.keys(pk, "METADATA"), func(it Item) bool { return it[attr] != nil }) {
			change(rule, k, func(it Item) {
				if d.rng.IntN(2) == 0 {
					delete(it, attr)
				} else {
					it[attr] = s(wrong)
				}
			})
		}
	}
	extreme("post-last-comment", "POST#", "lastCommentAt", "1999-01-01T00:00:00Z")
	extreme("folder-oldest-upload", "FOLDER#", "oldestUpload", "2099-01-01")
	for _, k := range pick(d.keys("USER#", "PROFILE"), func(it Item) bool { return it["latestPostTitle"] != nil }) {
		change("user-latest-post", k, func(it Item) {
			switch d.rng.IntN(3) {
			case 0:
				delete(it, "latestPostTitle")
			case 1:
				it["latestPostTitle"] = s("An older post")
			default:
				it["latestPostId"] = s("p9998") // the key variable of another post
			}
		})
	}
	for _, k := range pick(d.keys("POST#", "METADATA"), func(it Item) bool { return it["recentComments"] != nil }) {
		change("post-recent-comments", k, func(it Item) {
			l := it["recentComments"].(*types.AttributeValueMemberL)
			switch {
			case d.rng.IntN(2) == 0:
				delete(it, "recentComments")
			case len(l.Value) > 1:
				it["recentComments"] = &types.AttributeValueMemberL{Value: l.Value[1:]} // the newest left out
			default:
				it["recentComments"] = &types.AttributeValueMemberL{}
			}
		})
	}
	// A folder's day list: one entry left out, or the list removed.
	for _, k := range pick(d.keys("FOLDER#", "DAY#"), nil) {
		change("folder-daily-files", k, func(it Item) {
			if l := it["recentFiles"].(*types.AttributeValueMemberL); len(l.Value) > 1 && d.rng.IntN(2) == 0 {
				it["recentFiles"] = &types.AttributeValueMemberL{Value: l.Value[1:]}
			} else {
				delete(it, "recentFiles")
			}
		})
	}
	// A day item deleted: verify finds it missing (the rule creates its targets).
	if days := d.keys("POST#", "DAY#"); len(days) > 0 {
		k := days[d.rng.IntN(len(days))]
		c.Counters[k] = append(c.Counters[k], "commentCount")
		c.Deletes = append(c.Deletes, k)
		d.del(k[0], k[1])
		c.PerRule["post-daily-comments"]++
	}
	counter("post-daily-comments", "POST#", "DAY#", "commentCount")
	// The last post has no comments: a count there is drift with a true value of 0.
	last := [2]string{"POST#" + id("p", d.posts-1), "METADATA"}
	c.Counters[last] = append(c.Counters[last], "commentCount")
	change("post-comment-count", last, func(it Item) { it["commentCount"] = n(4) })
	return c
}
