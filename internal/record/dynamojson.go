package record

import (
	"errors"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB JSON ({"S": "x"}, {"N": "1"}, {"M": {...}}) outside a stream record: what the
// AWS CLI prints, and what Denorm's checkpoints and --json reports hold, since it keeps a
// number's exact digits and the difference between a string and a number. The encoder and
// decoder are the ones stream records go through; null stands for an absent value.

// MarshalValue writes v in DynamoDB JSON, map keys sorted; nil is null.
func MarshalValue(v types.AttributeValue) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	var e encoder
	if f := e.value(v, 1); f != nil {
		return nil, errors.New(f.render())
	}
	return e.b, nil
}

// MarshalItem writes an item as a JSON object of DynamoDB JSON values; nil is null.
func MarshalItem(item Item) ([]byte, error) {
	if item == nil {
		return []byte("null"), nil
	}
	var e encoder
	if f := e.item(item); f != nil {
		return nil, errors.New(f.render())
	}
	return e.b, nil
}

// UnmarshalValue reads one value in DynamoDB JSON, checked as a stream record's are; null
// is nil. The value does not refer to b's memory.
func UnmarshalValue(b []byte) (types.AttributeValue, error) {
	d := decoder{scanner: scanner{s: unsafe.String(unsafe.SliceData(b), len(b))}}
	var v types.AttributeValue
	var f *fault
	if !d.null() {
		v, f = d.attrValue(1)
	}
	if f == nil {
		f = d.end()
	}
	if f != nil {
		return nil, errors.New(f.render())
	}
	return v, nil
}

// UnmarshalItem reads a JSON object of DynamoDB JSON values; null is nil. The item does not
// refer to b's memory.
func UnmarshalItem(b []byte) (Item, error) {
	d := decoder{scanner: scanner{s: unsafe.String(unsafe.SliceData(b), len(b))}}
	it, f := d.image()
	if f == nil {
		f = d.end()
	}
	if f != nil {
		return nil, errors.New(f.render())
	}
	return it, nil
}
