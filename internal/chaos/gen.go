package chaos

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/workload"
)

// Options shape the workload beyond its size.
type Options struct {
	// PutOverCopies lets the application replace copy targets (comments, memberships) with
	// PutItem, dropping what Denorm copied into them (TestPutOverPushedCopyIsPulledAgain,
	// TestRedeliveredPullDoesNotStampAStaleItem). Off, such writes are UpdateItems of the
	// same attributes.
	PutOverCopies bool
	// Relink moves comments to another author while renames are processed
	// (TestPushAfterRelinkDoesNotLand).
	Relink bool
	// SparseComments says the rules declare the Comment entity's gsi1 keys sparse
	// (SparseComments, WriteSparseComments). With Faults.Application the application then
	// removes a comment's author keys, inserts comments without them, and sets them back.
	SparseComments bool
}

// Plan is a generated workload: the operations, phase after phase, and the model of the
// table they leave behind.
type Plan struct {
	Ops []workload.Op
	// Final are written after Ops have drained: deletes whose effect later changes would
	// hide (refills).
	Final []workload.Op
	Model *Model
	// PoisonRecords is how many stream records of the workload can never be applied.
	PoisonRecords int
	// Expiries is how many items the workload expires through TTL.
	Expiries int
	// Rounds is the number of chaos rounds after the base workload.
	Rounds int
	// Application counts the application-class writes (Faults.Application), by case.
	Application AppWrites
}

// Generate returns about n operations over the social example (rules/social.yaml), the
// same for the same seed and faults. The social workload (internal/workload) creates the
// population and churns it; then rounds follow, each in five phases (a phase starts when the
// one before it is written, so parents exist before their children):
//
//	create    short-lived users, posts, folders and groups (with a future ttl)
//	children  comments, files and memberships under them; poison records
//	churn     renames, comments added, re-linked, deleted, rewritten with a stale copy;
//	          membership churn and flapping; post status flips and author changes (in and
//	          out of user-post-count's where); file size changes, decimal sizes, sizes
//	          removed, files pinned and unpinned (in and out of folder-large-file-count's
//	          where through either alternative of its any); unwatched
//	          attribute updates; TTL expiry of comments, files and memberships
//	expire    TTL expiry (or deletion) of about half of the round's parents
//	after     deletes and size changes under the expired parents (their counters must not
//	          come back); deletion of the poison files
//
// With Faults.Application each round also leaves a counter target of every kind out of its
// create phase and puts it in churn, after its sources; churn and after then also re-put,
// delete and re-put, and falsify counter targets, and unlink posts (and, with
// Options.SparseComments, comments) from their parents (app.go, sparse.go).
func Generate(seed uint64, n int, f Faults, opt Options) *Plan {
	g := &gen{rng: rand.New(rand.NewPCG(seed, 0xc4a05)), m: NewModel(), f: f, opt: opt,
		base: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	sc := workload.Scale{
		Users: max(6, n/200), Posts: max(8, n/100), Comments: n / 15, Groups: max(3, n/1500),
		Memberships: n / 40, Folders: max(3, n/1500), Files: n / 40, Churn: n / 10,
	}
	for _, op := range workload.Social(seed, sc) {
		g.emit(op)
	}
	size := min(max(n/25, 150), 3000)
	for r := 0; len(g.ops) < n; r++ {
		g.round(r, min(size, max(n-len(g.ops), 60)))
	}
	n0 := len(g.ops)
	g.refills()
	return &Plan{Ops: g.ops[:n0], Final: g.ops[n0:], Model: g.m, PoisonRecords: g.poison, Expiries: g.expiries, Rounds: g.rounds,
		Application: g.app}
}

type gen struct {
	rng      *rand.Rand
	m        *Model
	f        Faults
	opt      Options
	base     time.Time
	ops      []workload.Op
	phase    string
	poison   int
	expiries int
	rounds   int
	seq      int // unique ids
	app      AppWrites
	deferred []deferred // application-class writes due later in the round
}

func (g *gen) emit(op workload.Op) {
	if op.Put != nil && !g.opt.PutOverCopies {
		k := keyOf(op.Put)
		if it, live := g.m.Item(k); live && (KindOf(k, it) == Comment || KindOf(k, it) == Membership) {
			set := make(map[string]types.AttributeValue, len(op.Put))
			for a, v := range op.Put {
				if a != "pk" && a != "sk" {
					set[a] = v
				}
			}
			op = workload.Op{Phase: op.Phase, Key: keyItem(k), Set: set}
		}
	}
	if g.phase != "" {
		op.Phase = g.phase
	}
	g.ops = append(g.ops, op)
	g.m.Apply(op)
}

func (g *gen) id(prefix string) string {
	g.seq++
	return fmt.Sprintf("%s%d", prefix, g.seq)
}

func (g *gen) ts() string {
	return g.base.Add(time.Duration(g.rng.IntN(86400*60)) * time.Second).Format(time.RFC3339)
}

// postAt is a post's createdAt: mostly any second of the 60 days, a third of the time
// midnight of one of the last two (an import), so that a user's newest posts tie and
// user-latest-post breaks the tie by key.
func (g *gen) postAt() string {
	if g.rng.IntN(3) == 0 {
		return g.base.Add(time.Duration(58+g.rng.IntN(2)) * 24 * time.Hour).Format(time.RFC3339)
	}
	return g.ts()
}

// sameAuthorAt returns the createdAt of the newest other live post by the author of p
// ("" if none).
func (g *gen) sameAuthorAt(p Key) string {
	it, _ := g.m.Item(p)
	uid, best := str(it["userId"]), ""
	for _, k := range g.m.Live(Post) {
		o, _ := g.m.Item(k)
		if at := str(o["createdAt"]); k != p && uid != "" && str(o["userId"]) == uid && at > best {
			best = at
		}
	}
	return best
}

// round writes one round of about size operations.
func (g *gen) round(r, size int) {
	g.rounds++
	start := len(g.ops)
	prefix := fmt.Sprintf("r%d", r)
	var users, posts, folders, groups []Key

	g.phase = prefix + "-create"
	for i := 0; i < size/100+1; i++ {
		u := g.id(prefix + "u")
		k := Key{"USER#" + u, "PROFILE"}
		g.emit(put("pk", k.PK, "sk", k.SK, "name", "Ephemeral "+u, "avatar", "https://img.example/"+u+".png",
			"email", u+"@example.com", "ttl", ttlFuture))
		users = append(users, k)
	}
	for i := 0; i < size/50+1; i++ {
		author, ok := g.m.pick(g.rng, User)
		if !ok {
			break
		}
		p := g.id(prefix + "p")
		k := Key{"POST#" + p, "METADATA"}
		g.emit(put("pk", k.PK, "sk", k.SK, "userId", strings.TrimPrefix(author.PK, "USER#"), "title", "Post "+p,
			"createdAt", g.postAt(), "status", g.status(), "ttl", ttlFuture))
		posts = append(posts, k)
	}
	for i := 0; i < size/200+1; i++ {
		fo := g.id(prefix + "f")
		k := Key{"FOLDER#" + fo, "METADATA"}
		g.emit(put("pk", k.PK, "sk", k.SK, "name", "Folder "+fo, "ttl", ttlFuture))
		folders = append(folders, k)
		gr := g.id(prefix + "g")
		k = Key{"GROUP#" + gr, "METADATA"}
		g.emit(put("pk", k.PK, "sk", k.SK, "name", "Group "+gr, "ttl", ttlFuture))
		groups = append(groups, k)
	}
	// Counter targets whose sources come first: they are put in the churn phase.
	var late []Key
	if g.f.Application {
		for _, kind := range targetKinds {
			late = append(late, g.lateKey(kind))
		}
	}

	g.phase = prefix + "-children"
	for i := 0; i < size/10 && len(posts) > 0; i++ {
		g.comment(posts[g.rng.IntN(len(posts))])
	}
	for i := 0; i < size/20; i++ {
		g.file(folders[g.rng.IntN(len(folders))])
		g.membership(groups[g.rng.IntN(len(groups))])
	}
	for _, k := range late {
		g.lateSources(k)
	}
	var poisonFiles []Key
	if g.f.Poison {
		for _, kind := range []byte{PoisonBadType, PoisonNoSeq, PoisonTruncated} {
			v := g.id("v")
			g.emit(put("pk", VoidFolder+v, "sk", "FILE#2025-01-01#"+v+string(kind), "name", "void", "size", 1))
			g.poison++
		}
		if fo, ok := g.m.pick(g.rng, Folder); ok {
			x := g.id("bad")
			k := Key{fo.PK, "FILE#" + g.ts()[:10] + "#" + x}
			g.emit(put("pk", k.PK, "sk", k.SK, "name", x+".pdf", "size", "12 kB"))
			poisonFiles = append(poisonFiles, k)
			g.poison += 2 // its INSERT now, its REMOVE in the after phase
		}
	}

	g.phase = prefix + "-churn"
	for _, k := range late {
		g.createLate(k)
		switch {
		case strings.HasPrefix(k.PK, "USER#"):
			users = append(users, k)
		case strings.HasPrefix(k.PK, "POST#"):
			posts = append(posts, k)
		case strings.HasPrefix(k.PK, "FOLDER#"):
			folders = append(folders, k)
		default:
			groups = append(groups, k)
		}
	}
	for len(g.ops)-start < size*8/10 {
		g.churn()
	}

	g.phase = prefix + "-expire"
	var gone []Key
	for _, list := range [][]Key{users, posts, folders, groups} {
		for i, k := range list {
			if _, live := g.m.Item(k); live && i%2 == 0 {
				g.expire(k)
				gone = append(gone, k)
			}
		}
	}

	g.phase = prefix + "-after"
	for _, parent := range gone {
		switch {
		case strings.HasPrefix(parent.PK, "POST#"):
			for _, c := range g.children(Comment, func(k Key) bool { return k.PK == parent.PK }) {
				if g.rng.IntN(2) == 0 {
					g.emit(del(c))
				}
			}
		case strings.HasPrefix(parent.PK, "FOLDER#"):
			for _, fk := range g.children(File, func(k Key) bool { return k.PK == parent.PK }) {
				if g.rng.IntN(2) == 0 {
					g.emit(del(fk))
				} else {
					g.emit(update(fk, "size", g.size()))
				}
			}
		case strings.HasPrefix(parent.PK, "GROUP#"):
			gid := strings.TrimPrefix(parent.PK, "GROUP#")
			for _, mk := range g.children(Membership, func(k Key) bool { return k.SK == "GROUP#"+gid }) {
				if g.rng.IntN(2) == 0 {
					g.emit(del(mk))
				}
			}
		case strings.HasPrefix(parent.PK, "USER#"):
			uid := strings.TrimPrefix(parent.PK, "USER#")
			for _, ck := range g.children(Comment, func(k Key) bool {
				it, _ := g.m.Item(k)
				return str(it["gsi1pk"]) == "USER#"+uid
			}) {
				if g.rng.IntN(3) == 0 {
					g.emit(del(ck))
				}
			}
		}
	}
	for _, k := range poisonFiles {
		g.emit(del(k))
	}
	if g.f.Application {
		g.appAfter()
	}
	g.phase = ""
}

// churn emits one random change (sometimes a few operations on one item).
func (g *gen) churn() {
	if g.f.Application {
		g.runDue(false)
		if g.rng.IntN(100) < 15 {
			g.appChurn()
			return
		}
	}
	pick := func(kind Kind) (Key, bool) { return g.m.pick(g.rng, kind) }
	switch k := g.rng.IntN(100); {
	case k < 12: // rename a user: comments and member items follow
		if u, ok := pick(User); ok {
			set := []any{"name", "User " + g.id("n")}
			if g.rng.IntN(3) == 0 {
				set = append(set, "avatar", "https://img.example/"+g.id("a")+".png")
			}
			g.emit(update(u, set...))
		}
	case k < 16:
		if gr, ok := pick(Group); ok {
			g.emit(update(gr, "name", "Group "+g.id("n")))
		}
	case k < 31:
		if p, ok := pick(Post); ok {
			g.comment(p)
		}
	case k < 34:
		if c, ok := pick(Comment); ok {
			g.emit(del(c))
		}
	case k < 37: // the newest comment of a post: post-recent-comments must refill its list
		if c, ok := pick(Comment); ok {
			newest, at := c, ""
			for _, o := range g.children(Comment, func(o Key) bool { return o.PK == c.PK }) {
				if it, _ := g.m.Item(o); str(it["createdAt"]) > at {
					newest, at = o, str(it["createdAt"])
				}
			}
			g.emit(del(newest))
		}
	case k < 41: // the application writes a stale copy of the author's name over the real one
		if c, ok := pick(Comment); ok {
			it, _ := g.m.Item(c)
			kv := []any{"pk", c.PK, "sk", c.SK, "text", "edited", "userName", "stale"}
			if at := str(it["createdAt"]); at != "" { // what post-last-comment reads stays
				kv = append(kv, "createdAt", at)
			}
			if str(it["gsi1pk"]) != "" { // a comment without author keys (SparseComments) stays so
				kv = append(kv, "gsi1pk", str(it["gsi1pk"]), "gsi1sk", str(it["gsi1sk"]))
			}
			g.emit(put(kv...))
		}
	case k < 44: // a comment moves to another author: counts move, the copy is pulled anew
		if c, ok := pick(Comment); ok && g.opt.Relink {
			if u, ok := pick(User); ok {
				set := []any{"gsi1pk", u.PK}
				if it, _ := g.m.Item(c); it["gsi1sk"] == nil { // back in the index, not just linked
					set = append(set, "gsi1sk", commentGSI1SKOf(c))
				}
				g.emit(update(c, set...))
			}
		}
	case k < 52:
		if gr, ok := pick(Group); ok {
			g.membership(gr)
		}
	case k < 57:
		if mk, ok := pick(Membership); ok {
			g.emit(del(mk))
		}
	case k < 60: // flapping: joined, left, joined again
		if gr, ok := pick(Group); ok {
			if mk := g.membership(gr); mk.PK != "" {
				g.emit(del(mk))
				g.membership(gr, mk)
			}
		}
	case k < 70: // in and out of user-post-count's where, sometimes with a new author
		if p, ok := pick(Post); ok {
			set := []any{"status", g.status()}
			if g.rng.IntN(3) == 0 {
				if u, ok := pick(User); ok {
					set = append(set, "userId", strings.TrimPrefix(u.PK, "USER#"))
				}
			}
			g.emit(update(p, set...))
		}
	case k < 73:
		if p, ok := pick(Post); ok {
			set := []any{"title", "Post " + g.id("t")}
			switch g.rng.IntN(3) {
			case 0: // backdated or moved forward: user-latest-post may change hands
				set = append(set, "createdAt", g.postAt())
			case 1: // the time of another post of its author: a tie, broken by key
				if at := g.sameAuthorAt(p); at != "" {
					set = append(set, "createdAt", at)
				}
			}
			g.emit(update(p, set...))
		}
	case k < 83: // a new file, or a new size or pin for one: in and out of folder-large-file-count's where
		if g.rng.IntN(2) == 0 {
			if fk, ok := pick(File); ok {
				switch g.rng.IntN(8) {
				case 0: // no size: out of the where unless pinned, adds nothing to the sum
					g.emit(workload.Op{Key: keyItem(fk), Remove: []string{"size"}})
				case 1, 2, 3:
					g.pin(fk)
				default:
					g.emit(update(fk, "size", g.size()))
				}
				return
			}
		}
		if fo, ok := pick(Folder); ok {
			g.file(fo)
		}
	case k < 87:
		if fk, ok := pick(File); ok {
			g.emit(del(fk))
		}
	case k < 90: // nothing any rule watches: the processor must write nothing
		if u, ok := pick(User); ok {
			g.emit(update(u, "email", g.id("e")+"@example.com"))
		}
	default: // TTL expiry of a leaf
		kinds := []Kind{Comment, File, Membership}
		if k, ok := pick(kinds[g.rng.IntN(len(kinds))]); ok {
			g.expire(k)
		}
	}
}

func (g *gen) status() string {
	if g.rng.IntN(3) == 0 {
		return "draft"
	}
	return "published"
}

// size is a file size: mostly whole bytes, sometimes with a fraction (sums are decimal),
// about half of them at or above folder-large-file-count's bound (524288); one in 8 is on
// the bound's edge: the bound itself, or a hundredth below it.
func (g *gen) size() any {
	switch g.rng.IntN(16) {
	case 0:
		return 524288
	case 1:
		return num("524287.99")
	}
	n := g.rng.IntN(1<<20) + 1
	if g.rng.IntN(8) == 0 {
		return num(strconv.Itoa(n) + "." + strconv.Itoa(g.rng.IntN(99)+1))
	}
	return n
}

func (g *gen) comment(post Key) {
	author, ok := g.m.pick(g.rng, User)
	if !ok {
		return
	}
	g.commentBy(post, author)
}

// commentBy puts a comment on post by the user whose profile key is author (which need
// not exist) and returns its key.
func (g *gen) commentBy(post, author Key) Key {
	at := g.ts()
	c := g.id("c")
	k := Key{post.PK, "COMMENT#" + at + "#" + c}
	g.emit(put("pk", k.PK, "sk", k.SK, "gsi1pk", author.PK, "gsi1sk", "COMMENT#"+at,
		"text", "comment "+c, "userName", "?", "createdAt", at, "ttl", ttlFuture))
	return k
}

func (g *gen) file(folder Key) {
	x := g.id("x")
	day := g.ts()[:10]
	kv := []any{"pk", folder.PK, "sk", "FILE#" + day + "#" + x, "name", x + ".pdf", "size", g.size(), "uploadedAt", day, "ttl", ttlFuture}
	if g.rng.IntN(4) == 0 { // counted by folder-large-file-count whatever its size
		kv = append(kv, "pinned", true)
	}
	g.emit(put(kv...))
}

// pin moves a file through the second alternative of folder-large-file-count's where
// (pinned: true): a file not pinned is pinned, a pinned one has pinned set to false or
// removed; or the file is made both large and pinned, then loses one of the two (still
// counted) and then the other (out).
func (g *gen) pin(fk Key) {
	unpin := workload.Op{Key: keyItem(fk), Remove: []string{"pinned"}}
	it, _ := g.m.Item(fk)
	p, _ := it["pinned"].(*types.AttributeValueMemberBOOL)
	switch r := g.rng.IntN(4); {
	case r < 3 && (p == nil || !p.Value):
		g.emit(update(fk, "pinned", true))
	case r == 0:
		g.emit(update(fk, "pinned", false))
	case r < 3:
		g.emit(unpin)
	default:
		g.emit(update(fk, "size", 600000+g.rng.IntN(1<<19), "pinned", true))
		lose := []workload.Op{unpin, update(fk, "size", g.rng.IntN(524288))}
		if g.rng.IntN(2) == 0 {
			lose[0] = update(fk, "pinned", false)
		}
		if g.rng.IntN(2) == 0 {
			lose[0], lose[1] = update(fk, "size", num("524287.99")), lose[0]
		}
		g.emit(lose[0])
		g.emit(lose[1])
	}
}

// membership puts a membership of a random user in group (or at the key given).
func (g *gen) membership(group Key, at ...Key) Key {
	gid := strings.TrimPrefix(group.PK, "GROUP#")
	var k Key
	if len(at) > 0 {
		k = at[0]
	} else {
		u, ok := g.m.pick(g.rng, User)
		if !ok {
			return Key{}
		}
		k = Key{u.PK, "GROUP#" + gid}
	}
	roles := []string{"member", "member", "admin"}
	g.emit(put("pk", k.PK, "sk", k.SK, "gsi2pk", "GROUP#"+gid, "gsi2sk", k.PK,
		"role", roles[g.rng.IntN(len(roles))], "joinedAt", g.ts(), "ttl", ttlFuture))
	return k
}

// expire lets the TTL process delete k: its ttl goes into the past, then it is deleted
// (DynamoDB Local never expires items; the hooks give the REMOVE the TTL identity). With
// TTL faults off it is a plain delete.
func (g *gen) expire(k Key) {
	if g.f.TTL {
		g.emit(update(k, "ttl", ttlExpired))
		g.expiries++
	}
	g.emit(del(k))
}

// refills deletes the newest comment of every post with more comments than
// post-recent-comments lists, once everything before has drained (Plan.Final): each full
// list must be refilled from its post's comments. Earlier such deletes are often healed by
// later changes to the comment left out (a rename's copy reaching it adds it back to a
// short list); these stand until the oracle looks.
func (g *gen) refills() {
	g.phase = "refills"
	byPost := map[string][]Key{}
	for _, c := range g.m.Live(Comment) {
		byPost[c.PK] = append(byPost[c.PK], c)
	}
	for _, p := range g.m.Live(Post) {
		cs := byPost[p.PK]
		if len(cs) <= topN {
			continue
		}
		newest, at := Key{}, ""
		for _, c := range cs {
			if it, _ := g.m.Item(c); str(it["createdAt"]) > at {
				newest, at = c, str(it["createdAt"])
			}
		}
		if at != "" {
			g.emit(del(newest))
		}
	}
	g.phase = ""
}

// children returns the live items of kind that keep passes, in a stable order.
func (g *gen) children(kind Kind, keep func(Key) bool) []Key {
	var out []Key
	for _, k := range g.m.Live(kind) {
		if keep(k) {
			out = append(out, k)
		}
	}
	return out
}

// num is a number attribute written as given (a decimal).
type num string

// put builds a Put from name/value pairs: strings, ints, nums and booleans.
func put(kv ...any) workload.Op {
	return workload.Op{Put: attrs(kv)}
}

func update(k Key, kv ...any) workload.Op {
	return workload.Op{Key: keyItem(k), Set: attrs(kv)}
}

func del(k Key) workload.Op { return workload.Op{Del: keyItem(k)} }

func keyItem(k Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK}}
}

func attrs(kv []any) map[string]types.AttributeValue {
	item := make(map[string]types.AttributeValue, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		switch v := kv[i+1].(type) {
		case string:
			item[name] = &types.AttributeValueMemberS{Value: v}
		case int:
			item[name] = &types.AttributeValueMemberN{Value: strconv.Itoa(v)}
		case num:
			item[name] = &types.AttributeValueMemberN{Value: string(v)}
		case bool:
			item[name] = &types.AttributeValueMemberBOOL{Value: v}
		default:
			panic(fmt.Sprintf("chaos: attribute %s of type %T", name, v))
		}
	}
	return item
}
