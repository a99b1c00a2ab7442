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
