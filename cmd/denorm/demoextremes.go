package main

import (
	"context"
	"fmt"
	"io"
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
// social example's max, min and latest rules and the global post count, prints one line
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
	posts := 0
	for i := 0; i < workload.Demo.Posts; i++ {
		pk := fmt.Sprintf("POST#p%04d", i)
		items, err := queryAll(ctx, p, "", "pk", pk, "")
		if err != nil {
			return 0, err
		}
		want, got, found := "", "", false
		for _, it := range items {
			sk := text(it["sk"])
			switch {
			case sk == "METADATA":
				found, got = true, text(it["lastCommentAt"])
			case strings.HasPrefix(sk, "COMMENT#") && text(it["createdAt"]) > want:
				want = text(it["createdAt"])
			}
		}
		if !found {
			continue
		}
		posts++
		if want == "" {
			want = "-"
		}
		last.checked++
		if got == want {
			last.correct++
		}
		if last.example == "" && want != "-" {
			last.example = fmt.Sprintf("%s lastCommentAt %s", pk, got)
		}
	}
	oldest := extremeCheck{rule: "folder-oldest-upload", what: "folders hold their oldest file's uploadedAt"}
	for i := 0; i < workload.Demo.Folders; i++ {
		pk := fmt.Sprintf("FOLDER#f%04d", i)
		items, err := queryAll(ctx, p, "", "pk", pk, "")
		if err != nil {
			return 0, err
		}
		want, got, found := "", "", false
		for _, it := range items {
			sk := text(it["sk"])
			switch {
			case sk == "METADATA":
				found, got = true, text(it["oldestUpload"])
			case strings.HasPrefix(sk, "FILE#") && it["uploadedAt"] != nil && (want == "" || text(it["uploadedAt"]) < want):
				want = text(it["uploadedAt"])
			}
		}
		if !found {
			continue
		}
		if want == "" {
			want = "-"
		}
		oldest.checked++
		if got == want {
			oldest.correct++
		}
		if oldest.example == "" {
			oldest.example = fmt.Sprintf("%s oldestUpload %s", pk, got)
		}
	}
	latest := extremeCheck{rule: "user-latest-post", what: "users show their newest published post's title"}
	for i := 0; i < workload.Demo.Users; i++ {
		pk := fmt.Sprintf("USER#u%04d", i)
		items, err := queryAll(ctx, p, "", "pk", pk, "")
		if err != nil {
			return 0, err
		}
		var at, key, want, got string
		found := false
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
		if !found {
			continue
		}
		if want == "" {
			want = "-"
		}
		latest.checked++
		if got == want {
			latest.correct++
		}
		if latest.example == "" && want != "-" {
			latest.example = fmt.Sprintf("%s latestPostTitle %q (%s, %s)", pk, got, key, at)
		}
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

	fmt.Fprintln(w, "\n6. Max, min, latest and the global count, recomputed here from the items of each target's partition:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	wrong := 0
	for _, c := range []extremeCheck{last, oldest, latest, global} {
		fmt.Fprintf(tw, "   %s\t%d of %d %s\te.g. %s\n", c.rule, c.correct, c.checked, c.what, c.example)
		wrong += c.checked - c.correct
	}
	_ = tw.Flush()
	return wrong, nil
}
