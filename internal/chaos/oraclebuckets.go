package chaos

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// dayTTL is the ttl of rule post-daily-comments in rules/social.yaml: a day item expires
// this long after its UTC day ends.
const dayTTL = 3650 * 24 * time.Hour

// commentDay returns the key of the PostDay item a comment at k counts into: its post's
// partition, sk DAY# and the UTC day of the createdAt in the comment's sk
// (COMMENT#{createdAt}#{commentId}). The generator writes RFC 3339 times; a comment whose
// time does not parse counts into no day, as Denorm leaves it unlinked.
func commentDay(k Key) (Key, time.Time, bool) {
	rest := strings.TrimPrefix(k.SK, "COMMENT#")
	at, _, ok := strings.Cut(rest, "#")
	if !ok {
		return Key{}, time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return Key{}, time.Time{}, false
	}
	day := t.UTC().Truncate(24 * time.Hour)
	return Key{k.PK, "DAY#" + day.Format("2006-01-02")}, day, true
}

// expectDays adds the PostDay items of rule post-daily-comments to o.want: the number of
// live comments of each post and UTC day, and the item's ttl. The rule creates a day item
// on its first comment (missingTarget: create), so a day with comments must have one; a day
// whose comments are all gone may have one holding 0, or none (a comment put and deleted in
// one batch nets 0 and creates nothing).
func (o *oracle) expectDays() {
	n := map[Key]int{}
	start := map[Key]time.Time{}
	for _, k := range o.m.Live(Comment) {
		if dk, day, ok := commentDay(k); ok {
			n[dk]++
			start[dk] = day
		}
	}
	for k := range o.table {
		if !strings.HasPrefix(k.PK, "POST#") || !strings.HasPrefix(k.SK, "DAY#") {
			continue
		}
		if day, err := time.Parse("2006-01-02", strings.TrimPrefix(k.SK, "DAY#")); err == nil {
			start[k] = day
		}
	}
	for k, day := range start {
		ttl := day.Add(24 * time.Hour).Add(dayTTL).Unix()
		o.want[k] = map[string]types.AttributeValue{
			"commentCount": &types.AttributeValueMemberN{Value: fmt.Sprint(n[k])},
			"ttl":          &types.AttributeValueMemberN{Value: fmt.Sprint(ttl)},
		}
		if n[k] == 0 {
			if _, ok := o.table[k]; !ok {
				delete(o.want, k)
			}
		}
	}
}

// folderTopN is n of rule folder-daily-files in rules/social.yaml.
const folderTopN = 2

// expectFolderDays adds the FolderDay items of rule folder-daily-files to o.want: per
// folder and UTC day (the day of the uploadedAt in the file's sk, FILE#{uploadedAt}#{fileId}),
// the 2 live files of that day greatest by their uploadedAt attribute (a number or a
// string), ties to the greater key, each entry {pk, sk, uploadedAt, name} (name absent when
// the file lacks it), and the item's ttl. The first file of a day creates its item; a day
// whose files are all gone keeps its item with an empty list, or has none (a file put and
// deleted before its records were applied creates nothing). Written without the planner's
// code.
func (o *oracle) expectFolderDays() {
	byDay := map[Key][]topSource{}
	start := map[Key]time.Time{}
	for _, k := range o.m.Live(File) {
		it, _ := o.m.Item(k)
		at := it["uploadedAt"]
		if rankOf(at) == 0 {
			continue
		}
		seg, _, ok := strings.Cut(strings.TrimPrefix(k.SK, "FILE#"), "#")
		if !ok {
			continue
		}
		day, err := time.Parse("2006-01-02", seg)
		if err != nil {
			continue // links to no bucket (the generator writes days; a time would parse too)
		}
		dk := Key{k.PK, "DAY#" + day.Format("2006-01-02")}
		e := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK}, "uploadedAt": at}
		if name, ok := it["name"]; ok {
			e["name"] = name
		}
		byDay[dk] = append(byDay[dk], topSource{at: at, key: k.PK + "\x00" + k.SK, e: e})
		start[dk] = day
	}
	for k := range o.table {
		if !strings.HasPrefix(k.PK, "FOLDER#") || !strings.HasPrefix(k.SK, "DAY#") {
			continue
		}
		if day, err := time.Parse("2006-01-02", strings.TrimPrefix(k.SK, "DAY#")); err == nil {
			start[k] = day
		}
	}
	for k, day := range start {
		ss := byDay[k]
		if len(ss) == 0 {
			if _, ok := o.table[k]; !ok {
				continue
			}
		}
		o.want[k] = map[string]types.AttributeValue{
			"recentFiles": &types.AttributeValueMemberL{Value: topList(ss, folderTopN)},
			"ttl":         &types.AttributeValueMemberN{Value: fmt.Sprint(day.Add(24 * time.Hour).Add(dayTTL).Unix())},
		}
	}
}
