package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/awsconf"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
)

// Every command takes its rules file the same way: --rules FILE, or FILE as its one
// argument. Only demo and bench, whose workload is the social example's, have a default.

// exampleRules is the rules file of the social example: demo's and bench's default.
const exampleRules = "rules/social.yaml"

// parseArgs parses flags and arguments in any order: flag.FlagSet stops at the first
// argument, which would leave the flags of `denorm explain rules.yaml --event e.json`
// unread. Everything after "--" is an argument. A bad flag is a usage error (exit 2).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{code: 2, err: err} // flag printed the usage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// rulesArg returns the rules file given as --rules FILE (flagVal) or as the one argument,
// else def; with neither and no def it is a usage error, as is any other argument.
func rulesArg(fs *flag.FlagSet, flagVal string, pos []string, def string) (string, error) {
	switch {
	case flagVal != "" && len(pos) > 0:
		return "", usageError(fs, "unexpected arguments %q: the rules file is already given with --rules", pos)
	case len(pos) > 1:
		return "", usageError(fs, "unexpected arguments %q: give one rules file", pos[1:])
	case len(pos) == 1:
		return pos[0], nil
	case flagVal != "":
		return flagVal, nil
	case def != "":
		return def, nil
	}
	return "", usageError(fs, "no rules file: give it as --rules FILE or as the argument FILE")
}

// tableArg checks a --table value before any call to DynamoDB: CreateTable's own error
// does not say what a name may hold.
func tableArg(fs *flag.FlagSet, name string) error {
	if name == "" {
		return usageError(fs, "--table is required")
	}
	if err := table.CheckName(name); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--table: %w", err)}
	}
	return nil
}

// liveTable is the rules file, --table and --endpoint of a command that works on one live
// table.
type liveTable struct{ rules, table, endpoint *string }

func liveTableFlags(fs *flag.FlagSet) liveTable {
	return liveTable{
		rules:    fs.String("rules", "", "rules file (or give it as the argument FILE)"),
		table:    fs.String("table", "", "table name (required)"),
		endpoint: fs.String("endpoint", os.Getenv("DENORM_DYNAMODB_ENDPOINT"), "DynamoDB endpoint URL (DynamoDB Local, LocalStack); empty for AWS"),
	}
}

// open parses args, loads the rules file and returns it with a DynamoDB client for the
// endpoint (AWS when it is empty).
func (lt liveTable) open(ctx context.Context, fs *flag.FlagSet, args []string) (*rules.File, *dynamodb.Client, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, nil, err
	}
	rulesPath, err := rulesArg(fs, *lt.rules, pos, "")
	if err != nil {
		return nil, nil, err
	}
	if err := tableArg(fs, *lt.table); err != nil {
		return nil, nil, err
	}
	f, err := rules.Load(rulesPath)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	cfg, err := awsconf.Load(ctx, *lt.endpoint)
	if err != nil {
		return nil, nil, err
	}
	return f, awsconf.DynamoDB(cfg, *lt.endpoint != ""), nil
}

// usageError prints the command's usage and returns an exit status 2 error.
func usageError(fs *flag.FlagSet, format string, args ...any) error {
	fs.Usage()
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}
