// Package record is a DynamoDB stream record decoded for the engine: operation, sequence
// number, keys and both images as SDK attribute values, and whether TTL removed the item.
// Decoding never panics: a malformed record is an error naming what is wrong.
package record

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is an item image or key.
type Item = map[string]types.AttributeValue

// Op is the stream record's event name.
type Op uint8

// Operations.
const (
	Insert Op = iota + 1
	Modify
	Remove
)

func (o Op) String() string {
	switch o {
	case Insert:
		return "INSERT"
	case Modify:
		return "MODIFY"
	case Remove:
		return "REMOVE"
	}
	return "UNKNOWN"
}

// Change is one decoded stream record.
type Change struct {
	EventID string
	// Seq is the stream SequenceNumber: decimal digits, leading zeros kept as delivered.
	// Compare with CompareSeq, never as strings of different lengths.
	Seq string
	Op  Op
	// Keys holds the item's primary key; Old and New the images (nil when absent). A REMOVE
	// may carry neither: DynamoDB Local emits one when the item was already gone, deleted by
	// another client at the same time; it changes nothing.
	Keys, Old, New Item
	// TTL is true when DynamoDB's TTL process deleted the item (userIdentity type Service,
	// principalId dynamodb.amazonaws.com).
	TTL bool
	// Created is ApproximateCreationDateTime (zero when absent).
	Created time.Time
	// SizeBytes is the record's size as the stream reports it.
	SizeBytes int64
	// Source is the eventSourceARN (the stream ARN).
	Source string
	// Epoch is the number the stream registry gave Source's stream (package streams): 0 for
	// the first stream that fed the table's Denorm state. Not decoded: the processor sets it.
	Epoch int
}

// Position is where the change stands among every change Denorm has applied to the table:
// its sequence number within its stream's epoch (Position(c.Epoch, c.Seq)). Every
// sequence-number guard Denorm writes holds a position.
func (c *Change) Position() (string, error) { return Position(c.Epoch, c.Seq) }

// Image returns the image that describes the item after the change (New), or before it for
// a removal (Old); nil for a removal without OldImage.
func (c *Change) Image() Item {
	if c.New != nil {
		return c.New
	}
	return c.Old
}

// CompareSeq compares two sequence numbers as non-negative integers: -1, 0 or +1.
// Sequence numbers are up to 40 digits, beyond int64 and float64.
func CompareSeq(a, b string) int {
	a, b = trimZeros(a), trimZeros(b)
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MaxEpoch is the last epoch a position can name: a position has at most 38 digits, the
// precision of a DynamoDB number.
const MaxEpoch = 99

// epochShift is how many digits of a position are the sequence number.
const epochShift = 36

// Position returns the sequence number seq of a stream of the given epoch as a position
// that orders every change Denorm applies to one table, whichever stream it came from:
// epoch × 10^36 + seq, in the form of NormSeq. Epoch 0 leaves seq as it is, so the guards
// written before epochs existed are positions of epoch 0. Sequence numbers of two streams
// mean nothing to each other (two Regions of a global table, or a stream disabled and
// enabled again); a later epoch's positions are all above an earlier one's. A sequence
// number beyond 36 digits cannot be placed in an epoch above 0.
func Position(epoch int, seq string) (string, error) {
	n := NormSeq(seq)
	switch {
	case epoch == 0:
		return n, nil
	case epoch < 0 || epoch > MaxEpoch:
		return "", fmt.Errorf("stream epoch %d is out of range 0..%d", epoch, MaxEpoch)
	case len(n) > epochShift:
		return "", fmt.Errorf("sequence number %s has more than %d digits and cannot be placed in stream epoch %d", n, epochShift, epoch)
	}
	return strconv.Itoa(epoch) + strings.Repeat("0", epochShift-len(n)) + n, nil
}

// NormSeq returns the sequence number without leading zeros ("0" for zero), the form
// written into DynamoDB number attributes.
func NormSeq(s string) string {
	s = trimZeros(s)
	if s == "" {
		return "0"
	}
	return s
}

// trimZeros drops leading zeros; zero becomes "".
func trimZeros(s string) string {
	i := 0
	for i < len(s) && s[i] == '0' {
		i++
	}
	return s[i:]
}

// SeqOf returns the digits of a sequence-number attribute (a watermark, a version), or ""
// when it is absent or not a number.
func SeqOf(v types.AttributeValue) string {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}
