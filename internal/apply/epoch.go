package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/plan"
	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/retry"
	"github.com/denorm/denorm/internal/rules"
)

// ErrRetired means another stream has taken over the table's Denorm state: the processor
// of this stream must write nothing.
var ErrRetired = errors.New("stream retired")

// Streams is the table's stream registry (rules.StreamRegistryPK): the stream whose
// records Denorm applies now, its epoch, and the streams it took over from.
type Streams struct {
	Current string
	Epoch   int
	Retired []string
}

// Stream is what the registry says of one stream.
type Stream struct {
	Epoch int
	// Retired: another stream took over; this one's processor writes nothing.
	Retired bool
	// New: the registry does not know the stream; it takes over by claiming the next epoch.
	New bool
}

// Of says what reg (nil: no registry yet) makes of the stream arn.
func (reg *Streams) Of(arn string) Stream {
	switch {
	case reg == nil:
		return Stream{New: true}
	case reg.Current == arn:
		return Stream{Epoch: reg.Epoch}
	case slices.Contains(reg.Retired, arn):
		return Stream{Retired: true}
	}
	return Stream{Epoch: reg.Epoch + 1, New: true}
}

// StreamEpoch returns the epoch of the stream arn, the eventSourceARN of a batch's
// records, from the table's stream registry. A stream the registry does not know takes
// over: it claims the next epoch (0 for the first) and retires the stream before it, in one
// conditional write. A retired stream gets ErrRetired. A batch without an eventSourceARN
// (records not read from a stream) is epoch 0 and reads nothing.
//
// The registry changes only when a stream takes over: the executor reads it (eventually
// consistent, 0.5 RCU) when what it read last is older than Options.StreamCheck, and reads
// it again consistently before it claims anything.
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
	st, epoch, err := x.readEpoch(r, arn)
	if err == nil {
		x.streamMu.Lock()
		x.stream = knownStream{arn: arn, epoch: epoch, at: now}
		x.streamMu.Unlock()
	}
	return st, epoch, err
}

// knownStream is what the executor last read of the stream registry for one stream.
type knownStream struct {
	arn   string
	epoch int
	at    time.Time
}

func (x *Executor) readEpoch(r *run, arn string) (Stats, int, error) {
	consistent := false
	for attempt := 0; attempt < 4; attempt++ {
		reg, err := r.readStreams(consistent)
		if err != nil {
			return r.stats, 0, err
		}
		s := reg.Of(arn)
		switch {
		case s.Retired:
			return r.stats, 0, fmt.Errorf("%w: %s has taken over (epoch %d)", ErrRetired, reg.Current, reg.Epoch)
		case !s.New:
			return r.stats, s.Epoch, nil
		case !consistent:
			consistent = true // an eventually consistent read can miss a claim just made
			continue
		}
		if s.Epoch > record.MaxEpoch {
			return r.stats, 0, fmt.Errorf("stream registry: stream %s would be epoch %d, beyond the last, %d", arn, s.Epoch, record.MaxEpoch)
		}
		err = r.claim(reg, arn, s.Epoch)
		if _, lost := retry.CondFailed(err); lost {
			continue // another stream claimed first: read again
		}
		if err != nil {
			return r.stats, 0, err
		}
		if reg != nil {
			x.opt.Logger.Warn("stream registry: this stream takes over Denorm's state", "stream", arn, "epoch", s.Epoch, "previous", reg.Current)
		}
		return r.stats, s.Epoch, nil
	}
	return r.stats, 0, fmt.Errorf("stream registry: %s could not claim an epoch: the registry kept changing", arn)
}

func (x *Executor) registryKey() map[string]types.AttributeValue {
	return x.key(plan.Key{PK: rules.StreamRegistryPK, SK: rules.StreamRegistryPK})
}

func (r *run) readStreams(consistent bool) (*Streams, error) {
	x := r.x
	var out *dynamodb.GetItemOutput
	err := r.do("reading the stream registry", func(ctx context.Context) error {
		var err error
		out, err = x.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(x.table), Key: x.registryKey(),
			ConsistentRead: aws.Bool(consistent), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		return err
	})
	if err != nil || out.Item == nil {
		return nil, err
	}
	return ParseStreams(out.Item)
}

// ParseStreams reads a stream registry item.
func ParseStreams(it record.Item) (*Streams, error) {
	cur, ok1 := it[rules.StreamCurrentAttr].(*types.AttributeValueMemberS)
	ep, ok2 := it[rules.StreamEpochAttr].(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("stream registry %s: %s or %s missing", rules.StreamRegistryPK, rules.StreamCurrentAttr, rules.StreamEpochAttr)
	}
	n, err := strconv.Atoi(ep.Value)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("stream registry %s: %s is %q, not an epoch", rules.StreamRegistryPK, rules.StreamEpochAttr, ep.Value)
	}
	reg := &Streams{Current: cur.Value, Epoch: n}
	if ss, ok := it[rules.StreamRetiredAttr].(*types.AttributeValueMemberSS); ok {
		reg.Retired = ss.Value
	}
	return reg, nil
}

// claim makes arn the current stream at epoch, if the registry is still reg.
func (r *run) claim(reg *Streams, arn string, epoch int) error {
	x := r.x
	names := map[string]string{"#cur": rules.StreamCurrentAttr, "#ep": rules.StreamEpochAttr}
	vals := map[string]types.AttributeValue{":arn": &types.AttributeValueMemberS{Value: arn}, ":ep": &types.AttributeValueMemberN{Value: strconv.Itoa(epoch)}}
	in := &dynamodb.UpdateItemInput{TableName: aws.String(x.table), Key: x.registryKey(),
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	if reg == nil {
		names["#pk"] = x.set.Table.PartitionKey
		in.UpdateExpression = aws.String("SET #cur = :arn, #ep = :ep")
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
	} else {
		names["#old"] = rules.StreamRetiredAttr
		vals[":prev"] = &types.AttributeValueMemberS{Value: reg.Current}
		vals[":prevEp"] = &types.AttributeValueMemberN{Value: strconv.Itoa(reg.Epoch)}
		vals[":retire"] = &types.AttributeValueMemberSS{Value: []string{reg.Current}}
		in.UpdateExpression = aws.String("SET #cur = :arn, #ep = :ep ADD #old :retire")
		in.ConditionExpression = aws.String("#cur = :prev AND #ep = :prevEp")
	}
	return r.do("claiming stream epoch "+strconv.Itoa(epoch), func(ctx context.Context) error {
		out, err := x.api.UpdateItem(ctx, in)
		r.written(GuardNone, out, err)
		return err
	})
}
