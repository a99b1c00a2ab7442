package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/workload"
)

// Target names the goal a workload's figures are held to.
type Target string

// Targets of the workloads. Counts and sums pay a state item's write and the copy's per
// target and batch (docs/processor.md), which the floor (one write per target) does not
// count: their targets are against the baseline.
const (
	TargetSamePartition  Target = "same-partition counters: WCU <= 0.05x baseline"
	TargetCrossPartition Target = "cross-partition counters: WCU <= 0.55x baseline"
	TargetCopies         Target = "copies: WCU <= 1.05x floor"
	TargetFloor          Target = "copies, mirrors, same-partition counters: WCU <= 0.7x baseline"
	TargetHot            Target = "hot target: zero drift (verify clean) and WCU <= baseline; conflicts reported"
	TargetBuckets        Target = "time buckets: WCU <= baseline"
	TargetMix            Target = "every rule of the social example: WCU <= 0.75x baseline"
	TargetLists          Target = "embedded latest-N lists: WCU <= 1.1x floor"
)

// Workload is one benchmark scenario: rules of the social example, items written before
// (Setup, with no derived state to compute), the measured backlog (Measure), and writes
// made live at LiveRate per second to measure lag (Live).
type Workload struct {
	Name        string
	Description string
	Rules       []string // rule names of rules/social.yaml; empty: all of them
	Setup       []workload.Op
	Measure     []workload.Op
	Live        []workload.Op
	LiveRate    float64
	// CopyLag: lag is measured per copy written (a fan-out), not per source record.
	CopyLag bool
	Targets []Target
	// ParallelizationFactor is the event source mapping's, for both systems (0: 1).
	ParallelizationFactor int
	// Deltas is how many counter changes the measured backlog makes (source items entering
	// or leaving a count), when the workload reports WCU per delta.
	Deltas int
	// NoBaseline: the hand-written baseline does not implement the workload's rule, so
	// Denorm runs alone and the figures against the baseline and the floor are left out.
	NoBaseline bool
	// Split overrides the split of the workload's counts and sums (rules.Aggregate.Split):
	// 1 for none, 0 for the rules file's.
	Split int
}

// Size scales the workloads.
type Size struct {
	StormComments, StormLive                int
	Posts, PostsLive, PostUsers             int
	Churn, ChurnLive                        int
	RenameCopies                            int
	Social                                  workload.Scale
	SocialLive                              int
	DayComments, DayLive, DayPosts, Days    int
	StormRate, PostRate, ChurnRate, MixRate float64
	HotPosts, HotLive                       int
	HotRate                                 float64
	DayRate                                 float64
	ListComments, ListLive, ListPosts       int
	ListRate                                float64
}

// WithLive returns sz with at least n live writes per workload (the rename's one excepted).
func (sz Size) WithLive(n int) Size {
	for _, p := range []*int{&sz.StormLive, &sz.PostsLive, &sz.ChurnLive, &sz.SocialLive, &sz.HotLive, &sz.DayLive, &sz.ListLive} {
		*p = max(*p, n)
	}
	return sz
}

// Full is the size `make bench` runs. The live rates are low enough for the naive handler
// to keep up on a 2-core machine, so lag compares steady states, not growing backlogs.
var Full = Size{
	StormComments: 2000, StormLive: 300, StormRate: 20,
	Posts: 1500, PostsLive: 300, PostUsers: 200, PostRate: 20,
	Churn: 1500, ChurnLive: 150, ChurnRate: 10,
	RenameCopies: 10000,
	Social:       workload.Scale{Users: 100, Posts: 200, Comments: 1500, Groups: 10, Memberships: 300, Folders: 10, Files: 300, Churn: 700},
	SocialLive:   150, MixRate: 10,
	HotPosts: 2000, HotLive: 300, HotRate: 20,
	DayComments: 2000, DayLive: 300, DayPosts: 20, Days: 14, DayRate: 20,
	ListComments: 2000, ListLive: 300, ListPosts: 50, ListRate: 20,
}

// Smoke is a size small enough for `make test`.
var Smoke = Size{
	StormComments: 150, StormLive: 10, StormRate: 50,
	Posts: 100, PostsLive: 10, PostUsers: 20, PostRate: 50,
	Churn: 60, ChurnLive: 10, ChurnRate: 50,
	RenameCopies: 200,
	Social:       workload.Scale{Users: 8, Posts: 12, Comments: 40, Groups: 3, Memberships: 12, Folders: 2, Files: 12, Churn: 30},
	SocialLive:   10, MixRate: 50,
	HotPosts: 150, HotLive: 10, HotRate: 50,
	DayComments: 150, DayLive: 10, DayPosts: 5, Days: 7, DayRate: 50,
	ListComments: 150, ListLive: 10, ListPosts: 5, ListRate: 50,
}

// Tiny is the size of the tests: seconds on DynamoDB Local.
var Tiny = Size{
	StormComments: 40, StormLive: 5, StormRate: 50,
	Posts: 30, PostsLive: 5, PostUsers: 5, PostRate: 50,
	Churn: 20, ChurnLive: 5, ChurnRate: 50,
	RenameCopies: 30,
	Social:       workload.Scale{Users: 4, Posts: 4, Comments: 10, Groups: 2, Memberships: 4, Folders: 1, Files: 4, Churn: 10},
	SocialLive:   5, MixRate: 50,
	HotPosts: 40, HotLive: 5, HotRate: 50,
	DayComments: 40, DayLive: 5, DayPosts: 3, Days: 4, DayRate: 50,
	ListComments: 40, ListLive: 5, ListPosts: 3, ListRate: 50,
}

// Workloads returns the benchmark's workloads, in order.
func Workloads(seed uint64, sz Size) []Workload {
	return []Workload{
		commentStorm(seed, sz), postsPerUser(seed, sz), membershipChurn(seed, sz), rename(sz), socialMix(seed, sz),
		hotTarget(seed, sz, false), hotTarget(seed, sz, true),
		dailyBuckets(seed, sz),
		latestN(seed, sz),
		largeFiles(seed, sz), distinctRoles(seed, sz), dailyTopFiles(seed, sz),
	}
}

type opGen struct {
	rng  *rand.Rand
	base time.Time
	n    int
}

func newGen(seed uint64, salt uint64) *opGen {
	return &opGen{rng: rand.New(rand.NewPCG(seed, salt)), base: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (g *opGen) ts() string {
	g.n++
	return g.base.Add(time.Duration(g.rng.IntN(86400*30))*time.Second + time.Duration(g.n)*time.Millisecond).Format("2006-01-02T15:04:05.000Z")
}

func attrs(kv ...string) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = &types.AttributeValueMemberS{Value: kv[i+1]}
	}
	return m
}

func put(kv ...string) workload.Op { return workload.Op{Phase: "bench", Put: attrs(kv...)} }

func update(pk, sk string, kv ...string) workload.Op {
	return workload.Op{Phase: "bench", Key: attrs("pk", pk, "sk", sk), Set: attrs(kv...)}
}

func del(pk, sk string) workload.Op {
	return workload.Op{Phase: "bench", Del: attrs("pk", pk, "sk", sk)}
}

func uid(n int) string { return fmt.Sprintf("u%05d", n) }

func (g *opGen) comment(post, user int, name string) workload.Op {
	return g.commentAt(post, user, name, g.ts())
}

func (g *opGen) commentAt(post, user int, name, at string) workload.Op {
	g.n++
	return put("pk", "POST#"+fmt.Sprintf("p%04d", post), "sk", "COMMENT#"+at+"#c"+strconv.Itoa(g.n),
		"gsi1pk", "USER#"+uid(user), "gsi1sk", "COMMENT#"+at, "text", "a comment", "userName", name)
}

// commentStorm: comments pour onto 4 hot posts (40/30/20/10 %); each post counts its
// comments in its own partition (post-comment-count: watermark mode).
func commentStorm(seed uint64, sz Size) Workload {
	g := newGen(seed, 1)
	w := Workload{Name: "comment-storm", Rules: []string{"post-comment-count"}, LiveRate: sz.StormRate,
		Description: fmt.Sprintf("%d comments on 4 hot posts; commentCount kept on each post", sz.StormComments),
		Targets:     []Target{TargetSamePartition}}
	for p := 0; p < 4; p++ {
		w.Setup = append(w.Setup, put("pk", fmt.Sprintf("POST#p%04d", p), "sk", "METADATA", "userId", uid(p), "title", "hot post", "status", "published"))
	}
	hot := func() int {
		switch k := g.rng.IntN(100); {
		case k < 40:
			return 0
		case k < 70:
			return 1
		case k < 90:
			return 2
		}
		return 3
	}
	for i := 0; i < sz.StormComments; i++ {
		w.Measure = append(w.Measure, g.comment(hot(), g.rng.IntN(1000), "?"))
	}
	for i := 0; i < sz.StormLive; i++ {
		w.Live = append(w.Live, g.comment(hot(), g.rng.IntN(1000), "?"))
	}
	return w
}

// postsPerUser: users publish posts (Zipf-distributed authors, a quarter drafts) and flip
// their status; each user's postCount lives in another partition (relay mode).
func postsPerUser(seed uint64, sz Size) Workload {
	g := newGen(seed, 2)
	w := Workload{Name: "posts-per-user", Rules: []string{"user-post-count"}, LiveRate: sz.PostRate,
		Description: fmt.Sprintf("%d posts by %d users (Zipf), 10%% status flips; postCount on each user", sz.Posts, sz.PostUsers),
		Targets:     []Target{TargetCrossPartition}}
	for u := 0; u < sz.PostUsers; u++ {
		w.Setup = append(w.Setup, put("pk", "USER#"+uid(u), "sk", "PROFILE", "name", "User "+uid(u)))
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 22)), 1.2, 1, uint64(sz.PostUsers-1))
	posts := 0
	next := func() workload.Op {
		if posts > 0 && g.rng.IntN(10) == 0 {
			status := []string{"published", "draft"}[g.rng.IntN(2)]
			return update(fmt.Sprintf("POST#p%05d", g.rng.IntN(posts)), "METADATA", "status", status)
		}
		status := "published"
		if g.rng.IntN(4) == 0 {
			status = "draft"
		}
		posts++
		return put("pk", fmt.Sprintf("POST#p%05d", posts-1), "sk", "METADATA", "userId", uid(int(zipf.Uint64())),
			"title", "a post", "status", status)
	}
	for i := 0; i < sz.Posts; i++ {
		w.Measure = append(w.Measure, next())
	}
	for i := 0; i < sz.PostsLive; i++ {
		w.Live = append(w.Live, next())
	}
	return w
}

// memberships returns a generator of membership writes among users: joins (60 %), leaves
// (25 %) and role changes (15 %) of a membership made earlier. group picks a join's group,
// joinRole its role, newRole the role of a change.
func (g *opGen) memberships(users int, group func() int, joinRole, newRole func() string) func() workload.Op {
	member := map[[2]int]bool{}
	var list [][2]int
	return func() workload.Op {
		k := g.rng.IntN(100)
		if len(list) > 0 && k >= 60 {
			i := g.rng.IntN(len(list))
			m := list[i]
			pk, sk := "USER#"+uid(m[0]), fmt.Sprintf("GROUP#g%03d", m[1])
			if k < 85 {
				list[i] = list[len(list)-1]
				list = list[:len(list)-1]
				delete(member, m)
				return del(pk, sk)
			}
			return update(pk, sk, "role", newRole())
		}
		for {
			m := [2]int{g.rng.IntN(users), group()}
			if member[m] {
				continue
			}
			member[m] = true
			list = append(list, m)
			gr := fmt.Sprintf("g%03d", m[1])
			return put("pk", "USER#"+uid(m[0]), "sk", "GROUP#"+gr, "gsi2pk", "GROUP#"+gr, "gsi2sk", "USER#"+uid(m[0]),
				"role", joinRole(), "joinedAt", g.ts())
		}
	}
}

// membershipChurn: users join groups (60 %), leave (25 %) and change role (15 %). The
// group's member list mirrors the memberships, members are counted into their group (same
// partition), and both sides get the other's name on insert.
func membershipChurn(seed uint64, sz Size) Workload {
	g := newGen(seed, 3)
	const users, groups = 500, 20
	w := Workload{Name: "membership-churn", LiveRate: sz.ChurnRate,
		Rules:       []string{"group-members", "group-member-count", "member-name", "membership-group-name"},
		Description: fmt.Sprintf("%d joins/leaves/role changes, %d users x %d groups; mirror, memberCount, names", sz.Churn, users, groups),
		Targets:     []Target{TargetFloor}}
	for u := 0; u < users; u++ {
		w.Setup = append(w.Setup, put("pk", "USER#"+uid(u), "sk", "PROFILE", "name", "User "+uid(u)))
	}
	for gr := 0; gr < groups; gr++ {
		w.Setup = append(w.Setup, put("pk", fmt.Sprintf("GROUP#g%03d", gr), "sk", "METADATA", "name", fmt.Sprintf("Group %d", gr)))
	}
	next := g.memberships(users, func() int { return g.rng.IntN(groups) }, func() string { return "member" },
		func() string { return []string{"member", "admin", "owner"}[g.rng.IntN(3)] })
	for i := 0; i < sz.Churn; i++ {
		w.Measure = append(w.Measure, next())
	}
	for i := 0; i < sz.ChurnLive; i++ {
		w.Live = append(w.Live, next())
	}
	return w
}

// rename: one user with RenameCopies comments (already holding the user's name) is renamed;
// every comment must show the new name (comment-author: a fan-out through gsi1).
func rename(sz Size) Workload {
	g := newGen(1, 4)
	w := Workload{Name: "rename", Rules: []string{"comment-author"}, LiveRate: 1, CopyLag: true,
		Description: fmt.Sprintf("one user renamed, reaching %d comments through gsi1", sz.RenameCopies),
		Targets:     []Target{TargetCopies}}
	u := uid(0)
	avatar := "https://img.example/" + u + ".png"
	w.Setup = append(w.Setup, put("pk", "USER#"+u, "sk", "PROFILE", "name", "Ada", "avatar", avatar))
	for i := 0; i < sz.RenameCopies; i++ {
		op := g.comment(i%100, 0, "Ada")
		op.Put["userAvatar"] = &types.AttributeValueMemberS{Value: avatar}
		w.Setup = append(w.Setup, op)
	}
	w.Live = []workload.Op{update("USER#"+u, "PROFILE", "name", "Ada Lovelace")}
	return w
}

// baselineRules are the rules of rules/social.yaml the hand-written baseline implements:
// every one but the max, min and latest rules, which it does not (it would drift on them,
// and the comparison would not be like for like).
var baselineRules = []string{"comment-author", "member-name", "membership-group-name", "user-posts", "group-members",
	"post-comment-count", "user-post-count", "user-comment-count", "group-member-count", "folder-file-count",
	"folder-size", "global-post-count", "post-daily-comments"}

// socialMix: the whole social example (workload.Social): creates, then renames, deletes,
// membership churn, status flips and file versions, every rule of rules/social.yaml the
// baseline implements.
func socialMix(seed uint64, sz Size) Workload {
	sc := sz.Social
	sc.Churn += sz.SocialLive
	ops := workload.Social(seed, sc)
	cut := len(ops) - sz.SocialLive
	w := Workload{Name: "social-mix", Rules: baselineRules, LiveRate: sz.MixRate,
		Description: fmt.Sprintf("workload.Social: %d users, %d posts, %d comments, %d memberships, %d files, %d changes; the %d rules of rules/social.yaml the baseline implements (not max, min, latest)",
			sc.Users, sc.Posts, sc.Comments, sc.Memberships, sc.Files, sz.Social.Churn, len(baselineRules)),
		Targets: []Target{TargetMix}}
	w.Measure, w.Live = ops[:cut], ops[cut:]
	return w
}

// hotTargetFactor is the hot-target workload's ParallelizationFactor: four batches of the
// shard at once, all of them feeding the one global counter.
const hotTargetFactor = 4

// hotTarget: posts created (90 %) and deleted (10 %) in as many partitions as there are
// posts, every one counted into the single STATS#global item (global-post-count, its
// state split over 4 parts in rules/social.yaml), with ParallelizationFactor 4 for both
// systems: several batches write into the one target at once. Above factor 1 Lambda keeps
// each item's records in order, not a partition's, so Denorm runs the rule in transaction
// mode (ruleSubset), as split does anyway: relay mode's watermark over the relay partition
// would skip a relay record another lane applied out of order. unsplit is the same
// workload with the rule's state in its one state item (hot-target-unsplit), Denorm alone:
// what the split changes, in the same run.
func hotTarget(seed uint64, sz Size, unsplit bool) Workload {
	g := newGen(seed, 6)
	w := Workload{Name: "hot-target", Rules: []string{"global-post-count"}, LiveRate: sz.HotRate,
		ParallelizationFactor: hotTargetFactor,
		Description: fmt.Sprintf("%d post creates/deletes in as many partitions, all counted into one STATS#global item; ParallelizationFactor %d",
			sz.HotPosts, hotTargetFactor),
		Targets: []Target{TargetHot}}
	if unsplit {
		w.Name, w.Split, w.NoBaseline = "hot-target-unsplit", 1, true
		w.Description += "; the count's state unsplit, in its one state item"
	}
	w.Setup = append(w.Setup, put("pk", "STATS#global", "sk", "STATS"))
	var live []int
	posts := 0
	next := func() workload.Op {
		if len(live) > 0 && g.rng.IntN(10) == 0 {
			i := g.rng.IntN(len(live))
			p := live[i]
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			return del(fmt.Sprintf("POST#p%05d", p), "METADATA")
		}
		live = append(live, posts)
		posts++
		return put("pk", fmt.Sprintf("POST#p%05d", posts-1), "sk", "METADATA", "userId", uid(g.rng.IntN(1000)),
			"title", "a post", "status", "published")
	}
	for i := 0; i < sz.HotPosts; i++ {
		w.Measure = append(w.Measure, next())
	}
	w.Deltas = len(w.Measure) // every create and every delete moves the count by one
	for i := 0; i < sz.HotLive; i++ {
		w.Live = append(w.Live, next())
	}
	return w
}

// dailyBuckets: comments spread over DayPosts posts (Zipf) and Days UTC days, a tenth of
// them deleted again, each counted into its post's day item (post-daily-comments: a time
// bucket in the post's partition, created on first use, with a ttl). A batch holds
// comments of many post-days, so each day item gets a few deltas per batch, not dozens.
func dailyBuckets(seed uint64, sz Size) Workload {
	g := newGen(seed, 6)
	w := Workload{Name: "daily-buckets", Rules: []string{"post-daily-comments"}, LiveRate: sz.DayRate,
		Description: fmt.Sprintf("%d comments on %d posts (Zipf) over %d days, 10%% deleted; commentCount per post and UTC day",
			sz.DayComments, sz.DayPosts, sz.Days),
		Targets: []Target{TargetBuckets}}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 66)), 1.1, 1, uint64(sz.DayPosts-1))
	var live [][2]string
	next := func() workload.Op {
		if len(live) > 0 && g.rng.IntN(10) == 0 {
			i := g.rng.IntN(len(live))
			k := live[i]
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			return del(k[0], k[1])
		}
		at := g.base.Add(time.Duration(g.rng.IntN(86400*sz.Days))*time.Second + time.Duration(g.n)*time.Millisecond)
		op := g.commentAt(int(zipf.Uint64()), g.rng.IntN(1000), "?", at.Format("2006-01-02T15:04:05.000Z"))
		live = append(live, [2]string{str(op.Put["pk"]), str(op.Put["sk"])})
		return op
	}
	w.generate(next, sz.DayComments, sz.DayLive)
	return w
}

// latestN: comments on ListPosts posts (Zipf), in time order, each post embedding its 3
// newest with author and text (post-recent-comments). A tenth of the writes delete a comment, half of those
// the post's newest, which is listed: a full list then needs its fourth newest comment,
// which only a query of the post's comments can find.
func latestN(seed uint64, sz Size) Workload {
	g := newGen(seed, 7)
	w := Workload{Name: "latest-n", Rules: []string{"post-recent-comments"}, LiveRate: sz.ListRate,
		Description: fmt.Sprintf("%d comments on %d posts (Zipf), 10%% deleted (half of them the newest, listed); the 3 newest embedded in each post",
			sz.ListComments, sz.ListPosts),
		Targets: []Target{TargetLists}}
	for p := 0; p < sz.ListPosts; p++ {
		w.Setup = append(w.Setup, put("pk", fmt.Sprintf("POST#p%04d", p), "sk", "METADATA", "title", "a post", "status", "published"))
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 77)), 1.1, 1, uint64(sz.ListPosts-1))
	type live struct{ pk, sk, at string }
	var comments []live
	next := func() workload.Op {
		if len(comments) > 0 && g.rng.IntN(10) == 0 {
			i := g.rng.IntN(len(comments))
			if g.rng.IntN(2) == 0 { // the newest comment of that comment's post
				for j, c := range comments {
					if c.pk == comments[i].pk && c.at > comments[i].at {
						i = j
					}
				}
			}
			c := comments[i]
			comments[i] = comments[len(comments)-1]
			comments = comments[:len(comments)-1]
			return del(c.pk, c.sk)
		}
		// Comments arrive in time order, as on a live site: each new one is its post's newest.
		at := g.base.Add(time.Duration(len(w.Measure)+len(w.Live)) * time.Second).Format("2006-01-02T15:04:05.000Z")
		op := g.commentAt(int(zipf.Uint64()), g.rng.IntN(1000), "User "+uid(g.rng.IntN(1000)), at)
		op.Put["createdAt"] = &types.AttributeValueMemberS{Value: at}
		comments = append(comments, live{str(op.Put["pk"]), str(op.Put["sk"]), at})
		return op
	}
	w.generate(next, sz.ListComments, sz.ListLive)
	return w
}

// generate appends measure operations of next to the measured backlog, then live ones to
// the live writes.
func (w *Workload) generate(next func() workload.Op, measure, live int) {
	for range measure {
		w.Measure = append(w.Measure, next())
	}
	for range live {
		w.Live = append(w.Live, next())
	}
}
