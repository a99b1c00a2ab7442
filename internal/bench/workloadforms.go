package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/workload"
)

// Workloads of the rules language's comparisons, distinct counts and top lists into time
// buckets. Each writes as many sources as the workload of the closest older kind it is read
// beside (docs/benchmarks.md, "WCU per source write"), so the two compare per write.

// largeFileBound is the bound of folder-large-file-count's first alternative: size gte
// 524288. large-files writes no pinned (its second), so only sizes move the count.
const largeFileBound = 524288

// largeFiles: files put into 10 folders (60 %), given a new size (30 %, about half of them
// across the bound) and deleted (10 %); each folder counts its files of 524288 bytes or
// more (folder-large-file-count: a count with a comparison, in the files' partition). As
// many writes as comment-storm, the same-partition count without a where.
func largeFiles(seed uint64, sz Size) Workload {
	g := newGen(seed, 8)
	const folders = 10
	w := Workload{Name: "large-files", Rules: []string{"folder-large-file-count"}, LiveRate: sz.StormRate,
		Description: fmt.Sprintf("%d file puts (60%%), new sizes (30%%) and deletes (10%%) in %d folders; files of 512 KiB or more counted per folder",
			sz.StormComments, folders)}
	for f := 0; f < folders; f++ {
		w.Setup = append(w.Setup, put("pk", fmt.Sprintf("FOLDER#f%03d", f), "sk", "METADATA", "name", fmt.Sprintf("Folder %d", f)))
	}
	var files [][2]string
	size := func() types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.Itoa(g.rng.IntN(2*largeFileBound) + 1)}
	}
	next := func() workload.Op {
		switch k := g.rng.IntN(100); {
		case k >= 90 && len(files) > 0:
			i := g.rng.IntN(len(files))
			f := files[i]
			files[i] = files[len(files)-1]
			files = files[:len(files)-1]
			return del(f[0], f[1])
		case k >= 60 && len(files) > 0:
			f := files[g.rng.IntN(len(files))]
			op := update(f[0], f[1])
			op.Set["size"] = size()
			return op
		}
		g.n++
		day := g.ts()[:10]
		pk, sk := fmt.Sprintf("FOLDER#f%03d", g.rng.IntN(folders)), "FILE#"+day+"#x"+strconv.Itoa(g.n)
		files = append(files, [2]string{pk, sk})
		op := put("pk", pk, "sk", sk, "name", "x"+strconv.Itoa(g.n)+".pdf", "uploadedAt", day)
		op.Put["size"] = size()
		return op
	}
	w.generate(next, sz.StormComments, sz.StormLive)
	return w
}

// distinctRoles: users join groups (60 %), leave (25 %) and change role among member,
// admin and owner (15 %), 500 users x 20 groups (Zipf); each group counts the different
// roles its memberships hold (group-role-count: a distinct count in another partition,
// through relay items). As many writes as posts-per-user, the cross-partition count. The
// hand-written baseline has no distinct count: Denorm runs alone.
func distinctRoles(seed uint64, sz Size) Workload {
	g := newGen(seed, 9)
	const users, groups = 500, 20
	w := Workload{Name: "distinct-roles", Rules: []string{"group-role-count"}, LiveRate: sz.PostRate, NoBaseline: true,
		Description: fmt.Sprintf("%d joins (60%%), leaves (25%%) and role changes (15%%), %d users x %d groups (Zipf); the different roles counted per group",
			sz.Posts, users, groups)}
	for gr := 0; gr < groups; gr++ {
		w.Setup = append(w.Setup, put("pk", fmt.Sprintf("GROUP#g%03d", gr), "sk", "METADATA", "name", fmt.Sprintf("Group %d", gr)))
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 99)), 1.1, 1, groups-1)
	roles := []string{"member", "member", "member", "admin", "owner"}
	role := func() string { return roles[g.rng.IntN(len(roles))] }
	next := g.memberships(users, func() int { return int(zipf.Uint64()) }, role, role)
	w.generate(next, sz.Posts, sz.PostsLive)
	return w
}

// dailyTopFiles: files uploaded into DayPosts folders (Zipf) over Days UTC days, a tenth of
// the writes deleting a file (half of those the newest of its folder and day, which its
// list holds); each folder's day item lists its 2 files uploaded last (folder-daily-files:
// a top list into a time bucket in the files' partition, created on first use, with a ttl).
// Within a day the greater key is the later upload (file ids grow). As many writes as
// daily-buckets; read beside latest-n, the top list into a fixed target. The hand-written
// baseline has no top list into a bucket: Denorm runs alone.
func dailyTopFiles(seed uint64, sz Size) Workload {
	g := newGen(seed, 10)
	w := Workload{Name: "daily-top-files", Rules: []string{"folder-daily-files"}, LiveRate: sz.DayRate, NoBaseline: true,
		Description: fmt.Sprintf("%d file uploads into %d folders (Zipf) over %d days, 10%% deleted (half of them the newest of the day, listed); the 2 last per folder and UTC day",
			sz.DayComments, sz.DayPosts, sz.Days)}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 100)), 1.1, 1, uint64(sz.DayPosts-1))
	type file struct{ pk, sk, day string }
	var files []file
	next := func() workload.Op {
		if len(files) > 0 && g.rng.IntN(10) == 0 {
			i := g.rng.IntN(len(files))
			if g.rng.IntN(2) == 0 { // the newest file of that file's folder and day
				for j, f := range files {
					if f.pk == files[i].pk && f.day == files[i].day && f.sk > files[i].sk {
						i = j
					}
				}
			}
			f := files[i]
			files[i] = files[len(files)-1]
			files = files[:len(files)-1]
			return del(f.pk, f.sk)
		}
		g.n++
		day := g.base.Add(time.Duration(g.rng.IntN(sz.Days)) * 24 * time.Hour).Format("2006-01-02")
		f := file{fmt.Sprintf("FOLDER#f%03d", zipf.Uint64()), fmt.Sprintf("FILE#%s#x%06d", day, g.n), day}
		files = append(files, f)
		op := put("pk", f.pk, "sk", f.sk, "name", fmt.Sprintf("x%06d.pdf", g.n), "uploadedAt", day)
		op.Put["size"] = &types.AttributeValueMemberN{Value: strconv.Itoa(g.rng.IntN(1<<20) + 1)}
		return op
	}
	w.generate(next, sz.DayComments, sz.DayLive)
	return w
}
