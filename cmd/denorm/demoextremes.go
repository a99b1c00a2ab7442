package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/workload"
)

// extremeCheck is one line of showExtremes: targets checked, how many hold what their
// sources say, and one example.
type extremeCheck struct {
	rule, what       string
	checked, correct int
	example          string
}

// showExtremes recomputes, from the items themselves and not with the verify engine, the
// social example's max, min, latest and top rules and the global post count, prints one line
// each and returns how many targets disagree. A rules file without them shows nothing.
func showExtremes(ctx context.Context, w io.Writer, p *local.Pipeline, f *rules.File) (int, error) {
	names := map[string]bool{}
	for _, r := range f.Rules {
		names[r.Name] = true
	}
	if !names["post-last-comment"] || !names["folder-oldest-upload"] || !names["user-latest-post"] || !names["global-post-count"] {
		return 0, nil
	}
	last := extremeCheck{rule: "post-last-comment", what: "posts hold their newest comment's createdAt"}
	posts, err := last.tally(ctx, p, "POST#p%04d", workload.Demo.Posts, func(pk string, items []map[string]types.AttributeValue) (got, want, example string, found bool) {
		for _, it := range items {
			sk := text(it["sk"])
			switch {
			case sk == "METADATA":
				found, got = true, text(it["lastCommentAt"])
			case strings.HasPrefix(sk, "COMMENT#") && text(it["createdAt"]) > want:
				want = text(it["createdAt"])
			}
		}
		if want != "" {
			example = fmt.Sprintf("%s lastCommentAt %s", pk, got)
		}
		return got, want, example, found
	})
	if err != nil {
		return 0, err
	}
	recent := extremeCheck{rule: "post-recent-comments", what: "posts embed their 3 newest comments with author and text"}
	if names["post-recent-comments"] {
		if _, err := recent.tally(ctx, p, "POST#p%04d", workload.Demo.Posts, func(pk string, items []map[string]types.AttributeValue) (got, want, example string, found bool) {
			type entry struct{ at, sk, full string }
			var comments []entry
			// The whole entry, every attribute with its type, so that a wrong pk or createdAt,
			// or an attribute too many, counts as a mismatch too.
			entryOf := func(m map[string]types.AttributeValue) string {
				var fs []string
				for _, k := range slices.Sorted(maps.Keys(m)) {
					t := "S"
					if _, ok := m[k].(*types.AttributeValueMemberS); !ok {
						t = fmt.Sprintf("%T", m[k])
					}
					fs = append(fs, k+"="+t+":"+text(m[k]))
				}
				return strings.Join(fs, " ")
			}
			short := func(m map[string]types.AttributeValue) string {
				return text(m["sk"]) + " by " + text(m["author"]) + ": " + text(m["text"])
			}
			first := ""
			for _, it := range items {
				sk := text(it["sk"])
				switch {
				case sk == "METADATA":
					found = true
					if l, ok := it["recentComments"].(*types.AttributeValueMemberL); ok {
						var es []string
						for _, ev := range l.Value {
							m, ok := ev.(*types.AttributeValueMemberM)
							if !ok {
								es = append(es, fmt.Sprintf("not a map: %T", ev))
								continue
							}
							if first == "" {
								first = short(m.Value)
							}
							es = append(es, entryOf(m.Value))
						}
						got = strings.Join(es, " | ")
					}
				case strings.HasPrefix(sk, "COMMENT#") && it["createdAt"] != nil:
					e := map[string]types.AttributeValue{}
					for name, from := range map[string]string{"pk": "pk", "sk": "sk", "createdAt": "createdAt", "author": "userName", "text": "text"} {
						if v, ok := it[from]; ok { // an attribute the comment lacks is left out
							e[name] = v
						}
					}
					comments = append(comments, entry{text(it["createdAt"]), sk, entryOf(e)})
				}
			}
			// Newest first; of equal times the greater key (the pk is the same).
			slices.SortFunc(comments, func(a, b entry) int {
				if a.at != b.at {
					return strings.Compare(b.at, a.at)
				}
				return strings.Compare(b.sk, a.sk)
			})
			var es []string
			for i := 0; i < len(comments) && i < 3; i++ {
				es = append(es, comments[i].full)
			}
			want = strings.Join(es, " | ")
			if got == "" {
				got = "-" // no list, or an empty one: right for a post without comments
			}
			if len(es) > 0 {
				example = fmt.Sprintf("%s recentComments [%s, ...]", pk, first)
			}
			return got, want, example, found
		}); err != nil {
			return 0, err
		}
	}
	oldest := extremeCheck{rule: "folder-oldest-upload", what: "folders hold their oldest file's uploadedAt"}
	if _, err := oldest.tally(ctx, p, "FOLDER#f%04d", workload.Demo.Folders, func(pk string, items []map[string]types.AttributeValue) (got, want, example string, found bool) {
		for _, it := range items {
			sk := text(it["sk"])
			switch {
			case sk == "METADATA":
				found, got = true, text(it["oldestUpload"])
			case strings.HasPrefix(sk, "FILE#") && it["uploadedAt"] != nil && (want == "" || text(it["uploadedAt"]) < want):
				want = text(it["uploadedAt"])
			}
		}
		return got, want, fmt.Sprintf("%s oldestUpload %s", pk, got), found
	}); err != nil {
		return 0, err
	}
	latest := extremeCheck{rule: "user-latest-post", what: "users show their newest published post's title"}
	if _, err := latest.tally(ctx, p, "USER#u%04d", workload.Demo.Users, func(pk string, items []map[string]types.AttributeValue) (got, want, example string, found bool) {
		var at, key string
		for _, it := range items {
			sk := text(it["sk"])
			switch {
			case sk == "PROFILE":
				found, got = true, text(it["latestPostTitle"])
			case strings.HasPrefix(sk, "POST#") && text(it["status"]) == "published" && it["createdAt"] != nil:
				// Newest by createdAt; of equal times the greater key (the pk is the same).
				if c := text(it["createdAt"]); c > at || (c == at && sk > key) {
					at, key, want = c, sk, text(it["title"])
				}
			}
		}
		if want != "" {
			example = fmt.Sprintf("%s latestPostTitle %q (%s, %s)", pk, got, key, at)
		}
		return got, want, example, found
	}); err != nil {
		return 0, err
	}
	stats, err := queryAll(ctx, p, "", "pk", "STATS#global", "STATS")
	if err != nil {
		return 0, err
	}
	global := extremeCheck{rule: "global-post-count", what: "STATS#global counts every post", checked: 1}
	if i := slices.IndexFunc(stats, func(it map[string]types.AttributeValue) bool { return text(it["sk"]) == "STATS" }); i >= 0 {
		got := text(stats[i]["postCount"])
		if got == fmt.Sprint(posts) {
			global.correct = 1
		}
		global.example = fmt.Sprintf("STATS#global postCount %s, %d posts", got, posts)
	}

	fmt.Fprintln(w, "\n6. Max, min, latest, top and the global count, recomputed here from the items of each target's partition:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	wrong := 0
	checks := []extremeCheck{last, oldest, latest, global}
	if names["post-recent-comments"] {
		checks = []extremeCheck{last, recent, oldest, latest, global}
	}
	for _, c := range checks {
		fmt.Fprintf(tw, "   %s\t%d of %d %s\te.g. %s\n", c.rule, c.correct, c.checked, c.what, c.example)
		wrong += c.checked - c.correct
	}
	_ = tw.Flush()
	return wrong, nil
}

// tally queries the n partitions pkf renders (with 0..n-1) and counts, into c, those whose
// target holds what its sources say. scan reads one partition's items: the target's stored
// value, what its sources say ("" for none, shown as "-"), an example line ("" for none) and
// whether the partition holds the target. It returns how many partitions did.
func (c *extremeCheck) tally(ctx context.Context, p *local.Pipeline, pkf string, n int,
	scan func(pk string, items []map[string]types.AttributeValue) (got, want, example string, found bool)) (int, error) {
	targets := 0
	for i := range n {
		pk := fmt.Sprintf(pkf, i)
		items, err := queryAll(ctx, p, "", "pk", pk, "")
		if err != nil {
			return 0, err
		}
		got, want, example, found := scan(pk, items)
		if !found {
			continue
		}
		targets++
		if want == "" {
			want = "-"
		}
		c.checked++
		if got == want {
			c.correct++
		}
		if c.example == "" {
			c.example = example
		}
	}
	return targets, nil
}
