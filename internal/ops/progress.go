package ops

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is the scan's progress bar: items read over every pass of every round, with
// items/s and an ETA. The total comes from DescribeTable's ItemCount, which DynamoDB
// refreshes about every six hours, so the ETA is an estimate; with no count the bar
// becomes a counter.
type progress struct {
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer, total, done int64) *progress {
	if w == nil {
		return &progress{}
	}
	if total <= 0 {
		total = -1
	} else if done > total {
		total = done
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("scanning"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("items"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(250*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
	if done > 0 {
		_ = bar.Set64(done)
	}
	return &progress{bar: bar}
}

func (p *progress) add(n int64) {
	if p.bar != nil {
		_ = p.bar.Add64(n)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
