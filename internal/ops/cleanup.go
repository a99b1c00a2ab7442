package ops

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/counter"
	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/rulesdiff"
)

// CleanupConfig is one clean-up run: what rules that are gone (or write less than they
// did) left on a table is removed with conditional writes, capped in write capacity and
// shown with a progress bar like a backfill. A run is idempotent: run again, it finds
// nothing left, so an interrupted clean-up is resumed by running it again.
type CleanupConfig struct {
	API   API
	Table string
	// Old is the rules the clean-ups belong to: they recognise the items.
	Old *rules.Set
	// New, when set, is the rules deployed now: what they write on an item is never removed,
	// whatever the clean-ups say (a rule renamed, an attribute another rule writes now).
	New *rules.Set
	// Cleanups says what to remove (from rulesdiff: attributes per old rule and entity).
	Cleanups []rulesdiff.Cleanup
	// Legacy also removes what versions before state items kept on the table (see
	// LegacyRule): rules.LegacyTargetAttrs on the application's items, park items, and
	// relay items in the targets' partitions. Nothing reads them any more.
	Legacy bool
	// DryRun reports what would be removed and writes nothing.
	DryRun bool
	// Segments, PageSize, MaxWCU, Concurrency, Examples and Progress are as in Config.
	Segments    int
	PageSize    int32
	MaxWCU      float64
	Concurrency int
	Examples    int
	Progress    io.Writer
}

// CleanupStats counts what a clean-up found and did for one old rule.
type CleanupStats struct {
	Rule   string `json:"rule"`
	Entity string `json:"entity"`
	// Items is how many items held something of the rule's; Cleaned how many of them had it
	// removed (or would have, in a dry run).
	Items   int64 `json:"items"`
	Cleaned int64 `json:"cleaned"`
	// Attributes is how many attributes were removed in all.
	Attributes int64 `json:"attributes"`
	// Deleted is how many of its version registry and fan-out job items were deleted.
	Deleted int64 `json:"deleted"`
	// Kept is how many attributes were left because the new rules write them on that item.
	Kept      int64    `json:"kept"`
	Conflicts int64    `json:"conflicts"`
	Failed    int64    `json:"failed"`
	Examples  []string `json:"examples"`
}

// CleanupReport is the outcome of a clean-up.
type CleanupReport struct {
	Scan
	Rules []*CleanupStats `json:"rules"`
	// Left is what is still there: conflicts and failures (or, in a dry run, everything found).
	Left int64 `json:"left"`
}

// LegacyRule names, in a clean-up report, what versions before state items left on the
// table (CleanupConfig.Legacy).
const LegacyRule = "(layout before state items)"

// cleaner is the state of one Cleanup.
type cleaner struct {
	cfg     CleanupConfig
	db      *db
	bar     *progress
	mu      sync.Mutex
	rep     *CleanupReport
	stats   map[string]*CleanupStats
	entity  map[string][]int // old entity -> indexes into cfg.Cleanups
	kept    map[string]map[string]bool
	scanned int64
}

// Cleanup scans the table and removes what cfg.Cleanups name: attributes from the items of
// the old rules' target entities and from the state items of their targets, and the
// rules' version registry and fan-out job items. Every write is conditional on the item
// still holding what was scanned; one that changed is read again and retried.
func Cleanup(ctx context.Context, cfg CleanupConfig) (*CleanupReport, error) {
	if cfg.Segments <= 0 {
		cfg.Segments = 4
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	mode := "cleanup"
	if cfg.DryRun {
		mode = "cleanup --dry-run"
	}
	c := &cleaner{cfg: cfg, rep: &CleanupReport{Scan: Scan{Table: cfg.Table, Mode: mode}}, stats: map[string]*CleanupStats{},
		entity: map[string][]int{}, kept: map[string]map[string]bool{},
		db: &db{api: cfg.API, table: cfg.Table, spec: cfg.Old.Table, lim: newLimiter(cfg.MaxWCU)}}
	for i, cl := range cfg.Cleanups {
		if cfg.Old.Rule(cl.Rule) == nil {
			return nil, fmt.Errorf("cleanup of rule %q: the old rules have no such rule", cl.Rule)
		}
		st := &CleanupStats{Rule: cl.Rule, Entity: cl.Entity, Examples: []string{}}
		c.stats[cl.Rule] = st
		c.rep.Rules = append(c.rep.Rules, st)
		c.entity[cl.Entity] = append(c.entity[cl.Entity], i)
	}
	if cfg.Legacy {
		st := &CleanupStats{Rule: LegacyRule, Examples: []string{}}
		c.stats[LegacyRule] = st
		c.rep.Rules = append(c.rep.Rules, st)
	}
	if cfg.New != nil {
		for _, e := range cfg.New.Entities {
			c.kept[e.Name] = rulesdiff.Written(cfg.New, e.Name)
		}
	}
	out, err := cfg.API.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cfg.Table)})
	if err != nil {
		return nil, fmt.Errorf("describing table %s: %w", cfg.Table, err)
	}
	start := time.Now()
	c.bar = newProgress(cfg.Progress, aws.ToInt64(out.Table.ItemCount), 0)
	err = c.scan(ctx)
	c.bar.finish()
	rep := c.rep
	rep.finish(start, c.scanned, c.db.writes, c.db.wcu)
	for _, st := range rep.Rules {
		if cfg.DryRun {
			rep.Left += st.Cleaned + st.Deleted
		}
		rep.Left += st.Conflicts + st.Failed
	}
	return rep, err
}

// scan reads every segment in parallel and cleans each page before reading the next.
func (c *cleaner) scan(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, c.cfg.Segments)
	for s := 0; s < c.cfg.Segments; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[s] = c.segment(ctx, s); errs[s] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (c *cleaner) segment(ctx context.Context, s int) error {
	in := &dynamodb.ScanInput{TableName: aws.String(c.cfg.Table), Segment: aws.Int32(int32(s)),
		TotalSegments: aws.Int32(int32(c.cfg.Segments))}
	if c.cfg.PageSize > 0 {
		in.Limit = aws.Int32(c.cfg.PageSize)
	}
	sem := make(chan struct{}, c.cfg.Concurrency)
	for {
		var out *dynamodb.ScanOutput
		err := withRetry(ctx, "scanning segment", func(ctx context.Context) error {
			var err error
			out, err = c.cfg.API.Scan(ctx, in)
			return err
		})
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		for _, it := range out.Items {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				c.item(ctx, record.Item(it))
			}()
		}
		wg.Wait()
		c.mu.Lock()
		c.scanned += int64(len(out.Items))
		c.mu.Unlock()
		c.bar.add(int64(len(out.Items)))
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// item cleans one scanned item, re-reading and retrying when it changed meanwhile.
func (c *cleaner) item(ctx context.Context, it record.Item) {
	spec := c.db.spec
	key := itemKey(spec, it)
	if c.cfg.Legacy && legacyItem(key) {
		c.deleteReserved(ctx, LegacyRule, key)
		return
	}
	if rules.IsReserved(key.PK) {
		if rule := c.reservedOf(key); rule != "" {
			c.deleteReserved(ctx, rule, key)
			return
		}
	}
	current := it
	for attempt := 0; attempt < maxAttempts; attempt++ {
		remove, kept := c.plan(current)
		if attempt == 0 {
			c.count(remove, kept)
		}
		if len(remove) == 0 {
			return // nothing (left) to remove
		}
		if c.cfg.DryRun {
			c.outcome(remove, Repaired, key, nil)
			return
		}
		var names []string
		for _, a := range remove {
			names = appendUniqStr(names, a.attr)
		}
		sort.Strings(names)
		cond := expression.AttributeExists(expression.Name(spec.PartitionKey))
		var ub expression.UpdateBuilder
		for _, n := range names {
			ub = ub.Remove(expression.Name(n))
			cond = cond.And(unchanged(n, current[n]))
		}
		err := c.db.update(ctx, key, ub, cond)
		if err == nil {
			c.outcome(remove, Repaired, key, names)
			return
		}
		if !retry.Refused(err) {
			c.outcome(remove, Failed, key, nil)
			return
		}
		if current, err = c.db.get(ctx, key); err != nil {
			c.outcome(remove, Failed, key, nil)
			return
		}
		if current == nil {
			c.outcome(remove, Resolved, key, nil)
			return
		}
	}
	remove, _ := c.plan(current)
	c.outcome(remove, Conflict, key, nil)
}

// removal is one attribute one old rule left on an item.
type removal struct {
	rule, attr string
}

// plan returns what to remove from item, and what the clean-ups name that the new rules
// write on it (kept).
func (c *cleaner) plan(item record.Item) (out, kept []removal) {
	spec := c.db.spec
	k := itemKey(spec, item)
	if target, ok := counter.TargetOf(k); ok && !plan.IsDistinctRef(k) { // a state item or a split state's part
		for _, e := range c.cfg.Old.Entities {
			if !keyMatches(e, target) {
				continue
			}
			for _, i := range c.entity[e.Name] {
				for _, a := range c.cfg.Cleanups[i].State {
					if item[a] != nil {
						out = append(out, removal{c.cfg.Cleanups[i].Rule, a})
					}
				}
			}
		}
		return out, nil
	}
	if rules.IsReserved(k.PK) {
		return nil, nil
	}
	if c.cfg.Legacy {
		for _, a := range rules.LegacyTargetAttrs {
			if item[a] != nil {
				out = append(out, removal{LegacyRule, a})
			}
		}
	}
	e, _ := c.cfg.Old.Match(item, nil)
	if e == nil {
		return out, nil
	}
	var keep map[string]bool
	if c.cfg.New != nil {
		if ne, _ := c.cfg.New.Match(item, nil); ne != nil {
			keep = c.kept[ne.Name]
		}
	}
	for _, i := range c.entity[e.Name] {
		for _, a := range c.cfg.Cleanups[i].Attributes {
			if item[a] == nil {
				continue
			}
			if keep[a] {
				kept = append(kept, removal{c.cfg.Cleanups[i].Rule, a})
				continue
			}
			out = append(out, removal{c.cfg.Cleanups[i].Rule, a})
		}
	}
	return out, kept
}

// legacyItem reports whether k is an item only versions before state items wrote: a park
// item, or a relay item in its target's partition.
func legacyItem(k plan.Key) bool {
	return strings.HasPrefix(k.PK, rules.LegacyParkPrefix) || !rules.IsReserved(k.PK) && strings.HasPrefix(k.SK, rules.RelayPrefix)
}

// keyMatches reports whether k has the primary key of entity e (state items carry only keys
// and amounts, so the entity's other keys and type cannot be checked).
func keyMatches(e *rules.EntityType, k plan.Key) bool {
	if _, ok := e.PK.Match(k.PK, nil); !ok {
		return false
	}
	if e.SK == nil {
		return true
	}
	_, ok := e.SK.Match(k.SK, nil)
	return ok
}

// reservedOf returns the rule whose version registry, fan-out job item or distinct
// reference item k is, when its clean-up deletes them.
func (c *cleaner) reservedOf(k plan.Key) string {
	pk := k.PK
	if _, name, ok := plan.ParseDistinctRef(k); ok {
		for _, cl := range c.cfg.Cleanups {
			if cl.Refs && cl.Rule == name {
				return name
			}
		}
		return ""
	}
	for _, cl := range c.cfg.Cleanups {
		if !cl.Registry {
			continue
		}
		for _, prefix := range []string{apply.RegistryPrefix, rules.JobPrefix} {
			// Rule names hold no '#': the prefix and the name end at the next one.
			if strings.HasPrefix(pk, prefix+cl.Rule+"#") {
				return cl.Rule
			}
		}
	}
	return ""
}

func (c *cleaner) deleteReserved(ctx context.Context, rule string, k plan.Key) {
	st := c.stats[rule]
	if c.cfg.DryRun {
		c.mu.Lock()
		st.Deleted++
		c.mu.Unlock()
		return
	}
	err := c.db.remove(ctx, k, expression.AttributeExists(expression.Name(c.db.spec.PartitionKey)))
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		st.Deleted++
	case retry.Refused(err):
		// Gone already.
	default:
		st.Failed++
		c.example(st, fmt.Sprintf("%s %s: deleting failed: %v", k.PK, k.SK, err))
	}
}

// count adds what was found on an item to each rule's counts.
func (c *cleaner) count(remove, kept []removal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, r := range remove {
		if !seen[r.rule] {
			c.stats[r.rule].Items++
			seen[r.rule] = true
		}
	}
	for _, r := range kept {
		c.stats[r.rule].Kept++
	}
}

// outcome records what happened to an item's removals.
func (c *cleaner) outcome(remove []removal, o Outcome, k plan.Key, written []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byRule := map[string][]string{}
	var order []string
	for _, r := range remove {
		if byRule[r.rule] == nil {
			order = append(order, r.rule)
		}
		byRule[r.rule] = append(byRule[r.rule], r.attr)
	}
	for _, rule := range order {
		st := c.stats[rule]
		attrs := byRule[rule]
		switch o {
		case Repaired:
			st.Cleaned++
			st.Attributes += int64(len(attrs))
			verb := "removed"
			if c.cfg.DryRun {
				verb = "would remove"
			}
			c.example(st, fmt.Sprintf("%s %s: %s %s", k.PK, k.SK, verb, strings.Join(attrs, ", ")))
		case Resolved:
		case Conflict:
			st.Conflicts++
			c.example(st, fmt.Sprintf("%s %s: kept changing, left alone (run again)", k.PK, k.SK))
		default:
			st.Failed++
			c.example(st, fmt.Sprintf("%s %s: removing %s failed", k.PK, k.SK, strings.Join(attrs, ", ")))
		}
	}
}

func (c *cleaner) example(st *CleanupStats, s string) {
	if len(st.Examples) < c.cfg.Examples {
		st.Examples = append(st.Examples, s)
	}
}

func appendUniqStr(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// WriteText writes the report for people: a summary line, a table of rules, and examples.
func (r *CleanupReport) WriteText(w io.Writer) error {
	r.headline(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rule\tentity\titems\tcleaned\tattributes\tdeleted\tkept\tconflicts\tfailed\t")
	for _, st := range r.Rules {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", st.Rule, st.Entity, st.Items, st.Cleaned,
			st.Attributes, st.Deleted, st.Kept, st.Conflicts, st.Failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, st := range r.Rules {
		for _, ex := range st.Examples {
			fmt.Fprintf(w, "  %s: %s\n", st.Rule, ex)
		}
	}
	return nil
}
