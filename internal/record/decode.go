package record

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxDepth is how deeply attribute values may nest (a top-level attribute is level 1, a value
// inside its L or M level 2). DynamoDB allows 32; anything deeper than this is not from
// DynamoDB and is rejected before it can exhaust the stack.
const MaxDepth = 64

// The userIdentity of a deletion by DynamoDB's TTL process.
const (
	ttlType      = "Service"
	ttlPrincipal = "dynamodb.amazonaws.com"
)

// maxJSONDepth bounds nesting in the parts of a payload that are skipped rather than decoded
// (unknown fields), the same limit encoding/json applies.
const maxJSONDepth = 10000

// DecodeError is a stream record that cannot be decoded: which record, where in it and what
// is wrong. Every error Decode returns is a *DecodeError.
type DecodeError struct {
	EventID string // "" when the record has no readable eventID
	Path    string // e.g. dynamodb.NewImage.tags.L[2]; "" for the record as a whole
	Msg     string
	Err     error // the underlying cause, if any
}

// Error reads "record <eventID>: <path>: <what is wrong>[: <cause>]".
func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("record ")
	if e.EventID != "" {
		b.WriteString(e.EventID)
	} else {
		b.WriteString("<no eventID>")
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// SplitEvent splits a Lambda DynamoDB event ({"Records":[...]}) into its raw records, so
// that one malformed record can be reported on its own while the others are decoded. It
// fails only when the payload is not JSON or has no Records array. The records alias
// payload.
func SplitEvent(payload []byte) ([]json.RawMessage, error) {
	// The scanner reads a string; viewing the payload as one avoids copying up to 6 MB.
	// Safe because only offsets into it, never substrings of it, leave this function.
	s := scanner{s: unsafe.String(unsafe.SliceData(payload), len(payload))}
	var out []json.RawMessage
	found := false
	more, f := s.enter('{', "an event must be a JSON object")
	for f == nil && more {
		var k string
		if k, f = s.key(); f != nil {
			break
		}
		if k != "Records" {
			f = s.skip(1)
		} else if found {
			f = failf("duplicate field").in(k)
		} else {
			found = true
			if out, f = s.records(payload); f != nil {
				f = f.in(k)
			}
		}
		if f == nil {
			more, f = s.more('}')
		}
	}
	if f == nil {
		f = s.end()
	}
	if f == nil && !found {
		f = failf("no Records array")
	}
	if f != nil {
		return nil, fmt.Errorf("splitting event: %s", f.render())
	}
	return out, nil
}

// records reads the Records array as slices of payload, which s views.
func (s *scanner) records(payload []byte) ([]json.RawMessage, *fault) {
	more, f := s.enter('[', "must be a JSON array")
	out := []json.RawMessage{}
	for i := 0; f == nil && more; i++ {
		s.ws()
		start := s.i
		if f = s.skip(1); f != nil {
			return nil, f.at(i)
		}
		// Capped so that appending to one record cannot overwrite the next.
		out = append(out, payload[start:s.i:s.i])
		more, f = s.more(']')
	}
	return out, f
}

// Decode decodes one record of a Lambda DynamoDB stream event (the JSON of
// events.DynamoDBEventRecord). It checks what the engine relies on: a known eventName, a
// SequenceNumber of digits, non-empty Keys and the images the operation must carry (a
// REMOVE may carry none, see Change), each attribute value with exactly one valid type.
// Unknown fields are ignored. It never panics; every error is a *DecodeError. Neither the
// Change nor the error refers to raw's memory: the caller may reuse raw.
func Decode(raw json.RawMessage) (Change, error) {
	// The scanner reads raw in place and every string the Change keeps is copied out of it
	// (decoder.keep), since the caller may reuse raw (aws-lambda-go pools its payload
	// buffers). Copying only what is kept, about 40 % of a record, leaves less for the
	// collector than copying the whole record.
	d := decoder{scanner: scanner{s: unsafe.String(unsafe.SliceData(raw), len(raw))}}
	c, f := d.record()
	if f == nil {
		return c, nil
	}
	id := c.EventID
	if id == "" {
		id = strings.Clone(findEventID(d.s))
	}
	return Change{}, &DecodeError{EventID: id, Path: f.path(), Msg: f.msg, Err: f.err}
}

// decoder decodes one record.
type decoder struct {
	scanner
	// sSlab hands out S values in blocks: S is the most common attribute type and one
	// allocation per block instead of per value is the largest single saving. A block
	// holds sBlock values: the keys and attributes of a typical INSERT, 192 bytes.
	sSlab []types.AttributeValueMemberS
	// kept holds the copies keep makes, several strings to a block.
	kept []byte
}

// sBlock is how many S values decoder.newS allocates at once.
const sBlock = 8

// keptBlock caps the size of a block of kept strings.
const keptBlock = 1024

// keep returns a copy of s, which may be a view of the caller's bytes. Copies share blocks,
// the first sized for a typical record (half of what is left to read); a string too long
// to share one gets its own.
func (d *decoder) keep(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > cap(d.kept)-len(d.kept) {
		if len(s) > keptBlock/4 {
			return strings.Clone(s)
		}
		d.kept = make([]byte, 0, min(keptBlock, len(s)+(len(d.s)-d.i)/2))
	}
	start := len(d.kept)
	d.kept = append(d.kept, s...)
	// Like strings.Builder: bytes once written to kept are never written again.
	return unsafe.String(&d.kept[start], len(s))
}

// keptString reads a string or null ("") that the Change keeps.
func (d *decoder) keptString(want string) (string, *fault) {
	s, f := d.optString(want)
	return d.keep(s), f
}

// Bits for fields that may appear once.
const (
	fEventID = 1 << iota
	fEventName
	fSource
	fUser
	fDynamo
	fCreated
	fKeys
	fNew
	fOld
	fSeq
	fSize
	fView
	fUserType
	fUserPrincipal
)

func (d *decoder) record() (Change, *fault) {
	var (
		c          Change
		seen       int
		op         string
		uType, uID string
		view       string
	)
	more, f := d.enter('{', "a record must be a JSON object")
	for f == nil && more {
		var k string
		if k, f = d.key(); f != nil {
			break
		}
		bit := 0
		switch k {
		case "eventID":
			bit = fEventID
			c.EventID, f = d.keptString("must be a string")
		case "eventName":
			bit = fEventName
			op, f = d.optString("must be a string")
		case "eventSourceARN":
			bit = fSource
			c.Source, f = d.keptString("must be a string")
		case "userIdentity":
			bit = fUser
			uType, uID, f = d.userIdentity()
		case "dynamodb":
			bit = fDynamo
			view, f = d.streamRecord(&c)
		default:
			f = d.skip(1)
		}
		if f == nil && seen&bit != 0 {
			f = failf("duplicate field")
		}
		seen |= bit
		if f != nil {
			f = f.in(k)
			break
		}
		more, f = d.more('}')
	}
	if f == nil {
		f = d.end()
	}
	if f != nil {
		return c, f
	}
	return c, check(&c, seen, op, view, uType, uID)
}

// check validates what the engine relies on once every field is read, since JSON fields
// come in any order.
func check(c *Change, seen int, op, view, uType, uID string) *fault {
	if c.EventID == "" {
		// The engine keys idempotency markers on it.
		return failf("missing or empty").in("eventID")
	}
	switch op {
	case "INSERT":
		c.Op = Insert
	case "MODIFY":
		c.Op = Modify
	case "REMOVE":
		c.Op = Remove
	case "":
		return failf("missing or empty").in("eventName")
	default:
		return failf("%q is not INSERT, MODIFY or REMOVE", op).in("eventName")
	}
	if seen&fDynamo == 0 {
		return failf("missing").in("dynamodb")
	}
	switch {
	case c.Seq == "":
		return failf("missing or empty").in("SequenceNumber").in("dynamodb")
	case !allDigits(c.Seq):
		return failf("%q is not a decimal number", c.Seq).in("SequenceNumber").in("dynamodb")
	case c.Keys == nil:
		return failf("missing").in("Keys").in("dynamodb")
	case len(c.Keys) == 0:
		return failf("empty").in("Keys").in("dynamodb")
	}
	if f := checkImages(c, view); f != nil {
		return f
	}
	c.TTL = c.Op == Remove && uType == ttlType && uID == ttlPrincipal
	return nil
}

// checkImages checks that c carries the images its operation needs for the stream's view.
// A REMOVE may come without OldImage: DynamoDB Local emits one for each extra client that
// deletes an item at the same time as another (the item was already gone), and it changes
// nothing. Only a view that never carries old images makes that an error, since on such a
// stream every removal would pass unseen.
func checkImages(c *Change, view string) *fault {
	needOld := c.Op == Modify || (c.Op == Remove && (view == viewKeysOnly || view == viewNewOnly))
	if f := checkImage("NewImage", c.New != nil, c.Op != Remove, c.Op != Remove, c.Op, view); f != nil {
		return f
	}
	return checkImage("OldImage", c.Old != nil, needOld, c.Op != Insert, c.Op, view)
}

// checkImage checks one image: need says it must be there, allowed that it may be.
func checkImage(name string, has, need, allowed bool, op Op, view string) *fault {
	switch {
	case need && !has:
		if view == "" {
			view = "not given"
		}
		return failf("missing (eventName %s, StreamViewType %s; Denorm needs NEW_AND_OLD_IMAGES)", op, view).in(name).in("dynamodb")
	case has && !allowed:
		return failf("not expected with eventName %s", op).in(name).in("dynamodb")
	}
	return nil
}

func (d *decoder) userIdentity() (typ, principal string, f *fault) {
	if d.null() {
		return "", "", nil
	}
	seen := 0
	more, f := d.enter('{', "must be a JSON object")
	for f == nil && more {
		var k string
		if k, f = d.key(); f != nil {
			return "", "", f
		}
		bit := 0
		switch k {
		case "type":
			bit = fUserType
			typ, f = d.optString("must be a string")
		case "principalId":
			bit = fUserPrincipal
			principal, f = d.optString("must be a string")
		default:
			f = d.skip(2)
		}
		if f == nil && seen&bit != 0 {
			f = failf("duplicate field")
		}
		seen |= bit
		if f != nil {
			return "", "", f.in(k)
		}
		more, f = d.more('}')
	}
	return typ, principal, f
}

// streamRecord reads the "dynamodb" object into c and returns its StreamViewType.
func (d *decoder) streamRecord(c *Change) (view string, f *fault) {
	seen := 0
	more, f := d.enter('{', "must be a JSON object")
	for f == nil && more {
		var k string
		if k, f = d.key(); f != nil {
			return "", f
		}
		bit := 0
		switch k {
		case "ApproximateCreationDateTime":
			bit = fCreated
			c.Created, f = d.epochSeconds()
		case "Keys":
			bit = fKeys
			c.Keys, f = d.image()
		case "NewImage":
			bit = fNew
			c.New, f = d.image()
		case "OldImage":
			bit = fOld
			c.Old, f = d.image()
		case "SequenceNumber":
			bit = fSeq
			c.Seq, f = d.keptString("must be a string of digits")
		case "SizeBytes":
			bit = fSize
			c.SizeBytes, f = d.sizeBytes()
		case "StreamViewType":
			bit = fView
			view, f = d.optString("must be a string")
		default:
			f = d.skip(2)
		}
		if f == nil && seen&bit != 0 {
			f = failf("duplicate field")
		}
		seen |= bit
		if f != nil {
			return "", f.in(k)
		}
		more, f = d.more('}')
	}
	return view, f
}

// epochSeconds reads ApproximateCreationDateTime: epoch seconds, possibly fractional.
func (d *decoder) epochSeconds() (time.Time, *fault) {
	if d.null() {
		return time.Time{}, nil
	}
	raw, f := d.number("must be a number of epoch seconds")
	if f != nil {
		return time.Time{}, f
	}
	// Exact for the plain decimal form Lambda sends; float64 would round nanoseconds.
	intPart, frac, _ := strings.Cut(raw, ".")
	if allDigits(intPart) && len(intPart) <= 11 && (frac == "" || allDigits(frac)) {
		var sec, ns int64
		for i := 0; i < len(intPart); i++ {
			sec = sec*10 + int64(intPart[i]-'0')
		}
		for i := 0; i < 9; i++ { // nanoseconds: the first 9 digits of the fraction
			ns *= 10
			if i < len(frac) {
				ns += int64(frac[i] - '0')
			}
		}
		if sec < maxEpoch {
			return time.Unix(sec, ns).UTC(), nil
		}
	} else if v, err := strconv.ParseFloat(raw, 64); err == nil && v >= 0 && v < maxEpoch {
		sec := math.Floor(v)
		return time.Unix(int64(sec), int64(math.Round((v-sec)*1e9))).UTC(), nil
	}
	return time.Time{}, failf("%s is not epoch seconds between 0 and %d", raw, int64(maxEpoch))
}

// maxEpoch (year 5138) rejects milliseconds or garbage passed as seconds.
const maxEpoch = 1e11

func (d *decoder) sizeBytes() (int64, *fault) {
	if d.null() {
		return 0, nil
	}
	raw, f := d.number("must be a number")
	if f != nil {
		return 0, f
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, failf("%s is not a non-negative whole number", raw)
	}
	return n, nil
}

// image reads Keys, NewImage or OldImage; null is an absent image.
func (d *decoder) image() (Item, *fault) {
	if d.null() {
		return nil, nil
	}
	more, f := d.enter('{', "must be a JSON object of attribute values")
	if f != nil {
		return nil, f
	}
	m := make(Item)
	for more {
		name, f := d.key()
		if f != nil {
			return nil, f
		}
		name = d.keep(name)
		v, f := d.attrValue(1)
		if f == nil && !add(m, name, v) {
			f = failf("duplicate attribute")
		}
		if f != nil {
			return nil, f.attr(name)
		}
		if more, f = d.more('}'); f != nil {
			return nil, f
		}
	}
	return m, nil
}

// add puts v into m under name and reports false if name was there already. It sees a
// duplicate by the map's size, which saves a lookup per attribute on the common path.
func add(m map[string]types.AttributeValue, name string, v types.AttributeValue) bool {
	n := len(m)
	m[name] = v
	return len(m) > n
}

// attrValue reads one attribute value in DynamoDB JSON, {"<type>": <value>}, at the given
// nesting level.
func (d *decoder) attrValue(depth int) (types.AttributeValue, *fault) {
	if depth > MaxDepth {
		return nil, failf("attribute values nest deeper than %d levels", MaxDepth)
	}
	if v := d.plainValue(); v != nil {
		return v, nil
	}
	more, f := d.enter('{', `an attribute value must be a JSON object like {"S":"text"}`)
	if f != nil {
		return nil, f
	}
	if !more {
		return nil, failf("attribute value {} has no type")
	}
	typ, f := d.key()
	if f != nil {
		return nil, f
	}
	var v types.AttributeValue
	switch typ {
	case "S":
		var s string
		if s, f = d.string("S value must be a string"); f == nil {
			v = d.newS(d.keep(s))
		}
	case "N":
		var s string
		if s, f = d.string("N value must be a string"); f == nil {
			if f = checkNumber("N value", s); f == nil {
				v = &types.AttributeValueMemberN{Value: d.keep(s)}
			}
		}
	case "B":
		var b []byte
		if b, f = d.binary("B"); f == nil {
			v = &types.AttributeValueMemberB{Value: b}
		}
	case "BOOL":
		var b bool
		if b, f = d.boolean("BOOL value must be true or false"); f == nil {
			v = &types.AttributeValueMemberBOOL{Value: b}
		}
	case "NULL":
		var b bool
		if b, f = d.boolean("NULL value must be true"); f == nil && !b {
			f = failf("NULL value must be true")
		}
		v = &types.AttributeValueMemberNULL{Value: true}
	case "L":
		var l []types.AttributeValue
		if l, f = d.list(depth); f == nil {
			v = &types.AttributeValueMemberL{Value: l}
		}
	case "M":
		var m map[string]types.AttributeValue
		if m, f = d.mapValue(depth); f == nil {
			v = &types.AttributeValueMemberM{Value: m}
		}
	case "SS", "NS", "BS":
		v, f = d.set(typ)
	default:
		return nil, failf("unknown attribute type %q (want S, N, B, BOOL, NULL, L, M, SS, NS or BS)", typ)
	}
	if f != nil {
		return nil, f
	}
	if more, f = d.more('}'); f != nil {
		return nil, f
	}
	if more {
		other, _ := d.key()
		return nil, failf("attribute value has more than one type (%s and %q)", typ, other)
	}
	return v, nil
}

// plainValue reads an S or N value written the way DynamoDB and Lambda write them, with no
// whitespace and a printable ASCII value without escapes ({"S":"text"}, {"N":"12"}): most
// values of most records. For anything else it returns nil, consuming nothing, and
// attrValue reads the value the long way, which also words any error.
func (d *decoder) plainValue() types.AttributeValue {
	rest := d.s[d.i:]
	if len(rest) < 8 || rest[0] != '{' || rest[1] != '"' || rest[3] != '"' || rest[4] != ':' || rest[5] != '"' {
		return nil
	}
	end := plainRun(rest, 6)
	if end+1 >= len(rest) || rest[end] != '"' || rest[end+1] != '}' {
		return nil
	}
	text := rest[6:end]
	switch rest[2] {
	case 'S':
		d.i += end + 2
		return d.newS(d.keep(text))
	case 'N':
		if checkNumber("", text) != nil {
			return nil
		}
		d.i += end + 2
		return &types.AttributeValueMemberN{Value: d.keep(text)}
	}
	return nil
}

func (d *decoder) newS(s string) *types.AttributeValueMemberS {
	if len(d.sSlab) == 0 {
		d.sSlab = make([]types.AttributeValueMemberS, sBlock)
	}
	v := &d.sSlab[0]
	d.sSlab = d.sSlab[1:]
	v.Value = s
	return v
}

func (d *decoder) list(depth int) ([]types.AttributeValue, *fault) {
	more, f := d.enter('[', "L value must be a JSON array")
	if f != nil {
		return nil, f.in("L")
	}
	l := []types.AttributeValue{}
	for i := 0; more; i++ {
		v, f := d.attrValue(depth + 1)
		if f != nil {
			return nil, f.at(i).in("L")
		}
		l = append(l, v)
		if more, f = d.more(']'); f != nil {
			return nil, f.in("L")
		}
	}
	return l, nil
}

func (d *decoder) mapValue(depth int) (map[string]types.AttributeValue, *fault) {
	more, f := d.enter('{', "M value must be a JSON object")
	if f != nil {
		return nil, f.in("M")
	}
	m := map[string]types.AttributeValue{}
	for more {
		name, f := d.key()
		if f != nil {
			return nil, f.in("M")
		}
		name = d.keep(name)
		v, f := d.attrValue(depth + 1)
		if f == nil && !add(m, name, v) {
			f = failf("duplicate attribute")
		}
		if f != nil {
			return nil, f.attr(name).in("M")
		}
		if more, f = d.more('}'); f != nil {
			return nil, f.in("M")
		}
	}
	return m, nil
}

// set reads SS, NS or BS. Empty sets and repeated members are accepted: DynamoDB never
// sends them, and rejecting them would protect nothing downstream.
func (d *decoder) set(typ string) (types.AttributeValue, *fault) {
	more, f := d.enter('[', typ+" value must be a JSON array of strings")
	if f != nil {
		return nil, f.in(typ)
	}
	var (
		ss []string
		bs [][]byte
	)
	if typ == "BS" {
		bs = [][]byte{}
	} else {
		ss = []string{}
	}
	for i := 0; more; i++ {
		if typ == "BS" {
			var b []byte
			if b, f = d.binary(typ); f == nil {
				bs = append(bs, b)
			}
		} else {
			var s string
			if s, f = d.string(typ + " members must be strings"); f == nil {
				if typ == "NS" {
					f = checkNumber("NS member", s)
				}
				ss = append(ss, d.keep(s))
			}
		}
		if f != nil {
			return nil, f.at(i).in(typ)
		}
		if more, f = d.more(']'); f != nil {
			return nil, f.in(typ)
		}
	}
	switch typ {
	case "SS":
		return &types.AttributeValueMemberSS{Value: ss}, nil
	case "NS":
		return &types.AttributeValueMemberNS{Value: ss}, nil
	}
	return &types.AttributeValueMemberBS{Value: bs}, nil
}

// binary reads a base64 string (B or a BS member).
func (d *decoder) binary(typ string) ([]byte, *fault) {
	s, f := d.string(typ + " value must be a base64 string")
	if f != nil {
		return nil, f
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, &fault{msg: typ + " value is not base64", err: err}
	}
	return b, nil
}

// checkNumber reports whether s is a number DynamoDB stores: decimal notation with an
// optional exponent (the syntax of Java's BigDecimal), at most 38 significant digits, zero
// or a magnitude from 1E-130 to below 1E+126.
// what names the value in the error.
func checkNumber(what, s string) *fault {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	var (
		intDigits, digits int
		firstSig          = -1 // index among all mantissa digits of the first non-zero one
		lastSig           = -1
		dot               bool
	)
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' && !dot {
			dot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		if c != '0' {
			if firstSig < 0 {
				firstSig = digits
			}
			lastSig = digits
		}
		digits++
		if !dot {
			intDigits++
		}
	}
	if digits == 0 {
		return failf("%s %q is not a number", what, s)
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			neg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if exp < 1e9 { // saturate: far beyond the range check either way
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if i == start {
			return failf("%s %q is not a number", what, s)
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(s) {
		return failf("%s %q is not a number", what, s)
	}
	if firstSig < 0 {
		return nil // zero
	}
	if lastSig-firstSig+1 > 38 {
		return failf("%s %q has more than 38 significant digits", what, s)
	}
	// The power of ten of the leading significant digit.
	if mag := intDigits - 1 - firstSig + exp; mag < -130 || mag > 125 {
		return failf("%s %q is outside DynamoDB's range (1E-130 to 9.99E+125 in magnitude)", what, s)
	}
	return nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// findEventID reads the eventID for an error message about a record that failed before its
// eventID was reached; best effort.
func findEventID(s string) string {
	sc := scanner{s: s}
	more, f := sc.enter('{', "")
	for f == nil && more {
		var k string
		if k, f = sc.key(); f != nil {
			return ""
		}
		if k == "eventID" {
			id, _ := sc.optString("")
			return id
		}
		if f = sc.skip(1); f == nil {
			more, f = sc.more('}')
		}
	}
	return ""
}

// fault is a decoding error on its way out of the recursion: each level adds its segment
// of the path, so the happy path keeps no path at all.
type fault struct {
	rev []seg // innermost first
	msg string
	err error
}

type seg struct {
	name string
	idx  int  // >= 0 for a list index
	attr bool // an attribute name, quoted when it is not a plain word
}

func failf(format string, args ...any) *fault {
	return &fault{msg: fmt.Sprintf(format, args...)}
}

func (f *fault) in(field string) *fault {
	f.rev = append(f.rev, seg{name: field, idx: -1})
	return f
}

func (f *fault) attr(name string) *fault {
	f.rev = append(f.rev, seg{name: name, idx: -1, attr: true})
	return f
}

func (f *fault) at(i int) *fault {
	f.rev = append(f.rev, seg{idx: i})
	return f
}

// maxPathSegs keeps an error about a value 64 levels down readable.
const maxPathSegs = 24

func (f *fault) path() string {
	var b strings.Builder
	n := len(f.rev)
	for j := n - 1; j >= 0; j-- {
		if n > maxPathSegs && j == n-1-maxPathSegs/2 {
			b.WriteString("…")
			j = maxPathSegs/2 - 1
		}
		s := f.rev[j]
		switch {
		case s.idx >= 0:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		case s.attr && !plainName(s.name):
			b.WriteByte('[')
			b.WriteString(strconv.Quote(s.name))
			b.WriteByte(']')
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}

func (f *fault) render() string {
	msg := f.msg
	if f.err != nil {
		msg += ": " + f.err.Error()
	}
	if p := f.path(); p != "" {
		return p + ": " + msg
	}
	return msg
}

func plainName(s string) bool {
	for _, r := range s {
		if r != '_' && r != '-' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// scanner is a minimal JSON reader over a string. Decoding with it instead of encoding/json
// keeps Decode to one pass, makes duplicate and exact-case keys errors rather than silent
// choices, and lets strings without escapes be views of the input until one is kept.
type scanner struct {
	s string
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.s) {
		switch s.s[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// end checks that nothing but whitespace follows the value.
func (s *scanner) end() *fault {
	s.ws()
	if s.i != len(s.s) {
		return s.syntax("unexpected data after the top-level value")
	}
	return nil
}

func (s *scanner) syntax(msg string) *fault {
	return failf("invalid JSON at byte %d: %s", s.i, msg)
}

// unexpected describes the value found where another kind was wanted.
func (s *scanner) unexpected(want string) *fault {
	if s.i >= len(s.s) {
		return s.syntax("unexpected end of input")
	}
	var found string
	switch c := s.s[s.i]; {
	case c == '{':
		found = "an object"
	case c == '[':
		found = "an array"
	case c == '"':
		found = "a string"
	case c == 't' || c == 'f':
		found = "a boolean"
	case c == 'n':
		found = "null"
	case c == '-' || c >= '0' && c <= '9':
		found = "a number"
	default:
		return s.syntax(fmt.Sprintf("invalid character %q", c))
	}
	return failf("%s, found %s", want, found)
}

// enter consumes the opening bracket and reports whether a member or element follows
// (consuming the closing bracket of an empty container).
func (s *scanner) enter(open byte, want string) (bool, *fault) {
	s.ws()
	if s.i >= len(s.s) || s.s[s.i] != open {
		return false, s.unexpected(want)
	}
	s.i++
	s.ws()
	if s.i < len(s.s) && s.s[s.i] == open+2 { // '{'+2 == '}', '['+2 == ']'
		s.i++
		return false, nil
	}
	return true, nil
}

// more consumes the ',' before another member or element (true) or the closing bracket.
func (s *scanner) more(close byte) (bool, *fault) {
	s.ws()
	if s.i < len(s.s) {
		switch s.s[s.i] {
		case ',':
			s.i++
			return true, nil
		case close:
			s.i++
			return false, nil
		}
	}
	return false, s.syntax("expected ',' or '" + string(close) + "'")
}

// key reads an object member's name and the colon after it.
func (s *scanner) key() (string, *fault) {
	s.ws()
	if s.i >= len(s.s) || s.s[s.i] != '"' {
		return "", s.syntax("expected a member name")
	}
	k, f := s.str()
	if f != nil {
		return "", f
	}
	s.ws()
	if s.i >= len(s.s) || s.s[s.i] != ':' {
		return "", s.syntax("expected ':'")
	}
	s.i++
	return k, nil
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	s.ws()
	if strings.HasPrefix(s.s[s.i:], "null") {
		s.i += 4
		return true
	}
	return false
}

// string reads a string value; want says what was expected otherwise.
func (s *scanner) string(want string) (string, *fault) {
	s.ws()
	if s.i >= len(s.s) || s.s[s.i] != '"' {
		return "", s.unexpected(want)
	}
	return s.str()
}

// optString reads a string or null ("").
func (s *scanner) optString(want string) (string, *fault) {
	if s.null() {
		return "", nil
	}
	return s.string(want)
}

func (s *scanner) boolean(want string) (bool, *fault) {
	s.ws()
	switch {
	case strings.HasPrefix(s.s[s.i:], "true"):
		s.i += 4
		return true, nil
	case strings.HasPrefix(s.s[s.i:], "false"):
		s.i += 5
		return false, nil
	}
	return false, s.unexpected(want)
}

// number reads a JSON number and returns its text.
func (s *scanner) number(want string) (string, *fault) {
	s.ws()
	start := s.i
	if s.i < len(s.s) && s.s[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.s) || s.s[s.i] < '0' || s.s[s.i] > '9':
		s.i = start
		return "", s.unexpected(want)
	case s.s[s.i] == '0':
		s.i++
	default:
		s.digits()
	}
	if s.i < len(s.s) && s.s[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return "", s.syntax("expected a digit after the decimal point")
		}
	}
	if s.i < len(s.s) && (s.s[s.i] == 'e' || s.s[s.i] == 'E') {
		s.i++
		if s.i < len(s.s) && (s.s[s.i] == '+' || s.s[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return "", s.syntax("expected a digit in the exponent")
		}
	}
	return s.s[start:s.i], nil
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.s) && s.s[s.i] >= '0' && s.s[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// skip reads and discards one value of any kind, validating it.
func (s *scanner) skip(depth int) *fault {
	if depth > maxJSONDepth {
		return s.syntax(fmt.Sprintf("nested deeper than %d levels", maxJSONDepth))
	}
	s.ws()
	if s.i >= len(s.s) {
		return s.syntax("unexpected end of input")
	}
	switch s.s[s.i] {
	case '{':
		more, f := s.enter('{', "")
		for f == nil && more {
			if _, f = s.key(); f == nil {
				if f = s.skip(depth + 1); f == nil {
					more, f = s.more('}')
				}
			}
		}
		return f
	case '[':
		more, f := s.enter('[', "")
		for f == nil && more {
			if f = s.skip(depth + 1); f == nil {
				more, f = s.more(']')
			}
		}
		return f
	case '"':
		_, f := s.str()
		return f
	case 't', 'f':
		_, f := s.boolean("")
		return f
	case 'n':
		if s.null() {
			return nil
		}
		return s.syntax("invalid literal")
	}
	_, f := s.number("a JSON value")
	return f
}

// str reads a string at s.i, which is '"'. Without escapes the result is a substring of s.s.
func (s *scanner) str() (string, *fault) {
	start := s.i + 1
	for i := plainRun(s.s, start); i < len(s.s); i = plainRun(s.s, i) {
		c := s.s[i]
		switch {
		case c == '"':
			s.i = i + 1
			return s.s[start:i], nil
		case c == '\\':
			return s.strEscaped(start, i)
		case c < 0x20:
			s.i = i
			return "", s.syntax("control character in string")
		default:
			r, n := utf8.DecodeRuneInString(s.s[i:])
			if r == utf8.RuneError && n == 1 {
				s.i = i
				return "", s.syntax("invalid UTF-8 in string")
			}
			i += n
		}
	}
	s.i = len(s.s)
	return "", s.syntax("unexpected end of input in string")
}

// plainRun returns the index of the first byte of s from i on that is not plain (see
// plainByte), or len(s). Testing four bytes per loop iteration takes about a third less
// time than testing one.
func plainRun(s string, i int) int {
	for i+4 <= len(s) && plainByte[s[i]] && plainByte[s[i+1]] && plainByte[s[i+2]] && plainByte[s[i+3]] {
		i += 4
	}
	for i < len(s) && plainByte[s[i]] {
		i++
	}
	return i
}

// plainByte marks the bytes a string's fast path passes over: printable ASCII other than
// '"' and '\\'. One table load per byte instead of four comparisons.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// strEscaped finishes a string with escapes the way encoding/json does (a lone surrogate
// becomes U+FFFD).
func (s *scanner) strEscaped(start, i int) (string, *fault) {
	b := make([]byte, 0, i-start+16)
	b = append(b, s.s[start:i]...)
	for i < len(s.s) {
		c := s.s[i]
		switch {
		case c == '"':
			s.i = i + 1
			return string(b), nil
		case c == '\\':
			if i+1 >= len(s.s) {
				i++
				continue
			}
			e := s.s[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(s.s[i:])
				if !ok {
					s.i = i
					return "", s.syntax("invalid \\u escape")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if strings.HasPrefix(s.s[i:], `\u`) {
						if r2, ok := hex4(s.s[i+2:]); ok {
							if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
								r = pair
								i += 6
							} else {
								r = utf8.RuneError
							}
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				s.i = i - 1
				return "", s.syntax(fmt.Sprintf("invalid escape %q", "\\"+string(e)))
			}
		case c < 0x20:
			s.i = i
			return "", s.syntax("control character in string")
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s.s[i:])
			if r == utf8.RuneError && n == 1 {
				s.i = i
				return "", s.syntax("invalid UTF-8 in string")
			}
			b = append(b, s.s[i:i+n]...)
			i += n
		}
	}
	s.i = len(s.s)
	return "", s.syntax("unexpected end of input in string")
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// RawSeq is a raw record's SequenceNumber, read without decoding the rest, for a record
// that failed to decode: "" when it has none of digits.
func RawSeq(raw json.RawMessage) string {
	var r struct {
		Dynamodb struct {
			SequenceNumber string
		} `json:"dynamodb"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	for _, c := range r.Dynamodb.SequenceNumber {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return r.Dynamodb.SequenceNumber
}
