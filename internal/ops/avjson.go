package ops

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/record"
)

// The checkpoint and the --json report hold attribute values in DynamoDB JSON
// ({"S": "x"}, {"N": "1"}, {"M": {...}}), written and read by the stream record's codec.

// avJSON is one attribute value in DynamoDB JSON (nil: absent, JSON null).
type avJSON struct{ v types.AttributeValue }

func (a avJSON) MarshalJSON() ([]byte, error) { return record.MarshalValue(a.v) }

func (a *avJSON) UnmarshalJSON(b []byte) (err error) {
	a.v, err = record.UnmarshalValue(b)
	return err
}

// itemJSON is an item in DynamoDB JSON.
type itemJSON record.Item

func (it itemJSON) MarshalJSON() ([]byte, error) { return record.MarshalItem(record.Item(it)) }

func (it *itemJSON) UnmarshalJSON(b []byte) error {
	m, err := record.UnmarshalItem(b)
	*it = itemJSON(m)
	return err
}
