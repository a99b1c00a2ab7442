package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
)

// showExtremes prints what denorm verify found for the max, min, latest and top rules
// (it recomputed each target from its sources), with one target of each as the table
// holds it. A rules file without such rules shows nothing.
func showExtremes(ctx context.Context, w io.Writer, p *local.Pipeline, rep *ops.Report) error {
	var lines []string
	for _, r := range rep.Rules {
		cr := p.Set.Rule(r.Rule)
		if cr == nil || !cr.Kind.Extreme() {
			continue
		}
		attr := cr.Agg.Attribute
		if cr.Kind == rules.KindLatest {
			attr = cr.Agg.SetOrder[0]
		}
		example, err := exampleOf(ctx, p, cr.Target, attr)
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("   %s\t%s\t%d of %d %s targets hold what their sources say\te.g. %s", r.Rule, r.Kind,
			r.Checked-r.Drift, r.Checked, cr.Target.Name, example))
	}
	if len(lines) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\n6. Max, min, latest and top lists, as denorm verify found them, with one target of each:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	return tw.Flush()
}

// exampleOf returns one item of entity ent holding attr, as "pk attr value" ("none" when
// no item holds it).
func exampleOf(ctx context.Context, p *local.Pipeline, ent *rules.EntityType, attr string) (string, error) {
	e, err := expression.NewBuilder().WithFilter(expression.AttributeExists(expression.Name(attr))).Build()
	if err != nil {
		return "", err
	}
	in := &dynamodb.ScanInput{TableName: aws.String(p.Table), FilterExpression: e.Filter(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()}
	for {
		out, err := p.DB.Scan(ctx, in)
		if err != nil {
			return "", fmt.Errorf("scanning for an example of %s: %w", attr, err)
		}
		for _, it := range out.Items {
			if got, _ := p.Set.Match(it, nil); got == ent {
				return fmt.Sprintf("%s %s %s", text(it[p.Set.Table.PartitionKey]), attr, short(it[attr])), nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return "none", nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// short renders a value for one line: scalars as they are, a list by its first entry.
func short(v types.AttributeValue) string {
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return text(v)
	}
	if len(l.Value) == 0 {
		return "[]"
	}
	var parts []string
	if m, ok := l.Value[0].(*types.AttributeValueMemberM); ok {
		for _, k := range []string{"sk", "createdAt"} {
			if s := text(m.Value[k]); s != "-" {
				parts = append(parts, s)
			}
		}
	}
	return fmt.Sprintf("[%s, ...] (%d entries)", strings.Join(parts, " "), len(l.Value))
}
