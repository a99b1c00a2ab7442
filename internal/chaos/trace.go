package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
)

// traceKey, from DENORM_CHAOS_TRACE, is a partition key ("*" for every one; "FOLDER#*" for
// every one it begins; several separated by commas: "USER#u0042,USER#u0084") whose records
// (a relay item's deltas included: maps of Denorm's are printed whole), and the records
// that name it in another attribute,
// every invocation prints to stderr with its outcome: a debugging aid for a drifted target
// (its sources, the application's writes and Denorm's own writes share its partition in
// watermark mode). A prefix traces a kind of target whose drifting one is not known ahead.
var traceKey = os.Getenv("DENORM_CHAOS_TRACE")

// traced reports whether v is one of traceKey's keys, or begins with one of its prefixes.
func traced(v string) bool {
	for _, k := range strings.Split(traceKey, ",") {
		if p, ok := strings.CutSuffix(k, "*"); ok && p != "" && strings.HasPrefix(v, p) || k == v {
			return true
		}
	}
	return false
}

// trace prints the batch's records of traceKey and what became of the invocation.
func trace(batch []json.RawMessage, outcome string) {
	if traceKey == "" {
		return
	}
	var lines []string
	for _, raw := range batch {
		c, err := record.Decode(raw)
		if err != nil {
			continue
		}
		pk, _ := c.Keys["pk"].(*types.AttributeValueMemberS)
		if pk == nil || (traceKey != "*" && !traced(pk.Value) && !links(c.Old) && !links(c.New)) {
			continue
		}
		sk, _ := c.Keys["sk"].(*types.AttributeValueMemberS)
		lines = append(lines, fmt.Sprintf("  %s %s %s %s %s old{%s} new{%s}", c.Seq, c.EventID, c.Op, pk.Value, sk.Value, brief(c.Old), brief(c.New)))
	}
	if len(lines) > 0 {
		fmt.Fprintf(os.Stderr, "trace %s: batch of %d: %s\n%s\n", traceKey, len(batch), outcome, strings.Join(lines, "\n"))
	}
}

// links reports whether an image names traceKey in an attribute other than its partition
// key (a source in another partition, such as a comment's gsi1pk naming its user: the
// sources of a marker-mode target).
func links(it record.Item) bool {
	for name, v := range it {
		if s, ok := v.(*types.AttributeValueMemberS); ok && name != "pk" && traced(s.Value) {
			return true
		}
	}
	return false
}

// brief prints an image's numbers and Denorm's attributes.
func brief(it record.Item) string {
	var out []string
	for name, v := range it {
		switch v := v.(type) {
		case *types.AttributeValueMemberN:
			out = append(out, name+"="+v.Value)
		case *types.AttributeValueMemberM:
			if strings.HasPrefix(name, rules.ReservedPrefix) {
				out = append(out, name+"=map("+brief(v.Value)+")")
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
