package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/streams"
)

// StreamEpoch returns the epoch of the stream arn, the eventSourceARN of a batch's
// records, from the table's stream registry (package streams). The first stream of a
// table without a registry claims epoch 0. A stream retired, or not in the registry while
// another is current, gets an error wrapping streams.ErrRetired or streams.ErrUnregistered:
// its processor must write nothing. A batch without an eventSourceARN (records not read
// from a stream) is epoch 0 and reads nothing.
//
// The registry changes only when a stream takes over: the executor reads it (eventually
// consistent, 0.5 RCU) when what it read last for arn is older than Options.StreamCheck,
// and again consistently before it claims anything.
func (x *Executor) StreamEpoch(ctx context.Context, arn string) (Stats, int, error) {
	r := &run{x: x, ctx: ctx, failed: -1}
	if arn == "" {
		return r.stats, 0, nil
	}
	now := x.opt.Now()
	x.streamMu.Lock()
	known := x.stream
	x.streamMu.Unlock()
	if known.arn == arn && now.Sub(known.at) < x.opt.StreamCheck {
		return r.stats, known.epoch, nil
	}
	epoch, err := r.streamEpoch(arn)
	if err == nil {
		x.streamMu.Lock()
		x.stream = knownStream{arn: arn, epoch: epoch, at: now}
		x.streamMu.Unlock()
	}
	return r.stats, epoch, err
}

// knownStream is what the executor last read of the stream registry for one stream.
type knownStream struct {
	arn   string
	epoch int
	at    time.Time
}

func (r *run) streamEpoch(arn string) (int, error) {
	x := r.x
	consistent := false
	// A claim is refused only when the registry changed since it was read: another lane
	// of the same stream claimed first (the next read finds it current), or another stream
	// took over. Three rounds settle either.
	for attempt := 0; attempt < 3; attempt++ {
		var out *dynamodb.GetItemOutput
		err := r.do("reading the stream registry", func(ctx context.Context) error {
			var err error
			out, err = x.api.GetItem(ctx, streams.Get(x.table, x.set.Table, consistent))
			return err
		})
		if err != nil {
			return 0, err
		}
		reg, err := streams.Parse(out.Item)
		if err != nil {
			return 0, err
		}
		switch reg.Of(arn) {
		case streams.Current:
			return reg.Epoch, nil
		case streams.Retired, streams.Unregistered:
			return 0, reg.Err(arn)
		}
		// No registry yet: this is the table's first stream.
		if !consistent {
			consistent = true // an eventually consistent read can miss a claim just made
			continue
		}
		in, err := streams.Claim(x.table, x.set.Table, nil, arn, 0)
		if err != nil {
			return 0, err
		}
		err = r.do("claiming stream epoch 0", func(ctx context.Context) error {
			out, err := x.api.UpdateItem(ctx, in)
			r.written(GuardNone, out, err)
			return err
		})
		if _, lost := retry.CondFailed(err); lost {
			continue
		}
		if err != nil {
			return 0, err
		}
		x.opt.Logger.Info("stream registry: the table's first stream claims epoch 0", "stream", arn)
		return 0, nil
	}
	return 0, fmt.Errorf("stream registry: %s could not claim an epoch: the registry kept changing", arn)
}
