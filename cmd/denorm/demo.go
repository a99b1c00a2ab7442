package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/schollz/progressbar/v3"

	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/exprval"
	"github.com/denorm/denorm/internal/local"
	"github.com/denorm/denorm/internal/ops"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/workload"
)

func init() {
	register(command{name: "demo", summary: "the social example end to end on DynamoDB Local: write, process, verify", run: runDemo})
}

func runDemo(ctx context.Context, args []string) error {
	fs := newFlags("demo", "[FILE | --rules FILE] [--endpoint URL] [--bootstrap PATH] [--seed N]")
	endpoint := fs.String("endpoint", os.Getenv("DENORM_DYNAMODB_ENDPOINT"), "DynamoDB endpoint; empty starts DynamoDB Local")
	rulesFlag := fs.String("rules", "", "rules file, or the argument FILE (default "+exampleRules+": the demo's workload is the social example's)")
	bootstrap := fs.String("bootstrap", "", "run this built stream processor through the local Runtime API instead of in process")
	seed := fs.Uint64("seed", 1, "workload seed")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	rulesPath, err := rulesArg(fs, *rulesFlag, pos, exampleRules)
	if err != nil {
		return err
	}
	out := os.Stdout
	ep, stop, err := ensureEndpoint(ctx, *endpoint)
	if err != nil {
		return err
	}
	defer stop()
	table := fmt.Sprintf("denorm-demo-%d", time.Now().Unix())
	var logs bytes.Buffer // the pipeline's warnings, shown if the demo fails
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	mode := "in process"
	if *bootstrap != "" {
		mode = "as " + *bootstrap + " behind a local Lambda Runtime API"
	}
	fmt.Fprintf(out, "Denorm demo: rules %s, table %s on %s, stream processor %s\n\n", rulesPath, table, ep, mode)
	p, err := local.Start(ctx, local.Config{RulesPath: rulesPath, Endpoint: ep, Table: table, Bootstrap: *bootstrap, Logger: log,
		Mapping: esm.Config{BatchSize: 100, MaximumRetryAttempts: esm.Int(5), BisectBatchOnFunctionError: true,
			ReportBatchItemFailures: true, OnFailureDir: ".cache/demo/failures", PollInterval: 50 * time.Millisecond}})
	if err != nil {
		return err
	}
	defer p.Close()

	// The workload puts the one global stats item first (global-post-count counts every post
	// into it; the rule does not create it), then the social data.
	writes := workload.Social(*seed, workload.Demo)
	creates := 0
	for _, op := range writes {
		if op.Phase != "churn" {
			creates++
		}
	}
	fmt.Fprintf(out, "1. The application writes %d items (users, posts, comments with a stale author name, groups, memberships, folders, files),\n   then %d changes (renames, deletes, membership churn, status flips, file versions), with the plain AWS SDK.\n",
		creates, len(writes)-creates)
	bar := progressbar.NewOptions(len(writes), progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription("   writing"),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("writes"),
		progressbar.OptionSetWidth(30), progressbar.OptionThrottle(time.Second),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(os.Stderr) }))
	t0 := time.Now()
	if err := workload.Write(ctx, p.DB, table, writes, 8, func() { _ = bar.Add(1) }); err != nil {
		return err
	}
	_ = bar.Finish()
	wrote := time.Since(t0)
	fmt.Fprintf(out, "   wrote %d operations in %s (%.0f/s)\n\n", len(writes), wrote.Round(time.Millisecond), float64(len(writes))/wrote.Seconds())

	fmt.Fprintln(out, "2. Denorm processes the stream (event source mapping emulator -> stream processor) until it is drained.")
	t1 := time.Now()
	dctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := p.Drain(dctx, time.Second); err != nil {
		return fmt.Errorf("draining the stream: %w\n%s", err, logs.String())
	}
	st := p.Mapping.Stats()
	fmt.Fprintf(out, "   drained in %s after the last write: %d records in %d batches, %d failed invocations, %d sent to the failure destination\n\n",
		time.Since(t1).Round(time.Millisecond), st.Records, st.Batches, st.Failures, st.OnFailure)

	fmt.Fprintln(out, "3. Every copy, mirror, counter, sum, max, min, latest, top list and time bucket is recomputed from its sources (denorm verify):")
	f, err := rules.Load(rulesPath)
	if err != nil {
		return err
	}
	ev, err := opsEvaluator(f)
	if err != nil {
		return err
	}
	t2 := time.Now()
	rep, err := ops.Run(ctx, ops.Config{API: p.DB, Table: table, Eval: ev, Examples: 3})
	if err != nil {
		return err
	}
	printConvergence(out, rep)
	fmt.Fprintf(out, "   verified %d items in %s\n\n", rep.Scanned, time.Since(t2).Round(time.Millisecond))

	if err := showRename(ctx, out, p); err != nil {
		return err
	}
	wrongDays, err := showDailyBuckets(ctx, out, p, f)
	if err != nil {
		return err
	}
	if err := showExtremes(ctx, out, p, rep); err != nil {
		return err
	}
	if !rep.Clean() || wrongDays > 0 {
		fmt.Fprintln(out, "\nNOT CONVERGED: see the drift above")
		if logs.Len() > 0 {
			fmt.Fprintf(out, "pipeline warnings:\n%s", logs.String())
		}
		return &exitError{code: 1, err: fmt.Errorf("%d values drifted, %d day items wrong", rep.Drift, wrongDays)}
	}
	fmt.Fprintln(out, "\nConverged: every copy, mirror, counter, sum, distinct count, max, min, latest, top list and time bucket equals what its sources say.")
	return nil
}

func opsEvaluator(f *rules.File) (*ops.Evaluator, error) { return ops.NewEvaluator(f, "") }

// printConvergence prints one line per rule: targets checked and how many hold the truth.
func printConvergence(w io.Writer, rep *ops.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "   rule\tkind\ttargets\tcorrect\tdrift\t")
	for _, r := range rep.Rules {
		fmt.Fprintf(tw, "   %s\t%s\t%d\t%d\t%d\t\n", r.Rule, r.Kind, r.Checked, r.Checked-r.Drift, r.Drift)
	}
	_ = tw.Flush()
	for _, r := range rep.Rules {
		for _, ex := range r.Examples {
			fmt.Fprintf(w, "   drift %s: %s %s %s\n", r.Rule, ex.PK, ex.SK, ex.Attribute)
		}
	}
}

// showRename picks the user with the most comments and shows that their current name
// reached every one of them, then one post with its counters.
func showRename(ctx context.Context, w io.Writer, p *local.Pipeline) error {
	best, bestN := "", 0
	for u := 0; u < workload.Demo.Users; u++ {
		id := fmt.Sprintf("USER#u%04d", u)
		items, err := queryAll(ctx, p, "gsi1", "gsi1pk", id, "COMMENT#")
		if err != nil {
			return err
		}
		if len(items) > bestN {
			best, bestN = id, len(items)
		}
	}
	if best == "" {
		return nil
	}
	user, err := p.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(p.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: best}, "sk": &types.AttributeValueMemberS{Value: "PROFILE"}}})
	if err != nil {
		return err
	}
	name := text(user.Item["name"])
	comments, err := queryAll(ctx, p, "gsi1", "gsi1pk", best, "COMMENT#")
	if err != nil {
		return err
	}
	same := 0
	for _, c := range comments {
		if text(c["userName"]) == name {
			same++
		}
	}
	fmt.Fprintf(w, "4. A rename reaching every copy: %s is now %q (postCount %s, commentCount %s);\n   %d of their %d comments show that name (each was written with userName \"?\").\n",
		best, name, text(user.Item["postCount"]), text(user.Item["commentCount"]), same, len(comments))
	return nil
}

func queryAll(ctx context.Context, p *local.Pipeline, index, attr, value, prefix string) ([]map[string]types.AttributeValue, error) {
	kc := expression.Key(attr).Equal(exprval.Str(value))
	// The sort key goes with the partition key: gsi1pk/gsi1sk, pk/sk.
	if prefix != "" {
		kc = kc.And(expression.Key(strings.TrimSuffix(attr, "pk") + "sk").BeginsWith(prefix))
	}
	e, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{TableName: aws.String(p.Table), ConsistentRead: aws.Bool(index == ""),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()}
	if index != "" { // "" queries the table
		in.IndexName = aws.String(index)
	}
	pg := dynamodb.NewQueryPaginator(p.DB, in)
	var out []map[string]types.AttributeValue
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
	}
	return out, nil
}

func text(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	}
	return "-"
}
