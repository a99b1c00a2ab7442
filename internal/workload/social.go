// Package workload generates seeded, realistic writes for the social example
// (rules/social.yaml) as an application would make them: plain PutItem, UpdateItem and
// DeleteItem calls. The demo, the end-to-end tests and the benchmarks share it.
package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Op is one application write: a Put of Item, a Delete of Del, or an Update that sets the
// attributes of Set on the item at Key and removes those named in Remove. Ops of one phase
// may run in parallel; a phase starts when the one before it is done.
type Op struct {
	Phase  string
	Put    map[string]types.AttributeValue
	Del    map[string]types.AttributeValue
	Key    map[string]types.AttributeValue
	Set    map[string]types.AttributeValue
	Remove []string
}

// ItemKey returns the key of the item op writes.
func (op Op) ItemKey() map[string]types.AttributeValue {
	switch {
	case op.Put != nil:
		return map[string]types.AttributeValue{"pk": op.Put["pk"], "sk": op.Put["sk"]}
	case op.Del != nil:
		return op.Del
	}
	return op.Key
}

// Scale sizes a workload.
type Scale struct {
	Users, Posts, Comments, Groups, Memberships, Folders, Files int
	// Churn is the number of follow-up operations: renames, deletes, membership churn,
	// status flips and file size changes.
	Churn int
}

// Demo is the size `make demo` uses.
var Demo = Scale{Users: 40, Posts: 80, Comments: 800, Groups: 8, Memberships: 160, Folders: 8, Files: 240, Churn: 600}

// Social returns the operations of a seeded workload: first everything is created, then
// churned. The same seed gives the same operations.
func Social(seed uint64, sc Scale) []Op {
	g := &gen{rng: rand.New(rand.NewPCG(seed, 0x5eed)), base: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	// Parents before children, as an application creates them: counters of a target that
	// does not exist yet are skipped (missingTarget: skip). First the one global stats item
	// (global-post-count counts every post into it and does not create it).
	ops := []Op{put("create", "pk", "STATS#global", "sk", "STATS")}
	for u := 0; u < sc.Users; u++ {
		ops = append(ops, g.user(u, fmt.Sprintf("User %d", u)))
	}
	for gr := 0; gr < sc.Groups; gr++ {
		ops = append(ops, put("create", "pk", "GROUP#"+id("g", gr), "sk", "METADATA", "name", fmt.Sprintf("Group %d", gr)))
	}
	for f := 0; f < sc.Folders; f++ {
		ops = append(ops, put("create", "pk", "FOLDER#"+id("f", f), "sk", "METADATA", "name", fmt.Sprintf("Folder %d", f)))
	}
	for p := 0; p < sc.Posts; p++ {
		ops = append(ops, g.post(p, g.rng.IntN(sc.Users)))
		ops[len(ops)-1].Phase = "posts"
	}
	n := len(ops)
	for c := 0; c < sc.Comments; c++ {
		ops = append(ops, g.comment(c, g.rng.IntN(sc.Posts), g.rng.IntN(sc.Users)))
	}
	for m := 0; m < sc.Memberships; m++ {
		ops = append(ops, g.membership(g.rng.IntN(sc.Users), g.rng.IntN(sc.Groups)))
	}
	for f := 0; f < sc.Files; f++ {
		ops = append(ops, g.file(f, g.rng.IntN(sc.Folders)))
	}
	for i := n; i < len(ops); i++ {
		ops[i].Phase = "children"
	}
	for i := 0; i < sc.Churn; i++ {
		switch k := g.rng.IntN(100); {
		case k < 15: // rename a user: every comment and member item follows
			u := g.rng.IntN(sc.Users)
			ops = append(ops, update("USER#"+id("u", u), "PROFILE", "name", fmt.Sprintf("User %d (v%d)", u, i)))
		case k < 20:
			gr := g.rng.IntN(sc.Groups)
			ops = append(ops, update("GROUP#"+id("g", gr), "METADATA", "name", fmt.Sprintf("Group %d (v%d)", gr, i)))
		case k < 40:
			ops = append(ops, g.comment(sc.Comments+i, g.rng.IntN(sc.Posts), g.rng.IntN(sc.Users)))
		case k < 50 && len(g.comments) > 0:
			ops = append(ops, g.deleteComment())
		case k < 60:
			ops = append(ops, g.membership(g.rng.IntN(sc.Users), g.rng.IntN(sc.Groups)))
		case k < 70 && len(g.members) > 0:
			ops = append(ops, g.deleteMembership())
		case k < 80: // a status flip, sometimes with a new author
			p := g.rng.IntN(sc.Posts)
			status := []string{"published", "draft"}[g.rng.IntN(2)]
			ops = append(ops, update("POST#"+id("p", p), "METADATA", "status", status, "userId", id("u", g.rng.IntN(sc.Users))))
		case k < 92: // a new file, or a new version of one (a full put: files hold no counters)
			ops = append(ops, g.file(g.rng.IntN(sc.Files+i), g.rng.IntN(sc.Folders)))
		default:
			if len(g.files) > 0 {
				ops = append(ops, g.deleteFile())
			}
		}
		ops[len(ops)-1].Phase = "churn"
	}
	return append(ops, g.pinChurn()...)
}

// pinChurn moves two live files through folder-large-file-count's where by its second
// alternative (pinned: true): one made large and pinned loses pinned (still counted, by its
// size) and then its size (out); one small file is pinned (in) and unpinned (out).
func (g *gen) pinChurn() []Op {
	if len(g.files) < 2 {
		return nil
	}
	a, b := g.files[0], g.files[1]
	unpin := Op{Phase: "churn", Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: b[0]}, "sk": &types.AttributeValueMemberS{Value: b[1]}}, Remove: []string{"pinned"}}
	return []Op{
		update(a[0], a[1], "size", 900000, "pinned", true),
		update(a[0], a[1], "pinned", false),
		update(a[0], a[1], "size", 1000),
		update(b[0], b[1], "size", 2000, "pinned", true),
		unpin,
	}
}

type gen struct {
	rng      *rand.Rand
	base     time.Time
	comments [][2]string // pk, sk
	members  [][2]int
	files    [][2]string
	fileAt   map[int][2]string
	filePuts int // files put so far: every fifth is pinned, every fifth after it pinned: false
}

func id(prefix string, n int) string { return fmt.Sprintf("%s%04d", prefix, n) }

func (g *gen) user(u int, name string) Op {
	return put("create", "pk", "USER#"+id("u", u), "sk", "PROFILE", "name", name,
		"avatar", fmt.Sprintf("https://img.example/%s.png", id("u", u)), "email", id("u", u)+"@example.com")
}

func (g *gen) post(p, author int) Op {
	status := "published"
	if g.rng.IntN(4) == 0 {
		status = "draft"
	}
	return put("create", "pk", "POST#"+id("p", p), "sk", "METADATA", "userId", id("u", author),
		"title", fmt.Sprintf("Post %d", p), "status", status, "createdAt", g.ts())
}

func (g *gen) ts() string {
	return g.base.Add(time.Duration(g.rng.IntN(86400*30)) * time.Second).Format(time.RFC3339)
}

func (g *gen) comment(c, post, author int) Op {
	at := g.ts()
	sk := "COMMENT#" + at + "#" + id("c", c)
	pk := "POST#" + id("p", post)
	g.comments = append(g.comments, [2]string{pk, sk})
	// Applications often write a stale or empty copy of the author's name; Denorm fixes it.
	return put("create", "pk", pk, "sk", sk, "gsi1pk", "USER#"+id("u", author), "gsi1sk", "COMMENT#"+at,
		"text", fmt.Sprintf("comment %d", c), "userName", "?", "createdAt", at)
}

func (g *gen) deleteComment() Op {
	i := g.rng.IntN(len(g.comments))
	k := g.comments[i]
	g.comments = append(g.comments[:i], g.comments[i+1:]...)
	return del("pk", k[0], "sk", k[1])
}

func (g *gen) membership(u, gr int) Op {
	g.members = append(g.members, [2]int{u, gr})
	roles := []string{"member", "member", "admin"}
	return put("create", "pk", "USER#"+id("u", u), "sk", "GROUP#"+id("g", gr), "gsi2pk", "GROUP#"+id("g", gr),
		"gsi2sk", "USER#"+id("u", u), "role", roles[g.rng.IntN(len(roles))], "joinedAt", g.ts())
}

func (g *gen) deleteMembership() Op {
	i := g.rng.IntN(len(g.members))
	m := g.members[i]
	g.members = append(g.members[:i], g.members[i+1:]...)
	return del("pk", "USER#"+id("u", m[0]), "sk", "GROUP#"+id("g", m[1]))
}

func (g *gen) file(f, folder int) Op {
	if g.fileAt == nil {
		g.fileAt = map[int][2]string{}
	}
	k, ok := g.fileAt[f]
	if !ok {
		k = [2]string{"FOLDER#" + id("f", folder), "FILE#" + g.ts()[:10] + "#" + id("x", f)}
		g.fileAt[f] = k
		g.files = append(g.files, k)
	}
	day := k[1][len("FILE#") : len("FILE#")+len("2006-01-02")] // uploadedAt, as in the key
	op := put("create", "pk", k[0], "sk", k[1], "name", fmt.Sprintf("file-%d.pdf", f), "size", g.rng.IntN(1<<20)+1,
		"uploadedAt", day)
	// Some files are pinned (folder-large-file-count counts them whatever their size), some
	// say pinned: false; a new version of a file may change it either way or drop it.
	switch g.filePuts++; g.filePuts % 5 {
	case 0:
		op.Put["pinned"] = &types.AttributeValueMemberBOOL{Value: true}
	case 2:
		op.Put["pinned"] = &types.AttributeValueMemberBOOL{Value: false}
	}
	return op
}

func (g *gen) deleteFile() Op {
	i := g.rng.IntN(len(g.files))
	k := g.files[i]
	g.files = append(g.files[:i], g.files[i+1:]...)
	for f, at := range g.fileAt {
		if at == k {
			delete(g.fileAt, f)
		}
	}
	return del("pk", k[0], "sk", k[1])
}

// put builds a Put op from name/value pairs; ints become numbers, bools booleans.
func put(phase string, kv ...any) Op {
	item := map[string]types.AttributeValue{}
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		switch v := kv[i+1].(type) {
		case string:
			item[name] = &types.AttributeValueMemberS{Value: v}
		case int:
			item[name] = &types.AttributeValueMemberN{Value: strconv.Itoa(v)}
		case bool:
			item[name] = &types.AttributeValueMemberBOOL{Value: v}
		default:
			panic(fmt.Sprintf("workload: attribute %s of type %T", name, v))
		}
	}
	return Op{Phase: phase, Put: item}
}

// update builds an Update op of the item pk/sk from name/value pairs. Applications edit
// items that hold counters with UpdateItem: a PutItem would replace the counters too.
func update(pk, sk string, kv ...any) Op {
	op := put("churn", kv...)
	return Op{Phase: "churn", Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}, Set: op.Put}
}

func del(kv ...string) Op {
	key := map[string]types.AttributeValue{}
	for i := 0; i+1 < len(kv); i += 2 {
		key[kv[i]] = &types.AttributeValueMemberS{Value: kv[i+1]}
	}
	return Op{Phase: "churn", Del: key}
}
