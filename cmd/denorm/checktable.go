package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/table"
	"github.com/denorm/denorm/internal/tablecheck"
)

func init() {
	register(command{name: "check-table", summary: "compare a live table with the rules' table section: keys, indexes, stream, TTL", run: runCheckTable})
}

// describeAPI is the part of the DynamoDB client check-table uses.
type describeAPI interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

// runCheckTable describes the table and prints every way it differs from the rules' table
// section, each with its fix. Exit status: 0 when it matches, 1 when it differs (or cannot be
// described), 2 for bad flags or rules.
func runCheckTable(ctx context.Context, args []string) error {
	fs := newFlags("check-table", "(FILE | --rules FILE) --table NAME [--endpoint URL]")
	lt := liveTableFlags(fs)
	f, client, err := lt.open(ctx, fs, args)
	if err != nil {
		return err
	}
	return checkTable(ctx, os.Stdout, client, *lt.table, *lt.endpoint, f.Table)
}

// checkTable describes the table, compares it with spec and prints the result to w; the
// fixes it prints name endpoint ("" for AWS).
func checkTable(ctx context.Context, w io.Writer, api describeAPI, name, endpoint string, spec table.Spec) error {
	dt, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return &exitError{code: 1, err: fmt.Errorf("table %s does not exist (check --endpoint and the region): create it from the rules (denorm local, the CDK stack)", name)}
	}
	if err != nil {
		return fmt.Errorf("describing table %s: %w", name, err)
	}
	ttl, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describing the TTL of table %s: %w", name, err)
	}
	diffs := tablecheck.CompareAt(spec, dt.Table, ttl.TimeToLiveDescription, endpoint)
	if len(diffs) == 0 {
		fmt.Fprintf(w, "table %s matches the rules: keys %s, %d local and %d global secondary indexes, stream NEW_AND_OLD_IMAGES, %s\n",
			name, keyText(spec), len(spec.LocalIndexes), len(spec.GlobalIndexes), ttlText(spec))
		return nil
	}
	fmt.Fprintf(w, "table %s differs from the rules' table section:\n", name)
	for _, d := range diffs {
		fmt.Fprintf(w, "  %s\n", d)
	}
	noun := "differences"
	if len(diffs) == 1 {
		noun = "difference"
	}
	return &exitError{code: 1, err: fmt.Errorf("%d %s", len(diffs), noun)}
}

func keyText(s table.Spec) string {
	if s.SortKey == "" {
		return s.PartitionKey
	}
	return s.PartitionKey + "/" + s.SortKey
}

func ttlText(s table.Spec) string {
	if s.TTLAttribute == "" {
		return "no TTL"
	}
	return "TTL on " + s.TTLAttribute
}
