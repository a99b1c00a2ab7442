package rules

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// A where restricts which items of the source entity a count, sum, max, min, latest or
// top rule takes: each attribute it names must pass every test given for it.
//
//	where:
//	  status: published             # equals: a string, a number or true/false
//	  temp: {gt: 80}                # lt, lte, gt, gte: numbers by value, strings byte by byte
//	  total: {gte: 100, lt: 1000}   # several tests of one attribute: all must pass
//	  state: {in: [ok, calibrated]} # one of a list; notIn: none of it (or absent)
//	  kind: {ne: faulty}            # absent, or another value
//	  deletedAt: {exists: false}    # absent; exists: true, present (any type)
//	  any:                          # and all the tests of at least one of these
//	    - priority: {gte: 3}
//	    - pinned: true

// Op names a where test.
type Op string

// The where tests.
const (
	OpEq     Op = "eq"
	OpNe     Op = "ne"
	OpLt     Op = "lt"
	OpLte    Op = "lte"
	OpGt     Op = "gt"
	OpGte    Op = "gte"
	OpIn     Op = "in"
	OpNotIn  Op = "notIn"
	OpExists Op = "exists"
)

// whereOps lists the tests in the order messages name them.
var whereOps = []string{string(OpEq), string(OpNe), string(OpLt), string(OpLte), string(OpGt), string(OpGte),
	string(OpIn), string(OpNotIn), string(OpExists)}

// Ordered reports whether op compares by order (lt, lte, gt, gte).
func (op Op) Ordered() bool { return op == OpLt || op == OpLte || op == OpGt || op == OpGte }

// Test is one test of a where attribute.
type Test struct {
	Op Op
	// Values: the one value of eq, ne, lt, lte, gt and gte; the list of in and notIn; none
	// for exists.
	Values []Operand
	// Exists is what an exists test wants: present (true) or absent (false).
	Exists bool
}

// OperandKind is the YAML type of a where value, which is the DynamoDB type it matches.
type OperandKind uint8

// The kinds of where values.
const (
	StringOperand OperandKind = iota + 1 // matches S
	NumberOperand                        // matches N, compared by exact value
	BoolOperand                          // matches BOOL
)

// Operand is a value a where test compares with, as written in YAML.
type Operand struct {
	Kind OperandKind
	// Text is the string, or the number as written (compared exactly, as sums add).
	Text string
	Bool bool
}

// String renders o as YAML would: strings quoted.
func (o Operand) String() string {
	switch o.Kind {
	case StringOperand:
		return strconv.Quote(o.Text)
	case BoolOperand:
		return strconv.FormatBool(o.Bool)
	}
	return o.Text
}

// String renders t as written in a where: `gt: 80`, `in: ["ok", "calibrated"]`.
func (t Test) String() string {
	switch t.Op {
	case OpExists:
		return fmt.Sprintf("exists: %t", t.Exists)
	case OpIn, OpNotIn:
		parts := make([]string, len(t.Values))
		for i, v := range t.Values {
			parts[i] = v.String()
		}
		return fmt.Sprintf("%s: [%s]", t.Op, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("%s: %s", t.Op, t.Values[0])
}

// WhereString renders an attribute's tests as written: the value alone for a single eq,
// else a mapping of tests.
func WhereString(ts []Test) string {
	if len(ts) == 1 && ts[0].Op == OpEq {
		return ts[0].Values[0].String()
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// WhereAttributes lists every attribute a's where tests, its any's included, once each in
// file order: what a record must carry, and what a change of watches.
func (a *Aggregate) WhereAttributes() []string {
	out := slices.Clone(a.WhereOrder)
	for _, alt := range a.WhereAny {
		for _, w := range alt.Order {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// WhereAlt is one alternative of a where's any: every attribute it names must pass each of
// its tests.
type WhereAlt struct {
	Tests map[string][]Test
	Order []string // the attributes in file order
}

// whereAny reads a where's any (at what, e.g. count.where.any): a list of one or more
// mappings of attribute tests, each read as a where's attributes are. An alternative
// holds no any or all of its own: the where stays one level deep.
func (d *yamlDecoder) whereAny(r *Rule, n *yaml.Node, ctx, what string) ([]WhereAlt, bool) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		found := describe(n)
		if n.Kind == yaml.SequenceNode {
			found = "an empty list"
		}
		d.drop(ctx, n, "%s must be a list of one or more alternatives, each a mapping of attribute tests, e.g. [{priority: {gte: 3}}, {pinned: true}], found %s", what, found)
		return nil, false
	}
	var out []WhereAlt
	ok := true
	for i, item := range n.Content {
		if item = d.resolve(item); item == nil {
			return nil, false
		}
		alt := fmt.Sprintf("%s[%d]", what, i+1)
		if item.Kind != yaml.MappingNode || len(item.Content) == 0 {
			d.drop(ctx, item, "%s must be a mapping of attribute tests, e.g. {pinned: true}, found %s", alt, describe(item))
			ok = false
			continue
		}
		a := WhereAlt{Tests: map[string][]Test{}}
		for _, e := range d.entries(item, ctx, alt) {
			if e.key == "any" || e.key == "all" {
				d.problem(e.keyPos, ctx, "%s: %s cannot be nested in any; an alternative's attributes must all pass already, so list each alternative in the one any", alt, e.key)
				ok = false
				continue
			}
			r.Fields[alt+"."+e.key] = e.keyPos
			if ts, good := d.whereTests(r, e.valNode, ctx, alt+"."+e.key); good {
				a.Tests[e.key] = ts
				a.Order = append(a.Order, e.key)
			} else {
				ok = false
			}
		}
		out = append(out, a)
	}
	return out, ok
}

// whereTests reads one attribute's tests: a scalar (equals) or a mapping of tests.
func (d *yamlDecoder) whereTests(r *Rule, n *yaml.Node, ctx, what string) ([]Test, bool) {
	if n.Kind != yaml.MappingNode {
		v, ok := d.operand(n, ctx, what, "a string, number or true/false the attribute must equal, or a mapping of tests such as {gt: 80}")
		return []Test{{Op: OpEq, Values: []Operand{v}}}, ok
	}
	entries := d.entries(n, ctx, what)
	if len(entries) == 0 {
		d.drop(ctx, n, "%s has no test; give one of %s, e.g. {gte: 100}", what, strings.Join(whereOps, ", "))
		return nil, false
	}
	var out []Test
	ok := true
	for _, e := range entries {
		r.Fields[what+"."+e.key] = e.keyPos
		t := Test{Op: Op(e.key)}
		opWhat := fmt.Sprintf("%s (%s)", what, e.key)
		switch t.Op {
		case OpEq, OpNe, OpLt, OpLte, OpGt, OpGte:
			v, good := d.operand(e.valNode, ctx, opWhat, "a string, number or true/false")
			t.Values, ok = []Operand{v}, ok && good
			if good && t.Op.Ordered() && v.Kind == BoolOperand {
				d.drop(ctx, e.valNode, "%s: true and false have no order; use eq or ne", opWhat)
				ok = false
			}
		case OpIn, OpNotIn:
			if e.valNode.Kind != yaml.SequenceNode || len(e.valNode.Content) == 0 {
				d.drop(ctx, e.valNode, "%s must be a list of one or more values, e.g. [ok, calibrated], found %s", opWhat, describe(e.valNode))
				ok = false
				continue
			}
			for i, item := range e.valNode.Content {
				if item = d.resolve(item); item == nil {
					return nil, false
				}
				v, good := d.operand(item, ctx, fmt.Sprintf("%s item %d", opWhat, i+1), "a string, number or true/false")
				t.Values, ok = append(t.Values, v), ok && good
			}
		case OpExists:
			if e.valNode.Kind != yaml.ScalarNode || e.valNode.Tag != "!!bool" {
				d.drop(ctx, e.valNode, "%s must be true (the attribute is present) or false (absent), found %s", opWhat, describe(e.valNode))
				ok = false
				continue
			}
			ok = e.valNode.Decode(&t.Exists) == nil && ok
		default:
			d.problem(e.keyPos, ctx, "%s: unknown test %q%s; use one of %s", what, e.key, suggest(e.key, whereOps), strings.Join(whereOps, ", "))
			ok = false
			continue
		}
		out = append(out, t)
	}
	if ok {
		if msg := mixedOrder(out); msg != "" {
			d.problem(posOf(n), ctx, "%s: %s", what, msg)
			ok = false
		}
	}
	return out, ok
}

// mixedOrder finds order tests of one attribute that compare with values of different
// types, which no value passes together.
func mixedOrder(ts []Test) string {
	var first *Test
	for i := range ts {
		t := &ts[i]
		if !t.Op.Ordered() {
			continue
		}
		if first == nil {
			first = t
			continue
		}
		if t.Values[0].Kind != first.Values[0].Kind {
			return fmt.Sprintf("%s and %s compare a number with a string, and no value is both; quote the number to compare strings, or unquote it", first, t)
		}
	}
	return ""
}

// operand reads a where value: a string, a number (kept as written) or a bool, as YAML
// typed it. want says what was expected, for the message.
func (d *yamlDecoder) operand(n *yaml.Node, ctx, what, want string) (Operand, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.drop(ctx, n, "%s must be %s, found %s", what, want, describe(n))
		return Operand{}, false
	}
	switch n.Tag {
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return Operand{Kind: BoolOperand, Bool: b}, true
		}
	case "!!int", "!!float":
		text := strings.ReplaceAll(n.Value, "_", "")
		plain := !strings.ContainsAny(strings.ToLower(text), "xob") // no 0x, 0o, 0b: DynamoDB reads decimals
		if _, ok := new(big.Rat).SetString(text); ok && plain {
			return Operand{Kind: NumberOperand, Text: text}, true
		}
	default:
		return Operand{Kind: StringOperand, Text: n.Value}, true
	}
	d.drop(ctx, n, "%s: %q is not a number DynamoDB can store; quote it to compare as a string", what, n.Value)
	return Operand{}, false
}
