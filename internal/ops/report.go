package ops

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/denorm/denorm/internal/record"
)

// RuleStats counts what a run found and did for one rule.
type RuleStats struct {
	// Checked is how many target items were compared (plus missing ones found).
	Checked int64 `json:"checked"`
	// Drift is how many target items did not hold what the rule says.
	Drift     int64 `json:"drift"`
	Repaired  int64 `json:"repaired"`
	Resolved  int64 `json:"resolved"`
	Conflicts int64 `json:"conflicts"`
	Failed    int64 `json:"failed"`
	// Problems is how many items the rule cannot evaluate (the stream processor fails them too).
	Problems int64 `json:"problems"`
	// MissingTargets is how many non-zero totals belong to targets that do not exist and
	// the rule does not create (missingTarget: skip). Not drift: nothing shows them. A
	// repairing run decides their state items all the same (Drift.NoTarget).
	MissingTargets int64 `json:"missingTargets"`
}

func (s *RuleStats) add(o *RuleStats) {
	s.Checked += o.Checked
	s.Drift += o.Drift
	s.Repaired += o.Repaired
	s.Resolved += o.Resolved
	s.Conflicts += o.Conflicts
	s.Failed += o.Failed
	s.Problems += o.Problems
	s.MissingTargets += o.MissingTargets
}

func (s *RuleStats) outcome(o Outcome) {
	switch o {
	case Repaired:
		s.Repaired++
	case Resolved:
		s.Resolved++
	case Conflict:
		s.Conflicts++
	default:
		s.Failed++
	}
}

// Example is one drifted attribute (or a missing or extra item) shown in a report.
type Example struct {
	PK        string `json:"pk"`
	SK        string `json:"sk,omitempty"`
	Problem   Kind   `json:"problem"`
	Attribute string `json:"attribute,omitempty"`
	Got       avJSON `json:"got"`
	Want      avJSON `json:"want"`
	// Note is the outcome of a repair, or why an item could not be evaluated.
	Note string `json:"note,omitempty"`
}

// RuleReport is one rule's part of a report.
type RuleReport struct {
	Rule string `json:"rule"`
	Kind string `json:"kind"`
	RuleStats
	Examples []Example `json:"examples"`
}

// PassReport says what one pass of one round scanned in this run.
type PassReport struct {
	Round int `json:"round"`
	Pass  int `json:"pass"`
	// Segments is how many segments this run scanned; Skipped how many a checkpoint said
	// were finished already.
	Segments int   `json:"segments"`
	Skipped  int   `json:"skipped"`
	Scanned  int64 `json:"scanned"`
}

// Scan is what a run of verify, backfill or cleanup read and wrote, and how long it took.
type Scan struct {
	Table string `json:"table"`
	Mode  string `json:"mode"`
	// Scanned is the items this run read by Scan (every pass), Seconds its wall time.
	Scanned        int64   `json:"scanned"`
	Seconds        float64 `json:"seconds"`
	ItemsPerSecond float64 `json:"itemsPerSecond"`
	Writes         int64   `json:"writes"`
	ConsumedWCU    float64 `json:"consumedWCU"`
}

// finish records a run that started at start.
func (s *Scan) finish(start time.Time, scanned, writes int64, wcu float64) {
	s.Seconds = time.Since(start).Seconds()
	s.Scanned, s.Writes, s.ConsumedWCU = scanned, writes, wcu
	s.ItemsPerSecond = 0
	if s.Seconds > 0 {
		s.ItemsPerSecond = float64(s.Scanned) / s.Seconds
	}
}

// headline is the first line of a report for people.
func (s *Scan) headline(w io.Writer) {
	fmt.Fprintf(w, "%s %s: scanned %d items in %s (%.0f items/s), %d writes (%.1f WCU)\n",
		s.Mode, s.Table, s.Scanned, time.Duration(s.Seconds*float64(time.Second)).Round(time.Millisecond),
		s.ItemsPerSecond, s.Writes, s.ConsumedWCU)
}

// Report is the outcome of a run.
type Report struct {
	Scan
	Rules       []RuleReport `json:"rules"`
	Passes      []PassReport `json:"passes"`
	Resumed     bool         `json:"resumed"`
	ConsumedRCU float64      `json:"consumedRCU"`
	// Totals over the rules.
	Drift      int64 `json:"drift"`
	Unrepaired int64 `json:"unrepaired"`
	Problems   int64 `json:"problems"`
}

// Clean reports whether no rule found drift or items it cannot evaluate.
func (r *Report) Clean() bool { return r.Drift == 0 && r.Problems == 0 }

func (r *Report) totals(repair bool) {
	r.Drift, r.Unrepaired, r.Problems = 0, 0, 0
	for _, rr := range r.Rules {
		r.Drift += rr.Drift
		r.Problems += rr.Problems
		if repair {
			r.Unrepaired += rr.Conflicts + rr.Failed
		} else {
			r.Unrepaired += rr.Drift
		}
	}
}

// WriteText writes the report for people: a summary line, a table of rules, and examples.
func (r *Report) WriteText(w io.Writer) error {
	r.headline(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rule\tkind\tchecked\tdrift\trepaired\tresolved\tconflicts\tfailed\tproblems\tno target\t")
	for _, rr := range r.Rules {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", rr.Rule, rr.Kind, rr.Checked, rr.Drift,
			rr.Repaired, rr.Resolved, rr.Conflicts, rr.Failed, rr.Problems, rr.MissingTargets)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, rr := range r.Rules {
		for _, ex := range rr.Examples {
			fmt.Fprintf(w, "  %s: %s\n", rr.Rule, ex.text())
		}
	}
	if r.Resumed {
		fmt.Fprintln(w, "resumed from a checkpoint: counts include the earlier runs, examples only this one")
	}
	return nil
}

func (ex Example) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", ex.PK, ex.SK)
	switch ex.Problem {
	case Missing:
		b.WriteString(": missing")
		if ex.Attribute != "" {
			fmt.Fprintf(&b, " (%s should be %s)", ex.Attribute, show(ex.Want.v))
		}
	case Extra:
		b.WriteString(": should not exist")
	case Differs:
		got, want := showPair(ex.Got.v, ex.Want.v)
		fmt.Fprintf(&b, ": %s is %s, want %s", ex.Attribute, got, want)
	default:
		fmt.Fprintf(&b, ": %s", ex.Problem)
	}
	if ex.Note != "" {
		fmt.Fprintf(&b, " [%s]", ex.Note)
	}
	return b.String()
}

// showWidth is how much of a value a line of the text report shows.
const showWidth = 60

// show renders a value briefly: strings quoted, numbers bare, anything else as DynamoDB
// JSON, cut to showWidth.
func show(v types.AttributeValue) string {
	return clip(full(v), 0)
}

// showPair renders a drifted value and the one it should be, cut to showWidth from the
// same place: a little before the first difference, so two long values (top lists) that
// begin alike still print differently.
func showPair(got, want types.AttributeValue) (string, string) {
	g, w := full(got), full(want)
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	from := max(0, i-showWidth/3)
	if len(g) <= showWidth && len(w) <= showWidth {
		from = 0
	}
	for from > 0 && !utf8.RuneStart(g[from]) {
		from--
	}
	return clip(g, from), clip(w, from)
}

// full renders v whole, as show does before cutting.
func full(v types.AttributeValue) string {
	switch x := v.(type) {
	case nil:
		return "absent"
	case *types.AttributeValueMemberS:
		return strconv.Quote(x.Value)
	case *types.AttributeValueMemberN:
		return x.Value
	}
	b, _ := record.MarshalValue(v)
	return string(b)
}

// clip is showWidth bytes of s from byte from, "..." marking what is left out at either end.
func clip(s string, from int) string {
	if from >= len(s) {
		from = 0
	}
	prefix := ""
	if from > 0 {
		prefix = "..."
	}
	s = s[from:]
	if len(s) > showWidth {
		end := showWidth - 3
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		s = s[:end] + "..."
	}
	return prefix + s
}

func (o Outcome) String() string {
	switch o {
	case Repaired:
		return "repaired"
	case Resolved:
		return "resolved on re-read"
	case Conflict:
		return "changed during repair, left alone"
	}
	return "repair failed"
}
