package record

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamstypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Fixed parts of the Lambda record JSON for DynamoDB.
const (
	eventSource    = "aws:dynamodb"
	eventVersion   = "1.1"
	viewNewAndOld  = "NEW_AND_OLD_IMAGES"
	viewNewOnly    = "NEW_IMAGE"
	viewKeysOnly   = "KEYS_ONLY"
	encodeCapacity = 512
)

// EncodeEvent wraps records in a Lambda DynamoDB event, {"Records":[...]}. Records should be
// JSON values such as EncodeStreamRecord returns; an empty one is written as null so the
// event stays JSON.
func EncodeEvent(records []json.RawMessage) []byte {
	n := len(`{"Records":[]}`) + len(records)
	for _, r := range records {
		n += len(r)
	}
	b := make([]byte, 0, n+4)
	b = append(b, `{"Records":[`...)
	for i, r := range records {
		if i > 0 {
			b = append(b, ',')
		}
		if len(r) == 0 {
			r = json.RawMessage("null")
		}
		b = append(b, r...)
	}
	return append(b, "]}"...)
}

// EncodeStreamRecord turns a record from the DynamoDB Streams API (GetRecords) into the
// JSON Lambda delivers for it, the shape Decode reads. streamARN becomes eventSourceARN
// (GetRecords does not return it); region, when not empty, replaces the record's awsRegion.
// userIdentity is written only when the record has one.
func EncodeStreamRecord(r streamstypes.Record, streamARN, region string) (json.RawMessage, error) {
	id := aws.ToString(r.EventID)
	if r.Dynamodb == nil {
		return nil, fmt.Errorf("encoding record %s: no dynamodb stream record", id)
	}
	if region == "" {
		region = aws.ToString(r.AwsRegion)
	}
	sr := r.Dynamodb
	e := encoder{b: make([]byte, 0, encodeCapacity), asSent: true}
	e.header(id, string(r.EventName), aws.ToString(r.EventVersion), aws.ToString(r.EventSource), region)
	if sr.ApproximateCreationDateTime != nil {
		e.raw(`"ApproximateCreationDateTime":`)
		e.b = appendEpoch(e.b, *sr.ApproximateCreationDateTime)
		e.raw(",")
	}
	for _, im := range []struct {
		name string
		item map[string]streamstypes.AttributeValue
	}{{"Keys", sr.Keys}, {"NewImage", sr.NewImage}, {"OldImage", sr.OldImage}} {
		if im.item == nil {
			continue
		}
		e.raw(`"` + im.name + `":`)
		item, f := fromStreamsMap(im.item, 1)
		if f == nil {
			f = e.item(item)
		}
		if f != nil {
			return nil, encodeError(id, f.in(im.name).in("dynamodb"))
		}
		e.raw(",")
	}
	e.trailer(aws.ToString(sr.SequenceNumber), aws.ToInt64(sr.SizeBytes), string(sr.StreamViewType))
	if u := r.UserIdentity; u != nil {
		e.raw(`,"userIdentity":{"type":`)
		e.str(aws.ToString(u.Type))
		e.raw(`,"principalId":`)
		e.str(aws.ToString(u.PrincipalId))
		e.raw("}")
	}
	e.raw(`,"eventSourceARN":`)
	e.str(streamARN)
	e.raw("}")
	if e.f != nil {
		return nil, encodeError(id, e.f)
	}
	return e.b, nil
}

// EncodeChange is the inverse of Decode: the Lambda record JSON for c, with StreamViewType
// NEW_AND_OLD_IMAGES and, for a TTL removal, DynamoDB's service identity. It lets tests and
// fault injection fabricate records, TTL deletes in particular, that DynamoDB Local never
// sends. eventSourceARN is streamARN, or c.Source when streamARN is empty. It refuses what
// Decode would reject, so Decode(EncodeChange(c)) gives c back.
func EncodeChange(c Change, streamARN, region string) (json.RawMessage, error) {
	if f := checkChange(&c); f != nil {
		return nil, encodeError(c.EventID, f)
	}
	if streamARN == "" {
		streamARN = c.Source
	}
	e := encoder{b: make([]byte, 0, encodeCapacity)}
	e.header(c.EventID, c.Op.String(), eventVersion, eventSource, region)
	if !c.Created.IsZero() {
		e.raw(`"ApproximateCreationDateTime":`)
		e.b = appendEpoch(e.b, c.Created)
		e.raw(",")
	}
	for _, im := range []struct {
		name string
		item Item
	}{{"Keys", c.Keys}, {"NewImage", c.New}, {"OldImage", c.Old}} {
		if im.item == nil {
			continue
		}
		e.raw(`"` + im.name + `":`)
		if f := e.item(im.item); f != nil {
			return nil, encodeError(c.EventID, f.in(im.name).in("dynamodb"))
		}
		e.raw(",")
	}
	e.trailer(c.Seq, c.SizeBytes, viewNewAndOld)
	if c.TTL {
		e.raw(`,"userIdentity":{"type":"` + ttlType + `","principalId":"` + ttlPrincipal + `"}`)
	}
	e.raw(`,"eventSourceARN":`)
	e.str(streamARN)
	e.raw("}")
	if e.f != nil {
		return nil, encodeError(c.EventID, e.f)
	}
	return e.b, nil
}

// checkChange applies Decode's record-level rules to c.
func checkChange(c *Change) *fault {
	switch {
	case c.EventID == "":
		return failf("missing or empty").in("eventID")
	case c.Op != Insert && c.Op != Modify && c.Op != Remove:
		return failf("operation %d is not INSERT, MODIFY or REMOVE", c.Op).in("eventName")
	case !allDigits(c.Seq):
		return failf("%q is not a decimal number", c.Seq).in("SequenceNumber").in("dynamodb")
	case len(c.Keys) == 0:
		return failf("missing or empty").in("Keys").in("dynamodb")
	case c.SizeBytes < 0:
		return failf("%d is negative", c.SizeBytes).in("SizeBytes").in("dynamodb")
	case c.TTL && c.Op != Remove:
		return failf("TTL is set on a %s change; only removals come from TTL", c.Op)
	}
	if !c.Created.IsZero() && (c.Created.Before(time.Unix(0, 0)) || c.Created.Unix() >= maxEpoch) {
		return failf("%s is outside 1970 to year 5138", c.Created).in("ApproximateCreationDateTime").in("dynamodb")
	}
	return checkImages(c, viewNewAndOld)
}

func encodeError(id string, f *fault) error {
	return fmt.Errorf("encoding record %s: %s", id, f.render())
}

// appendEpoch writes t as epoch seconds, with as many fractional digits as it needs.
func appendEpoch(b []byte, t time.Time) []byte {
	sec, ns := t.Unix(), int64(t.Nanosecond())
	if sec < 0 {
		b = append(b, '-')
		sec = -sec
		if ns > 0 { // -1.25 s is Unix() -2 plus 0.75 s
			sec--
			ns = 1e9 - ns
		}
	}
	b = strconv.AppendInt(b, sec, 10)
	if ns == 0 {
		return b
	}
	frac := strconv.AppendInt(nil, 1e9+ns, 10)[1:] // nine digits, zero-padded
	for frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	b = append(b, '.')
	return append(b, frac...)
}

// encoder writes the record JSON. The first string it cannot write is kept in f.
type encoder struct {
	b []byte
	f *fault
	// asSent writes numbers and NULLs as DynamoDB sent them, unchecked: Decode judges them,
	// so a record the function cannot use reaches it (and is skipped) rather than stopping
	// the mapping emulator.
	asSent bool
}

func (e *encoder) raw(s string) { e.b = append(e.b, s...) }

// header writes the record's fields before the stream record and opens "dynamodb".
func (e *encoder) header(id, name, version, source, region string) {
	e.raw(`{"eventID":`)
	e.str(id)
	e.raw(`,"eventName":`)
	e.str(name)
	e.raw(`,"eventVersion":`)
	e.str(version)
	e.raw(`,"eventSource":`)
	e.str(source)
	e.raw(`,"awsRegion":`)
	e.str(region)
	e.raw(`,"dynamodb":{`)
}

// trailer writes the stream record's last fields and closes "dynamodb".
func (e *encoder) trailer(seq string, size int64, view string) {
	e.raw(`"SequenceNumber":`)
	e.str(seq)
	e.raw(`,"SizeBytes":`)
	e.b = strconv.AppendInt(e.b, size, 10)
	e.raw(`,"StreamViewType":`)
	e.str(view)
	e.raw("}")
}

// str writes a JSON string. DynamoDB strings are UTF-8, and Decode rejects anything else,
// so invalid UTF-8 is an error rather than silently replaced. The first such error is also
// kept in e.f for callers that check once at the end.
func (e *encoder) str(s string) *fault {
	var f *fault
	e.b = append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 && f == nil {
				f = failf("string %q is not valid UTF-8", s)
				if e.f == nil {
					e.f = f
				}
			}
			i += n
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		e.b = append(e.b, s[start:i]...)
		switch c {
		case '"', '\\':
			e.b = append(e.b, '\\', c)
		case '\n':
			e.b = append(e.b, '\\', 'n')
		case '\r':
			e.b = append(e.b, '\\', 'r')
		case '\t':
			e.b = append(e.b, '\\', 't')
		default:
			e.b = append(e.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	e.b = append(e.b, s[start:]...)
	e.b = append(e.b, '"')
	return f
}

const hexDigits = "0123456789abcdef"

// strs writes a JSON array of strings; number checks that they are DynamoDB numbers.
func (e *encoder) strs(ss []string, number bool) *fault {
	e.b = append(e.b, '[')
	for i, s := range ss {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if number {
			if f := checkNumber("NS member", s); f != nil {
				return f.at(i)
			}
		}
		if f := e.str(s); f != nil {
			return f.at(i)
		}
	}
	e.b = append(e.b, ']')
	return nil
}

func (e *encoder) bins(bs [][]byte) {
	e.b = append(e.b, '[')
	for i, b := range bs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.bin(b)
	}
	e.b = append(e.b, ']')
}

func (e *encoder) bin(b []byte) {
	e.b = append(e.b, '"')
	e.b = base64.StdEncoding.AppendEncode(e.b, b)
	e.b = append(e.b, '"')
}

func (e *encoder) boolean(v bool) {
	e.b = strconv.AppendBool(e.b, v)
}

// item writes an item or key, attributes in name order so the output is deterministic.
func (e *encoder) item(m map[string]types.AttributeValue) *fault {
	return e.mapOf(m, 1)
}

func (e *encoder) mapOf(m map[string]types.AttributeValue, depth int) *fault {
	e.b = append(e.b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if f := e.str(k); f != nil {
			return f.attr(k)
		}
		e.b = append(e.b, ':')
		if f := e.value(m[k], depth); f != nil {
			return f.attr(k)
		}
	}
	e.b = append(e.b, '}')
	return nil
}

// value writes one attribute value from the DynamoDB API types. A nil value, typed or not,
// is an error rather than a panic.
func (e *encoder) value(v types.AttributeValue, depth int) *fault {
	if depth > MaxDepth {
		return failf("attribute values nest deeper than %d levels", MaxDepth)
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if v != nil {
			e.raw(`{"S":`)
			if f := e.str(v.Value); f != nil {
				return f
			}
			e.raw("}")
			return nil
		}
	case *types.AttributeValueMemberN:
		if v != nil {
			if f := checkNumber("N value", v.Value); f != nil && !e.asSent {
				return f
			}
			e.raw(`{"N":`)
			e.str(v.Value)
			e.raw("}")
			return nil
		}
	case *types.AttributeValueMemberB:
		if v != nil {
			e.raw(`{"B":`)
			e.bin(v.Value)
			e.raw("}")
			return nil
		}
	case *types.AttributeValueMemberBOOL:
		if v != nil {
			e.raw(`{"BOOL":`)
			e.boolean(v.Value)
			e.raw("}")
			return nil
		}
	case *types.AttributeValueMemberNULL:
		if v != nil {
			if !v.Value && !e.asSent {
				return failf("NULL value must be true")
			}
			e.raw(`{"NULL":`)
			e.boolean(v.Value)
			e.raw("}")
			return nil
		}
	case *types.AttributeValueMemberL:
		if v != nil {
			e.raw(`{"L":[`)
			for i, x := range v.Value {
				if i > 0 {
					e.raw(",")
				}
				if f := e.value(x, depth+1); f != nil {
					return f.at(i).in("L")
				}
			}
			e.raw("]}")
			return nil
		}
	case *types.AttributeValueMemberM:
		if v != nil {
			e.raw(`{"M":`)
			if f := e.mapOf(v.Value, depth+1); f != nil {
				return f.in("M")
			}
			e.raw("}")
			return nil
		}
	case *types.AttributeValueMemberSS:
		if v != nil {
			e.raw(`{"SS":`)
			if f := e.strs(v.Value, false); f != nil {
				return f.in("SS")
			}
			e.raw("}")
			return nil
		}
	case *types.AttributeValueMemberNS:
		if v != nil {
			e.raw(`{"NS":`)
			if f := e.strs(v.Value, !e.asSent); f != nil {
				return f.in("NS")
			}
			e.raw("}")
			return nil
		}
	case *types.AttributeValueMemberBS:
		if v != nil {
			e.raw(`{"BS":`)
			e.bins(v.Value)
			e.raw("}")
			return nil
		}
	case nil:
	default:
		return failf("unsupported attribute value type %T", v)
	}
	return failf("nil attribute value")
}

// fromStreams converts a value of the DynamoDB Streams API's types, which mirror the
// DynamoDB API's but are distinct Go types, so that one encoder writes both. A nil value,
// typed or not, is an error rather than a panic.
func fromStreams(v streamstypes.AttributeValue, depth int) (types.AttributeValue, *fault) {
	if depth > MaxDepth {
		return nil, failf("attribute values nest deeper than %d levels", MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, failf("nil attribute value")
	case *streamstypes.AttributeValueMemberL:
		if x == nil {
			return nil, failf("nil attribute value")
		}
		l := make([]types.AttributeValue, len(x.Value))
		for i, e := range x.Value {
			c, f := fromStreams(e, depth+1)
			if f != nil {
				return nil, f.at(i).in("L")
			}
			l[i] = c
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case *streamstypes.AttributeValueMemberM:
		if x == nil {
			return nil, failf("nil attribute value")
		}
		m, f := fromStreamsMap(x.Value, depth+1)
		if f != nil {
			return nil, f.in("M")
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, failf("nil attribute value")
	}
	c, err := attributevalue.FromDynamoDBStreams(v)
	if err != nil {
		return nil, failf("unsupported attribute value type %T", v)
	}
	return c, nil
}

func fromStreamsMap(m map[string]streamstypes.AttributeValue, depth int) (map[string]types.AttributeValue, *fault) {
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		c, f := fromStreams(v, depth)
		if f != nil {
			return nil, f.attr(k)
		}
		out[k] = c
	}
	return out, nil
}
