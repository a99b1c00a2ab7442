package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/workload"
)

// dailyRule is the social example's time-bucket rule: comments per post per UTC day.
const dailyRule = "post-daily-comments"

// showDailyBuckets shows the day items of the post with the most comments next to its
// comments counted per day from the comments themselves, and returns how many days
// disagree. The day is the sk's createdAt: COMMENT#2025-01-05T10:00:00Z#c0001. A rules file
// without the social example's bucket rule shows nothing.
func showDailyBuckets(ctx context.Context, w io.Writer, p *local.Pipeline, f *rules.File) (int, error) {
	found := false
	for _, r := range f.Rules {
		found = found || r.Name == dailyRule
	}
	if !found {
		return 0, nil
	}
	best, bestN := "", 0
	var bestItems []map[string]string
	for i := 0; i < workload.Demo.Posts; i++ {
		pk := fmt.Sprintf("POST#p%04d", i)
		items, err := queryAll(ctx, p, "", "pk", pk, "")
		if err != nil {
			return 0, err
		}
		n := 0
		for _, it := range items {
			if strings.HasPrefix(text(it["sk"]), "COMMENT#") {
				n++
			}
		}
		if n > bestN {
			best, bestN, bestItems = pk, n, nil
			for _, it := range items {
				bestItems = append(bestItems, map[string]string{"sk": text(it["sk"]), "commentCount": text(it["commentCount"]), "ttl": text(it["ttl"])})
			}
		}
	}
	if best == "" {
		return 0, nil
	}
	type day struct {
		stored, ttl string
		truth       int
	}
	days := map[string]*day{}
	get := func(d string) *day {
		if days[d] == nil {
			days[d] = &day{stored: "-"}
		}
		return days[d]
	}
	for _, it := range bestItems {
		sk := it["sk"]
		switch {
		case strings.HasPrefix(sk, "COMMENT#") && len(sk) >= len("COMMENT#2006-01-02"):
			get(sk[len("COMMENT#"):len("COMMENT#2006-01-02")]).truth++
		case strings.HasPrefix(sk, "DAY#"):
			d := get(strings.TrimPrefix(sk, "DAY#"))
			d.stored, d.ttl = it["commentCount"], it["ttl"]
		}
	}
	names := make([]string, 0, len(days))
	for d := range days {
		names = append(names, d)
	}
	sort.Strings(names)
	wrong := 0
	for _, d := range names {
		if days[d].stored != strconv.Itoa(days[d].truth) {
			wrong++
		}
	}
	// Its busiest days, in day order.
	const shown = 6
	busy := append([]string(nil), names...)
	sort.SliceStable(busy, func(i, j int) bool { return days[busy[i]].truth > days[busy[j]].truth })
	if len(busy) > shown {
		busy = busy[:shown]
	}
	sort.Strings(busy)
	fmt.Fprintf(w, "\n5. Comments per day (%s): %s has %d comments on %d days; its busiest day items (pk %s, sk DAY#<UTC day>):\n",
		dailyRule, best, bestN, len(names), best)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "   day\tcommentCount\tcomments that day\texpires\t")
	for _, d := range busy {
		exp := "-"
		if s, err := strconv.ParseInt(days[d].ttl, 10, 64); err == nil {
			exp = time.Unix(s, 0).UTC().Format("2006-01-02")
		}
		fmt.Fprintf(tw, "   DAY#%s\t%s\t%d\t%s\t\n", d, days[d].stored, days[d].truth, exp)
	}
	_ = tw.Flush()
	if len(names) > len(busy) {
		fmt.Fprintf(w, "   ... and %d more days\n", len(names)-len(busy))
	}
	fmt.Fprintf(w, "   %d of %d days hold the number of that day's comments.\n", len(names)-wrong, len(names))
	return wrong, nil
}
