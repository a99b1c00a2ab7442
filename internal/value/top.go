package value

import (
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/rules"
)

// TopEntry is one entry of a top list: its source's key (LatestKey), by value, and the
// entry as stored.
type TopEntry struct {
	Key  string
	By   types.AttributeValue
	Item map[string]types.AttributeValue
}

// TopBefore orders entries greatest first: by value, then key.
func TopBefore(a, b TopEntry) bool { return LatestBetter(a.By, a.Key, b.By, b.Key) }

// TopSort sorts entries greatest first.
func TopSort(es []TopEntry) {
	slices.SortFunc(es, func(a, b TopEntry) int {
		switch {
		case TopBefore(a, b):
			return -1
		case TopBefore(b, a):
			return 1
		}
		return 0
	})
}

// TopKeep adds e to es (sorted, greatest first, at most n long) in place of an entry of
// the same source, keeping the n greatest. The verify pass folds sources in with it.
func TopKeep(es []TopEntry, e TopEntry, n int) []TopEntry {
	if i := slices.IndexFunc(es, func(x TopEntry) bool { return x.Key == e.Key }); i >= 0 {
		es = slices.Delete(es, i, i+1)
	}
	i, _ := slices.BinarySearchFunc(es, e, func(x, t TopEntry) int {
		if TopBefore(x, t) {
			return -1
		}
		return 1
	})
	if i >= n {
		return es
	}
	es = slices.Insert(es, i, e)
	if len(es) > n {
		es = es[:n]
	}
	return es
}

// TopOf is the list of the n greatest of sources' entries.
func TopOf(es []TopEntry, n int) []TopEntry {
	TopSort(es)
	if len(es) > n {
		es = es[:n]
	}
	return es
}

// TopNext computes a target's list from the stored one (sorted, as written) and a batch's
// changes to it: ups, the entries of sources that are (still) members, and left, the keys
// of sources that are no longer. query is true when the result cannot be known without
// reading the sources: the stored list was full and a listed source left it or fell (an
// unlisted source may now belong in its place).
func TopNext(n int, stored []TopEntry, ups []TopEntry, left []string) (next []TopEntry, query bool) {
	full := len(stored) >= n
	next = make([]TopEntry, 0, len(stored)+len(ups))
	for _, s := range stored {
		if slices.Contains(left, s.Key) {
			query = query || full
			continue
		}
		if i := slices.IndexFunc(ups, func(u TopEntry) bool { return u.Key == s.Key }); i >= 0 {
			if full && TopBefore(s, ups[i]) {
				query = true // fell: an unlisted source may now come before it
			}
			continue
		}
		next = append(next, s)
	}
	next = append(next, ups...)
	return TopOf(next, n), query
}

// DecodeTop reads a stored top list (nil: absent, an empty list). ok is false when it is
// not a list of entries this rule writes (an application wrote something else there).
func DecodeTop(r *rules.CompiledRule, v types.AttributeValue) (es []TopEntry, ok bool) {
	if v == nil {
		return nil, true
	}
	l, isList := v.(*types.AttributeValueMemberL)
	if !isList {
		return nil, false
	}
	for _, ev := range l.Value {
		m, isMap := ev.(*types.AttributeValueMemberM)
		if !isMap {
			return nil, false
		}
		by := ExtremeValue(r, m.Value)
		if by == nil || m.Value[r.Source.Keys[0].Attr] == nil {
			return nil, false
		}
		es = append(es, TopEntry{Key: LatestKey(r, m.Value), By: by, Item: m.Value})
	}
	if len(es) > r.Agg.N {
		return nil, false
	}
	for i := 1; i < len(es); i++ {
		if !TopBefore(es[i-1], es[i]) { // out of order, or one source twice
			return nil, false
		}
	}
	return es, true
}

// TopList is the stored form of es.
func TopList(es []TopEntry) types.AttributeValue {
	l := make([]types.AttributeValue, len(es))
	for i, e := range es {
		l[i] = &types.AttributeValueMemberM{Value: e.Item}
	}
	return &types.AttributeValueMemberL{Value: l}
}

// SameTop reports whether two lists hold the same entries. An absent list and an empty
// one are the same.
func SameTop(a, b []TopEntry) bool {
	return slices.EqualFunc(a, b, func(x, y TopEntry) bool {
		return x.Key == y.Key && Equal(&types.AttributeValueMemberM{Value: x.Item}, &types.AttributeValueMemberM{Value: y.Item})
	})
}

// ItemSize approximates what v adds to DynamoDB's item size: strings and binaries their
// length, numbers about one byte per two digits plus one, one byte for booleans and nulls,
// three bytes plus each element (and each map key) for lists and maps.
func ItemSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return len(strings.TrimLeft(x.Value, "-0."))/2 + 2
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + ItemSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + ItemSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range x.Value {
			n += len(s)/2 + 2
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	}
	return 1
}
