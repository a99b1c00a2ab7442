// Package rules is Denorm's rules language: the YAML file that names the table layout,
// the entities (recognised by key templates or a type attribute) and the copy, mirror,
// count and sum rules between them.
//
// Loading has three stages: YAML nodes (with line and column), the typed File below, and a
// pure Validate that returns every problem at once. Compile turns a valid File into an
// immutable Set that the planner evaluates.
package rules

import (
	"fmt"

	"github.com/denorm/denorm/internal/table"
)

// Pos is a position in the rules file (1-based line and column).
type Pos struct {
	Line, Col int
}

// File is a rules file as written, after YAML decoding and before validation.
type File struct {
	Path     string // as given to Load, for messages
	Version  int
	Table    table.Spec
	TablePos Pos
	// Positions of table fields by dotted path, e.g. "localIndexes.0.sortKey".
	TableFields map[string]Pos
	Entities    []Entity // in file order
	Rules       []Rule   // in file order
	// Positions of the top-level values by key ("version", "table", "entities", "rules"),
	// so that file-level problems such as a wrong version point at the line.
	Fields map[string]Pos
}

// Entity is how an item is recognised.
type Entity struct {
	Name string
	Pos  Pos
	// Keys maps a key attribute of the table or an index (pk, sk, gsi1pk, lsi0_sk ...) to its
	// template source, e.g. "USER#{userId}". KeyOrder keeps file order.
	Keys     map[string]string
	KeyOrder []string
	// Sparse lists index key attributes (of Keys) that an item may lack: the entity matches
	// an item with or without them, and checks their templates only when they are present.
	// Removing such a key takes an item out of a sparse index without changing what it is.
	// The table's own partition and sort keys are never sparse.
	Sparse []string
	// Type recognises ElectroDB / effect-dynamodb style items by an attribute value
	// (for example __edd_e__ = Task). Optional; when set it is checked besides the keys.
	TypeAttribute string
	TypeEquals    string
	// Attributes are the item's other attributes that rules may read or write. A variable of
	// another entity's template may be taken from one of these (Post.userId -> USER#{userId}).
	Attributes []string
	// Positions of fields by name ("pk", "type", "attributes.2", "sparse.0" ...).
	Fields map[string]Pos
}

// Kind is a rule's kind.
type Kind string

// Rule kinds.
const (
	KindCopy   Kind = "copy"
	KindMirror Kind = "mirror"
	KindCount  Kind = "count"
	KindSum    Kind = "sum"
	KindMax    Kind = "max"
	KindMin    Kind = "min"
	KindLatest Kind = "latest"
	KindTop    Kind = "top"
	// KindDistinct counts the different values of an attribute (or key variable) among a
	// target's sources: a count of reference-count items, one per (target, value).
	KindDistinct Kind = "distinct"
)

// Kinds is every rule kind. Code that handles kinds switches on each explicitly and fails
// in its default branch; tests run every kind through every such switch, so a kind added
// here and missed somewhere fails a test instead of being silently treated as another.
var Kinds = []Kind{KindCopy, KindMirror, KindCount, KindSum, KindMax, KindMin, KindLatest, KindTop, KindDistinct}

// Aggregate reports whether k keeps a value added up over many sources (count, sum,
// distinct): one applied as deltas to a state item, exactly once, and copied onto the
// target. min and max are no aggregates in this sense (Extreme).
func (k Kind) Aggregate() bool { return k == KindCount || k == KindSum || k == KindDistinct }

// Extreme reports whether k keeps the greatest or least value over many sources (max, min)
// or the attributes of the source greatest by a sort attribute (latest), or a list of the
// n greatest sources (top): raised idempotently, recomputed by one query when its holder
// may leave.
func (k Kind) Extreme() bool {
	return k == KindMax || k == KindMin || k == KindLatest || k == KindTop
}

// Source-delete behaviours of copy rules.
const (
	OnDeleteKeep   = "keep"   // targets keep the last copied values (default)
	OnDeleteRemove = "remove" // the copied attributes are removed from targets
	OnDeleteDelete = "delete" // targets are deleted
)

// TTL-expiry behaviours of count and sum rules.
const (
	OnExpiryRemove = "remove" // an item removed by TTL leaves the count (default)
	OnExpiryIgnore = "ignore" // an item removed by TTL stays counted
)

// Missing-target behaviours of count and sum rules.
const (
	MissingSkip   = "skip"   // the delta is dropped and counted in metrics (default)
	MissingCreate = "create" // the target is created holding only its keys and the counter
)

// How a count or sum into a target in another partition than its source is made exactly
// once (docs/processor.md, "Exactly once").
const (
	// ExactlyOnceRelay: each source's deltas go to a relay item in the target's partition
	// (one idempotent write per source and batch), and the relay items' own stream records
	// reach the target under its watermark. The default where the table allows it.
	ExactlyOnceRelay = "relay"
	// ExactlyOnceTransaction: each event's marker item and its deltas go in one transaction.
	ExactlyOnceTransaction = "transaction"
)

// Rule is one rule as written. Exactly one of Copy, Mirror, Agg is set, per Kind (Agg for
// count, sum, max and min).
type Rule struct {
	Name   string
	Pos    Pos
	Kind   Kind
	Copy   *Copy
	Mirror *Mirror
	Agg    *Aggregate // for count, sum, max and min
	// Positions by dotted path inside the rule ("copy.from", "copy.set.userName", "sum.where.status").
	Fields map[string]Pos
}

// Copy keeps attributes of targets equal to attributes of their source.
type Copy struct {
	From, To string
	// Via names how targets are found from a source: "key" (the target's primary key is
	// rendered from the source), "table" (a query of the base table's partition), or an index
	// name (a query of that index). Empty: chosen by Compile, in that order of preference.
	Via string
	// Set maps target attribute -> source attribute. SetOrder keeps file order.
	Set            map[string]string
	SetOrder       []string
	OnSourceDelete string // keep (default), remove, delete
}

// Mirror keeps a projected copy of each source item at another key (adjacency lists).
type Mirror struct {
	From, To   string
	Attributes []string
}

// Aggregate is a count (Value empty), a sum, a max or a min of Value over the items of
// entity Of, kept in attribute Attribute of the Into item each of them links to. max and
// min take only Of, Into, Value, Attribute and Where.
type Aggregate struct {
	Of, Into  string
	Attribute string
	// Value is, for sum, the numeric attribute summed; for max and min, the number or string
	// compared; for distinct, the attribute (or "{keyVar}") whose different values count.
	Value string
	// By, for latest: the number or string attribute that orders the sources (ties broken
	// by the source's key). Set maps target attribute -> source attribute copied from the
	// greatest source; SetOrder keeps file order. latest has no Attribute or Value.
	By       string
	Set      map[string]string
	SetOrder []string
	// N, for top: how many sources the list keeps. EntryBytes bounds one entry's size
	// (0: DefaultEntryBytes); set attributes that would pass it are left out of the entry.
	// For top, Set maps entry attribute -> source attribute, and Attribute holds the list.
	N          int
	EntryBytes int
	// Where restricts membership: every attribute must pass each of its tests (where.go).
	// WhereOrder keeps file order.
	Where      map[string][]Test
	WhereOrder []string
	// WhereAny are the alternatives of where's any: besides every test of Where, an item
	// must pass all the tests of at least one of them. None: no any.
	WhereAny      []WhereAlt
	OnExpiry      string // remove (default), ignore
	MissingTarget string // skip (default), create
	// ExactlyOnce is how deltas into a target in another partition are made exactly once:
	// relay or transaction ("" picks relay where the table allows it).
	ExactlyOnce string
	// Split, for a count or sum into a hot target (one fed faster than one item takes
	// writes), is how many state parts its deltas are spread over (StatePartPrefix); 0 or 1
	// for none. It implies ExactlyOnceTransaction.
	Split int
	// TTL, for a target whose key holds a time bucket ({createdAt:day}), is how long after
	// the bucket ends the bucket item expires, as written ("90d", "36h"; "" for never).
	// Denorm writes the expiry to the table's TTL attribute when it creates the item.
	TTL string
}

// Bounds of top lists: a list of N entries of at most EntryBytes each stays within
// MaxTopBytes, a quarter of DynamoDB's 400 KB item limit, leaving the rest of the item to
// the application and other rules.
const (
	// MaxSplit bounds a hot target's state parts: every copy reads them all, and the copies
	// onto the target come from as many lanes at once as there are parts.
	MaxSplit          = 8
	MaxTopN           = 100
	DefaultEntryBytes = 1024
	MinEntryBytes     = 256
	MaxTopBytes       = 100 * 1024
)

// Problem is one validation or load error, with its position.
type Problem struct {
	File string
	Pos  Pos
	Rule string // rule (or entity, as `entity "X"`) the problem belongs to, if any
	Msg  string
}

func (p Problem) Error() string {
	loc := p.File
	if p.Pos.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", p.File, p.Pos.Line, p.Pos.Col)
	}
	if p.Rule != "" {
		return fmt.Sprintf("%s: %s: %s", loc, p.Rule, p.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, p.Msg)
}

// Problems is every problem found in a file, in file order. It is the error Load returns.
type Problems []Problem

func (ps Problems) Error() string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += "\n"
		}
		s += p.Error()
	}
	return s
}
