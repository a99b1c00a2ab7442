package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/workload"
)

// The application class (Faults.Application): writes real applications make to the items
// Denorm keeps counters and sums on, and to the attributes that link sources to them. What
// Denorm must keep whatever the application writes: a counter or sum on a target that
// exists equals the aggregate over the sources that exist and link to it; Denorm restores
// its own attributes (_dn...); a source without its link attribute counts into nothing and
// has no mirror. The oracle computes exactly that from the model, so the values the
// application writes into counters never reach the expectation.

// counterAttrs are the count and sum attributes of rules/social.yaml, by target kind.
var counterAttrs = map[Kind][]string{
	User: {"postCount", "commentCount"}, Post: {"commentCount"}, Group: {"memberCount", "roleCount"},
	Folder: {"fileCount", "totalBytes", "largeFileCount"},
}

// extremeAttrs are the attributes max, min, latest and top rules keep on each kind (what
// an application that saves a form it read earlier writes back, stale by then).
var extremeAttrs = map[Kind][]string{
	User: {"latestPostTitle", "latestPostId"}, Post: {"lastCommentAt", "recentComments"}, Folder: {"oldestUpload"},
}

// targetKinds are the kinds Denorm keeps counters on.
var targetKinds = []Kind{User, Post, Group, Folder}

// AppWrites counts the application-class writes of a workload, by case.
type AppWrites struct {
	// RePuts replace a live counter target whole with PutItem; StaleRePuts of them carry
	// counters or Denorm's attributes as the application read them earlier.
	RePuts, StaleRePuts int
	// CounterWrites SET a counter to a wrong value or REMOVE it with UpdateItem.
	CounterWrites int
	// DeleteRePuts delete a counter target and put it again with the next write;
	// Undeletes put it back later, as the application read it before the delete.
	DeleteRePuts, Undeletes int
	// LateTargets are counter targets created after (some of) their sources.
	LateTargets int
	// Unlinked posts lost their userId or were inserted without one; Relinked of them got
	// one later.
	Unlinked, Relinked int
	// SparseRemoved comments lost their author keys (gsi1pk, gsi1sk) or were inserted
	// without them; SparseRestored got them (Options.SparseComments).
	SparseRemoved, SparseRestored int
}

// Total is the number of cases written.
func (a AppWrites) Total() int {
	return a.RePuts + a.CounterWrites + a.DeleteRePuts + a.Undeletes + a.LateTargets + a.Unlinked + a.Relinked +
		a.SparseRemoved + a.SparseRestored
}

func (a AppWrites) String() string {
	return fmt.Sprintf("%d re-puts of counter targets (%d with values read earlier), %d counters SET wrong or REMOVEd, "+
		"%d deleted and re-put, %d deleted and put back later as read, %d targets created after their sources, "+
		"%d posts without userId (%d set back), %d comments without author keys (%d set back)",
		a.RePuts, a.StaleRePuts, a.CounterWrites, a.DeleteRePuts, a.Undeletes, a.LateTargets, a.Unlinked, a.Relinked,
		a.SparseRemoved, a.SparseRestored)
}

// counterValues is what an application writes into a target's counters.
type counterValues int

const (
	countersOmitted counterValues = iota
	countersZero
	countersWrong
	countersRead // as the application read them earlier
)

func (c counterValues) String() string {
	return [...]string{"counters omitted", "counters 0", "counters wrong", "counters read earlier"}[c]
}

// Labels of the cases an item was touched by (Model.Cases), as the oracle reports them.
const (
	caseLate          = "created after its sources"
	caseLateSource    = "source of a target created after it"
	caseCopyRePut     = "copy of a source deleted and re-put"
	caseCounterZero   = "counter SET to 0"
	caseCounterWrong  = "counter SET to a wrong value"
	caseCounterRemove = "counter REMOVEd"
	caseUnlinked      = "post userId removed"
	caseOrphan        = "post inserted without userId"
	caseRelinked      = "post userId set back"
	caseLostPost      = "user lost a post whose userId was removed"
	caseGainedPost    = "user gained a post whose userId was set back"
	caseMirrorGone    = "mirror of a post whose userId was removed"
	caseMirrorBack    = "mirror of a post whose userId was set back"
)

// deferred is an operation the generator writes later in the round.
type deferred struct {
	at  int // when len(g.ops) reaches it
	run func()
}

// later runs f once about n more operations have been generated (at the latest at the end
// of the round's after phase).
func (g *gen) later(n int, f func()) {
	g.deferred = append(g.deferred, deferred{at: len(g.ops) + n, run: f})
}

// runDue runs the deferred operations that are due, or all of them.
func (g *gen) runDue(all bool) {
	for len(g.deferred) > 0 {
		i := slices.IndexFunc(g.deferred, func(d deferred) bool { return all || len(g.ops) >= d.at })
		if i < 0 {
			return
		}
		d := g.deferred[i]
		g.deferred = slices.Delete(g.deferred, i, i+1)
		d.run()
	}
}

// appChurn emits one application-class change in the churn phase.
func (g *gen) appChurn() {
	if g.opt.SparseComments && g.rng.IntN(5) == 0 {
		g.sparseChurn()
		return
	}
	switch k := g.rng.IntN(100); {
	case k < 30:
		g.rePut(g.rng.IntN(2) == 0)
	case k < 45:
		g.counterWrite()
	case k < 52:
		g.deleteRePut()
	case k < 60:
		g.undelete()
	case k < 72: // within the phase: written after its sources, though not in order for sure
		t := g.lateKey(targetKinds[g.rng.IntN(len(targetKinds))])
		g.lateSources(t)
		g.later(3+g.rng.IntN(25), func() { g.createLate(t) })
	case k < 88:
		g.unlinkPost()
	default:
		g.orphanPost()
	}
}

// appAfter emits application-class changes in the after phase, then everything deferred.
func (g *gen) appAfter() {
	for i := 0; i < 2; i++ {
		if g.rng.IntN(2) == 0 {
			g.rePut(false)
		} else {
			g.deleteRePut()
		}
	}
	g.runDue(true)
}

func (g *gen) pickTarget() (Key, bool) {
	return g.m.pick(g.rng, targetKinds[g.rng.IntN(len(targetKinds))])
}

// rePut replaces a live counter target whole, with every application attribute and the
// counters omitted, 0 or wrong; Denorm's attributes are dropped. With readFirst the
// application reads the target now and puts it back later with the counters it read, the
// _dn attributes it read, or both (counters it did not take omitted or 0): stale by then.
func (g *gen) rePut(readFirst bool) {
	k, ok := g.pickTarget()
	if !ok {
		return
	}
	if !readFirst {
		it, _ := g.m.Item(k)
		g.emitPut(k, it, counterValues(g.rng.IntN(3)), false, "re-put")
		g.app.RePuts++
		return
	}
	g.emit(workload.Op{Put: withAttr(keyItem(k), readAttr, "1")})
	// Something read earlier is always written back: the counters, Denorm's attributes, or both.
	cv := []counterValues{countersRead, countersRead, countersOmitted, countersZero}[g.rng.IntN(4)]
	dn := cv != countersRead || g.rng.IntN(2) == 0
	g.later(20+g.rng.IntN(150), func() {
		if it, live := g.m.Item(k); live {
			g.emitPut(k, it, cv, dn, "re-put")
			g.app.RePuts++
			g.app.StaleRePuts++
		}
	})
}

// deleteRePut deletes a live counter target and puts it back with the next write: as it
// was (the application read it first) or with counters omitted, 0 or wrong.
func (g *gen) deleteRePut() {
	k, ok := g.pickTarget()
	if !ok {
		return
	}
	it, _ := g.m.Item(k)
	cv, dn := counterValues(g.rng.IntN(3)), false
	if g.rng.IntN(3) == 0 {
		g.emit(workload.Op{Put: withAttr(keyItem(k), readAttr, "1")})
		cv, dn = countersRead, g.rng.IntN(2) == 0
	}
	g.emit(del(k))
	g.emitPut(k, it, cv, dn, "deleted and re-put")
	g.noteCopies(k, caseCopyRePut)
	g.app.DeleteRePuts++
}

// undelete reads a live counter target, deletes it, and puts it back later as it read it
// (counters, the attributes of max, min, latest and top, and Denorm's versions): stale by
// then, as an undo of a delete from a copy the application kept.
func (g *gen) undelete() {
	k, ok := g.pickTarget()
	if !ok {
		return
	}
	it, _ := g.m.Item(k)
	g.emit(workload.Op{Put: withAttr(keyItem(k), readAttr, "1")})
	g.emit(del(k))
	g.noteCopies(k, caseCopyRePut)
	g.later(20+g.rng.IntN(150), func() {
		if _, live := g.m.Item(k); !live {
			g.emitPut(k, it, countersRead, true, "deleted and put back later")
			g.app.Undeletes++
		}
	})
}

// noteCopies notes c on the live copy targets of the source k: the comments and member
// items of a user, the memberships of a group.
func (g *gen) noteCopies(k Key, c string) {
	switch {
	case strings.HasPrefix(k.PK, "USER#"):
		for _, ck := range g.m.Live(Comment) {
			if it, _ := g.m.Item(ck); str(it["gsi1pk"]) == k.PK {
				g.m.note(ck, c)
			}
		}
		for _, mk := range g.m.Live(Membership) {
			if mk.PK == k.PK {
				g.m.note(Key{"GROUP#" + strings.TrimPrefix(mk.SK, "GROUP#"), mk.PK}, c)
			}
		}
	case strings.HasPrefix(k.PK, "GROUP#"):
		for _, mk := range g.m.Live(Membership) {
			if mk.SK == k.PK {
				g.m.note(mk, c)
			}
		}
	}
}

// emitPut puts the target k back with the application attributes of it and counters and
// Denorm's attributes as cv and dn say, and notes the case.
func (g *gen) emitPut(k Key, it record.Item, cv counterValues, dn bool, what string) {
	kind := KindOf(k, it)
	item := record.Item{}
	for a, v := range it {
		if !slices.Contains(counterAttrs[kind], a) && !strings.HasPrefix(a, "_dn") {
			item[a] = v
		}
	}
	g.setCounters(item, kind, cv)
	var fromRead []string
	if cv == countersRead {
		fromRead = append(append(fromRead, counterAttrs[kind]...), extremeAttrs[kind]...)
	}
	dnText := "omitted"
	if dn {
		fromRead = append(fromRead, "_dn*")
		dnText = "read earlier"
	}
	if len(fromRead) > 0 {
		item[staleAttr] = &types.AttributeValueMemberS{Value: strings.Join(fromRead, ",")}
	}
	g.emit(workload.Op{Put: item})
	g.m.note(k, fmt.Sprintf("%s (%s, _dn %s)", what, cv, dnText))
}

// setCounters writes the counters of cv into item (none for countersOmitted and
// countersRead, which the application writer fills in).
func (g *gen) setCounters(item record.Item, kind Kind, cv counterValues) {
	for _, a := range counterAttrs[kind] {
		switch cv {
		case countersZero:
			item[a] = &types.AttributeValueMemberN{Value: "0"}
		case countersWrong:
			item[a] = &types.AttributeValueMemberN{Value: strconv.Itoa(g.rng.IntN(50) + 1)}
		}
	}
}

// counterWrite SETs one counter of a live target to 0 or a wrong value, or REMOVEs it.
func (g *gen) counterWrite() {
	k, ok := g.pickTarget()
	if !ok {
		return
	}
	it, _ := g.m.Item(k)
	attrs := counterAttrs[KindOf(k, it)]
	a := attrs[g.rng.IntN(len(attrs))]
	switch g.rng.IntN(3) {
	case 0:
		g.emit(update(k, a, 0))
		g.m.note(k, caseCounterZero)
	case 1:
		g.emit(update(k, a, num(strconv.Itoa(g.rng.IntN(900)+100)+".5")))
		g.m.note(k, caseCounterWrong)
	default:
		g.emit(workload.Op{Key: keyItem(k), Remove: []string{a}})
		g.m.note(k, caseCounterRemove)
	}
	g.app.CounterWrites++
}

// lateKey is the key of a new counter target of kind, not written yet.
func (g *gen) lateKey(kind Kind) Key {
	switch kind {
	case User:
		return Key{"USER#" + g.id("lu"), "PROFILE"}
	case Post:
		return Key{"POST#" + g.id("lp"), "METADATA"}
	case Group:
		return Key{"GROUP#" + g.id("lg"), "METADATA"}
	default:
		return Key{"FOLDER#" + g.id("lf"), "METADATA"}
	}
}

// lateSources writes sources of the target k, which does not exist yet: a user's post,
// comments and membership; a post's comments; a group's memberships; a folder's files.
func (g *gen) lateSources(k Key) {
	n := 1 + g.rng.IntN(3)
	switch {
	case strings.HasPrefix(k.PK, "USER#"):
		p := Key{"POST#" + g.id("p"), "METADATA"}
		g.emit(put("pk", p.PK, "sk", p.SK, "userId", strings.TrimPrefix(k.PK, "USER#"), "title", "Post of "+k.PK,
			"createdAt", g.postAt(), "status", "published", "ttl", ttlFuture))
		g.m.note(p, caseLateSource)
		for i := 0; i < n; i++ {
			if post, ok := g.m.pick(g.rng, Post); ok {
				g.m.note(g.commentBy(post, k), caseLateSource)
			}
		}
		if gr, ok := g.m.pick(g.rng, Group); ok {
			mk := g.membership(gr, Key{k.PK, "GROUP#" + strings.TrimPrefix(gr.PK, "GROUP#")})
			g.m.note(mk, caseLateSource)
			g.m.note(Key{gr.PK, mk.PK}, caseLateSource) // its member item
		}
	case strings.HasPrefix(k.PK, "POST#"):
		for i := 0; i < n; i++ {
			g.comment(k)
		}
	case strings.HasPrefix(k.PK, "GROUP#"):
		for i := 0; i < n; i++ {
			g.membership(k)
		}
	default:
		for i := 0; i < n; i++ {
			g.file(k)
		}
	}
}

// createLate puts the target k after its sources, with counters omitted, 0 or wrong.
func (g *gen) createLate(k Key) {
	if _, live := g.m.Item(k); live {
		return
	}
	var op workload.Op
	switch {
	case strings.HasPrefix(k.PK, "USER#"):
		u := strings.TrimPrefix(k.PK, "USER#")
		op = put("pk", k.PK, "sk", k.SK, "name", "Late "+u, "avatar", "https://img.example/"+u+".png",
			"email", u+"@example.com", "ttl", ttlFuture)
	case strings.HasPrefix(k.PK, "POST#"):
		author, ok := g.m.pick(g.rng, User)
		if !ok {
			return
		}
		op = put("pk", k.PK, "sk", k.SK, "userId", strings.TrimPrefix(author.PK, "USER#"), "title", "Late "+k.PK,
			"createdAt", g.postAt(), "status", g.status(), "ttl", ttlFuture)
	default:
		op = put("pk", k.PK, "sk", k.SK, "name", "Late "+k.PK, "ttl", ttlFuture)
	}
	cv := counterValues(g.rng.IntN(3))
	g.setCounters(op.Put, KindOf(k, op.Put), cv)
	g.emit(op)
	g.m.note(k, caseLate+" ("+cv.String()+")")
	g.noteCopies(k, caseLateSource)
	g.app.LateTargets++
}

// unlinkPost removes a post's userId: it counts into no user and its mirror goes. Most
// of the time the application sets a userId again later, maybe another user's.
func (g *gen) unlinkPost() {
	p, ok := g.m.pick(g.rng, Post)
	if !ok {
		return
	}
	it, _ := g.m.Item(p)
	uid := str(it["userId"])
	if uid == "" {
		return
	}
	g.emit(workload.Op{Key: keyItem(p), Remove: []string{"userId"}})
	g.m.note(p, caseUnlinked)
	g.m.note(Key{"USER#" + uid, "PROFILE"}, caseLostPost)
	g.m.note(Key{"USER#" + uid, "POST#" + strings.TrimPrefix(p.PK, "POST#")}, caseMirrorGone)
	g.app.Unlinked++
	if g.rng.IntN(4) != 0 {
		g.later(10+g.rng.IntN(100), func() { g.relinkPost(p) })
	}
}

// orphanPost inserts a post without userId (and a comment on it); most of the time it gets
// one later.
func (g *gen) orphanPost() {
	p := Key{"POST#" + g.id("op"), "METADATA"}
	g.emit(put("pk", p.PK, "sk", p.SK, "title", "Post "+p.PK, "status", g.status(), "createdAt", g.postAt(), "ttl", ttlFuture))
	g.m.note(p, caseOrphan)
	g.comment(p)
	g.app.Unlinked++
	if g.rng.IntN(4) != 0 {
		g.later(10+g.rng.IntN(100), func() { g.relinkPost(p) })
	}
}

// relinkPost sets the userId of a live post that has none to a random user's.
func (g *gen) relinkPost(p Key) {
	it, live := g.m.Item(p)
	if !live || str(it["userId"]) != "" {
		return
	}
	u, ok := g.m.pick(g.rng, User)
	if !ok {
		return
	}
	g.emit(update(p, "userId", strings.TrimPrefix(u.PK, "USER#")))
	g.m.note(p, caseRelinked)
	g.m.note(u, caseGainedPost)
	g.m.note(Key{u.PK, "POST#" + strings.TrimPrefix(p.PK, "POST#")}, caseMirrorBack)
	g.app.Relinked++
}

// withAttr returns item with the string attribute name set.
func withAttr(item record.Item, name, v string) record.Item {
	item[name] = &types.AttributeValueMemberS{Value: v}
	return item
}
