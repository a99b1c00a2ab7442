package rules

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// maxNodeVisits bounds the work aliases can cause: a small file whose anchors are used
// many times inside each other would otherwise expand exponentially.
const maxNodeVisits = 200_000

// yamlDecoder is stage 2: it fills a File from YAML nodes and collects every shape problem.
type yamlDecoder struct {
	f      *File
	probs  Problems
	visits int
	tooBig bool
	// dropped holds the positions of values that had the wrong shape and were left out of
	// the File: Parse drops Validate's problems at those positions (see Parse).
	dropped map[Pos]bool
}

func newYAMLDecoder(f *File) *yamlDecoder {
	return &yamlDecoder{f: f, dropped: map[Pos]bool{}}
}

// yamlEntry is one key: value pair of a mapping.
type yamlEntry struct {
	key      string
	keyNode  *yaml.Node
	valNode  *yaml.Node
	keyPos   Pos
	valuePos Pos
}

func posOf(n *yaml.Node) Pos { return Pos{n.Line, n.Column} }

func (d *yamlDecoder) problem(at Pos, ctx, format string, args ...any) {
	d.probs = append(d.probs, Problem{File: d.f.Path, Pos: at, Rule: ctx, Msg: fmt.Sprintf(format, args...)})
}

// drop reports a value of the wrong shape and remembers its positions (see dropped).
func (d *yamlDecoder) drop(ctx string, n *yaml.Node, format string, args ...any) {
	d.problem(posOf(n), ctx, format, args...)
	d.dropped[posOf(n)] = true
}

// resolve follows aliases, counting visits against maxNodeVisits. It returns nil, reporting
// it once, when the budget is spent; callers then stop reading.
func (d *yamlDecoder) resolve(n *yaml.Node) *yaml.Node {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode && hops < 100; hops++ {
		n = n.Alias
	}
	d.visits++
	if n == nil || n.Kind == yaml.AliasNode || d.visits > maxNodeVisits {
		if !d.tooBig {
			d.tooBig = true
			d.problem(Pos{}, "", "the file has too many YAML nodes or aliases (more than %d); write it out without nested anchors", maxNodeVisits)
		}
		return nil
	}
	return n
}

// describe names a node's shape for messages.
func describe(n *yaml.Node) string {
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return "an empty value"
	case n.Kind == yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported YAML node"
}

// entries returns the pairs of a mapping node, reporting (and skipping) repeated keys, keys
// that are not plain strings and merge keys. what names the mapping in messages.
func (d *yamlDecoder) entries(n *yaml.Node, ctx, what string) []yamlEntry {
	if n = d.resolve(n); n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.drop(ctx, n, "%s must be a mapping (name: value ...), found %s", what, describe(n))
		return nil
	}
	var out []yamlEntry
	seen := map[string]Pos{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], d.resolve(n.Content[i+1])
		if v == nil {
			return out
		}
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" {
			d.problem(posOf(k), ctx, "%s: keys must be plain names, found %s", what, describe(k))
			continue
		}
		if k.Tag == "!!merge" {
			d.problem(posOf(k), ctx, "%s: YAML merge keys (<<) are not supported; write the fields out", what)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.problem(posOf(k), ctx, "%s: %q is given twice (first on line %d); keep one", what, k.Value, first.Line)
			continue
		}
		seen[k.Value] = posOf(k)
		out = append(out, yamlEntry{key: k.Value, keyNode: k, valNode: v, keyPos: posOf(k), valuePos: posOf(v)})
	}
	return out
}

// str returns a scalar's text. Numbers and booleans are accepted as written, since key
// templates and type values such as "1" are text to DynamoDB.
func (d *yamlDecoder) str(n *yaml.Node, ctx, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		hint := ""
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0 {
			hint = `; a value starting with '{' must be quoted, e.g. "{userId}"`
		}
		d.drop(ctx, n, "%s must be a string, found %s%s", what, describe(n), hint)
		return "", false
	}
	return n.Value, true
}

// strList returns the strings of a sequence node and each item's position.
func (d *yamlDecoder) strList(n *yaml.Node, ctx, what string) ([]string, []Pos) {
	if n.Kind != yaml.SequenceNode {
		d.drop(ctx, n, "%s must be a list, e.g. [a, b], found %s", what, describe(n))
		return nil, nil
	}
	var out []string
	var at []Pos
	for i, item := range n.Content {
		item = d.resolve(item)
		if item == nil {
			return out, at
		}
		s, ok := d.str(item, ctx, fmt.Sprintf("%s item %d", what, i+1))
		if ok {
			out = append(out, s)
			at = append(at, posOf(item))
		}
	}
	return out, at
}

// unknownField reports a key a mapping does not allow, suggesting the nearest allowed one.
func (d *yamlDecoder) unknownField(e yamlEntry, ctx, what string, allowed []string) {
	d.problem(e.keyPos, ctx, "unknown field %q in %s%s; allowed: %s", e.key, what, suggest(e.key, allowed), strings.Join(allowed, ", "))
}

// suggest returns ` (did you mean "x"?)` for the option nearest to word, if one is close.
func suggest(word string, options []string) string {
	if best := nearest(word, options); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// nearest returns the option spelled nearly as word, or "" if none is close.
func nearest(word string, options []string) string {
	best, bestD := "", 3
	lw := strings.ToLower(word)
	for _, o := range options {
		lo := strings.ToLower(o)
		dist := editDistance(lw, lo)
		// A long shared start is a likely slip of the ending (entity for entities).
		if commonPrefix(lw, lo) >= 5 {
			dist = min(dist, 2)
		}
		if dist < bestD && dist < len(o) {
			best, bestD = o, dist
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// editDistance is the Levenshtein distance, bounded in cost by the short names it sees.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// sortedKeys returns a map's keys in order, for hand-built Files that leave the *Order
// slices empty.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// positiveInt returns a scalar whole number greater than zero (top's n and entryBytes).
func (d *yamlDecoder) positiveInt(n *yaml.Node, ctx, what string) (int, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.Atoi(n.Value); err == nil && v > 0 {
			return v, true
		}
	}
	d.drop(ctx, n, "%s must be a whole number greater than 0, found %s", what, describe(n))
	return 0, false
}
