// Package streams is the stream registry: the reserved item (rules.StreamRegistryPK) that
// says which stream's records Denorm applies to a table, under which epoch, and which
// streams it took over from. Every sequence-number guard Denorm writes is a position within
// its stream's epoch (record.Position), so a stream that takes over (the processing Region
// of a global table moved, a stream enabled again) writes guards above all of the old
// stream's. This package reads the item and builds its writes; the processor (apply) and
// `denorm takeover` make the calls.
package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
	"github.com/denorm/denorm/internal/rules"
	"github.com/denorm/denorm/internal/table"
)

// Registry is what the registry item holds. A nil *Registry is a table without one.
type Registry struct {
	Current string   // the ARN of the stream whose records Denorm applies
	Epoch   int      // its epoch
	Retired []string // the ARNs of the streams it took over from
}

// Status is what the registry makes of one stream.
type Status int

const (
	// Current: the stream whose records Denorm applies.
	Current Status = iota
	// First: there is no registry; the first stream to come claims epoch 0.
	First
	// Retired: another stream took over; this one's processor writes nothing.
	Retired
	// Unregistered: a stream the registry does not know, while another is current. It
	// takes over only through `denorm takeover`; until then its processor writes nothing.
	Unregistered
)

// Of says what reg makes of the stream arn.
func (reg *Registry) Of(arn string) Status {
	switch {
	case reg == nil:
		return First
	case reg.Current == arn:
		return Current
	case slices.Contains(reg.Retired, arn):
		return Retired
	}
	return Unregistered
}

// ErrRetired and ErrUnregistered say why a stream's processor must write nothing.
var (
	ErrRetired      = errors.New("stream retired")
	ErrUnregistered = errors.New("stream not in the stream registry")
)

// Err is why the processor of arn must write nothing, or nil when it may write.
func (reg *Registry) Err(arn string) error {
	switch reg.Of(arn) {
	case Retired:
		return fmt.Errorf("%w: %s took over at epoch %d", ErrRetired, reg.Current, reg.Epoch)
	case Unregistered:
		return fmt.Errorf("%w: %s is current (epoch %d); run `denorm takeover` in this stream's Region to move the processing here", ErrUnregistered, reg.Current, reg.Epoch)
	}
	return nil
}

// TakeOverEpoch is the epoch a stream that takes over from reg claims: the next one, and 1
// without a registry, since the table's guards may have been written from another stream
// before registries existed (they are epoch 0).
func (reg *Registry) TakeOverEpoch() int {
	if reg == nil {
		return 1
	}
	return reg.Epoch + 1
}

// Key is the registry item's key in a table of the given layout.
func Key(spec table.Spec) record.Item {
	k := record.Item{spec.PartitionKey: &types.AttributeValueMemberS{Value: rules.StreamRegistryPK}}
	if spec.SortKey != "" {
		k[spec.SortKey] = &types.AttributeValueMemberS{Value: rules.StreamRegistryPK}
	}
	return k
}

// Get is the read of the registry item.
func Get(tbl string, spec table.Spec, consistent bool) *dynamodb.GetItemInput {
	return &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: Key(spec), ConsistentRead: aws.Bool(consistent),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
}

// Parse reads a registry item (nil for none).
func Parse(it record.Item) (*Registry, error) {
	if it == nil {
		return nil, nil
	}
	cur, ok1 := it[rules.StreamCurrentAttr].(*types.AttributeValueMemberS)
	ep, ok2 := it[rules.StreamEpochAttr].(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("stream registry %s: %s or %s missing", rules.StreamRegistryPK, rules.StreamCurrentAttr, rules.StreamEpochAttr)
	}
	n, err := strconv.Atoi(ep.Value)
	if err != nil || n < 0 || n > record.MaxEpoch {
		return nil, fmt.Errorf("stream registry %s: %s is %q, not an epoch (0 to %d)", rules.StreamRegistryPK, rules.StreamEpochAttr, ep.Value, record.MaxEpoch)
	}
	reg := &Registry{Current: cur.Value, Epoch: n}
	if ss, ok := it[rules.StreamRetiredAttr].(*types.AttributeValueMemberSS); ok {
		reg.Retired = ss.Value
	}
	return reg, nil
}

// Claim is the write that makes arn the current stream at epoch, retiring reg's current
// one, on condition that the registry is still reg (absent when reg is nil).
func Claim(tbl string, spec table.Spec, reg *Registry, arn string, epoch int) (*dynamodb.UpdateItemInput, error) {
	if epoch > record.MaxEpoch {
		return nil, fmt.Errorf("stream registry: %s would be epoch %d, beyond the last, %d", arn, epoch, record.MaxEpoch)
	}
	cur, ep := expression.Name(rules.StreamCurrentAttr), expression.Name(rules.StreamEpochAttr)
	ub := expression.Set(cur, expression.Value(arn)).Set(ep, expression.Value(epoch))
	cond := expression.AttributeNotExists(expression.Name(spec.PartitionKey))
	if reg != nil {
		ub = ub.Add(expression.Name(rules.StreamRetiredAttr), expression.Value(&types.AttributeValueMemberSS{Value: []string{reg.Current}}))
		cond = cur.Equal(expression.Value(reg.Current)).And(ep.Equal(expression.Value(reg.Epoch)))
	}
	e, err := expression.NewBuilder().WithUpdate(ub).WithCondition(cond).Build()
	if err != nil {
		return nil, err
	}
	return &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: Key(spec),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}, nil
}

// API is the part of the DynamoDB client TakeOver uses.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// TakeOver makes the stream arn the current one of table tbl, at the next epoch, retiring
// the current one: what `denorm takeover` does when the processing moves to arn's Region.
// It returns the registry as it was before (nil for none) and arn's epoch; arn already
// current is no change. A retired stream cannot take over again.
func TakeOver(ctx context.Context, api API, tbl string, spec table.Spec, arn string) (*Registry, int, error) {
	out, err := api.GetItem(ctx, Get(tbl, spec, true))
	if err != nil {
		return nil, 0, fmt.Errorf("reading the stream registry of %s: %w", tbl, err)
	}
	reg, err := Parse(out.Item)
	if err != nil {
		return nil, 0, err
	}
	switch reg.Of(arn) {
	case Current:
		return reg, reg.Epoch, nil
	case Retired:
		return reg, 0, fmt.Errorf("stream %s was retired when %s took over; a retired stream does not take over again (disable and enable the table's stream in that Region to get a new one)", arn, reg.Current)
	}
	epoch := reg.TakeOverEpoch()
	in, err := Claim(tbl, spec, reg, arn, epoch)
	if err != nil {
		return reg, 0, err
	}
	if _, err := api.UpdateItem(ctx, in); err != nil {
		var cf *types.ConditionalCheckFailedException
		if errors.As(err, &cf) {
			return reg, 0, fmt.Errorf("the stream registry of %s changed while it was being written: run again", tbl)
		}
		return reg, 0, fmt.Errorf("writing the stream registry of %s: %w", tbl, err)
	}
	return reg, epoch, nil
}
