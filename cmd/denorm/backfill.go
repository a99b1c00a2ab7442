package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/denorm/denorm/internal/ops"
)

func init() {
	register(command{name: "backfill", summary: "apply the rules to the items a table already holds (rate-limited, resumable)", run: runBackfill})
}

// runBackfill makes every copy, mirror, count and sum of an existing table what the rules
// say: it is verify --repair with a write-capacity cap, a checkpoint to resume from, and a
// dry run. Interrupted (Ctrl-C), it saves the checkpoint and says how to resume.
func runBackfill(ctx context.Context, args []string) error {
	fs := newFlags("backfill", "(FILE | --rules FILE) --table NAME [--endpoint URL] [--rule NAME | --only RULE,...] [--settle D] [--processor-wait D | --no-processor-check] [--segments N] [--max-wcu N] [--dry-run] [--checkpoint FILE]")
	var o opsFlags
	// Small pages keep the checkpoint close behind the writes: an interrupted page is
	// redone, and a 1 MB page can hold thousands of writes at the capacity cap.
	o.register(fs, 100, 100)
	dryRun := fs.Bool("dry-run", false, "write nothing: report what the backfill would change")
	checkpoint := fs.String("checkpoint", "", "resume from and save progress to this file (removed when the backfill completes)")
	if err := o.parse(fs, args); err != nil {
		return err
	}
	mode := "backfill"
	if *dryRun {
		mode = "backfill --dry-run"
	}
	cfg, err := o.config(ctx, mode)
	if err != nil {
		return err
	}
	cfg.Repair = !*dryRun
	cfg.Checkpoint = *checkpoint
	if cfg.Repair {
		if err := o.checkProcessor(ctx, &cfg, os.Stderr); err != nil {
			return err
		}
	}
	rep, err := ops.Run(ctx, cfg)
	if rep != nil {
		if perr := o.print(os.Stdout, rep); perr != nil && err == nil {
			err = perr
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		if *checkpoint != "" && rep != nil {
			return &exitError{code: 130, err: fmt.Errorf("interrupted; progress saved in %s: run the same command to resume", *checkpoint)}
		}
		return &exitError{code: 130, err: errors.New("interrupted; nothing saved (pass --checkpoint FILE to make a backfill resumable)")}
	case err != nil:
		if *checkpoint != "" && rep != nil {
			err = fmt.Errorf("%w (progress saved in %s: run the same command to resume)", err, *checkpoint)
		}
		return err
	case rep.Problems > 0 || rep.Unrepaired > 0 && !*dryRun:
		var conflicts, failed int64
		if !*dryRun {
			for _, rr := range rep.Rules {
				conflicts, failed = conflicts+rr.Conflicts, failed+rr.Failed
			}
		}
		return &exitError{code: 1, err: backfillLeft(conflicts, failed, rep.Problems)}
	}
	return nil
}

// backfillLeft says what a backfill left, one piece of advice per cause: targets that kept
// changing are for the same command again, which rewrites only what is still wrong; writes
// that failed are for their cause first (the examples above give it); items the rules
// cannot evaluate are for the application.
func backfillLeft(conflicts, failed, problems int64) error {
	var parts []string
	if conflicts > 0 {
		parts = append(parts, fmt.Sprintf("%d targets kept changing during the run and were left: run the same command again", conflicts))
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d writes failed: fix the cause the examples above give, then run the same command again", failed))
	}
	if problems > 0 {
		parts = append(parts, fmt.Sprintf("%d items the rules cannot evaluate (examples above): fix them in the application", problems))
	}
	return errors.New(strings.Join(parts, "; "))
}
