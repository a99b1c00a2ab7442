// Package ddblocal starts and stops DynamoDB Local through scripts/dynamodb-local.sh, for the
// commands that need an emulator when they were given no endpoint.
package ddblocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Script is the script's path relative to the repository root.
const Script = "scripts/dynamodb-local.sh"

// Start runs `script start` and returns the instance's URL and a function that stops it
// with `script stop PORT`, which ends the process, waits for it and removes its database.
func Start(ctx context.Context, script string) (url string, stop func(), err error) {
	if _, err := os.Stat(script); err != nil {
		return "", nil, fmt.Errorf("no %s here: run from the repository root, or pass an endpoint", script)
	}
	out, err := exec.CommandContext(ctx, "bash", script, "start").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", nil, fmt.Errorf("starting DynamoDB Local: %s", strings.TrimSpace(string(ee.Stderr)))
		}
		return "", nil, fmt.Errorf("starting DynamoDB Local: %w", err)
	}
	url = strings.TrimSpace(string(out))
	i := strings.LastIndexByte(url, ':')
	if i < 0 {
		return "", nil, fmt.Errorf("starting DynamoDB Local: %s printed %q, not a URL", script, url)
	}
	port := url[i+1:]
	return url, func() {
		// Not ctx: the caller may stop because ctx was cancelled (Ctrl-C).
		if out, err := exec.Command("bash", script, "stop", port).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping DynamoDB Local on port %s: %v: %s\n", port, err, strings.TrimSpace(string(out)))
		}
	}, nil
}
