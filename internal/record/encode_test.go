package record

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamstypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

func s(v string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: v} }
func n(v string) *types.AttributeValueMemberN { return &types.AttributeValueMemberN{Value: v} }

// everyType holds each attribute type, nested and empty forms, and strings that need escaping.
func everyType() Item {
	return Item{
		"pk": s("TYPES#1"), "sk": s("ALL"),
		"s": s("plain"), "sEmpty": s(""), "sEscapes": s("\"\\/\b\f\n\r\t\x00\x1f\x7f é 中 😀 \u2028 <&>"),
		"n": n("-12.5e3"), "nZero": n("0"), "nBig": n("9.9999999999999999999999999999999999999E+125"),
		"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 0xff}}, "bEmpty": &types.AttributeValueMemberB{Value: []byte{}},
		"t": &types.AttributeValueMemberBOOL{Value: true}, "f": &types.AttributeValueMemberBOOL{Value: false},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			s("a"), n("1"), &types.AttributeValueMemberL{Value: []types.AttributeValue{
				&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"deep": &types.AttributeValueMemberSS{Value: []string{"x"}}}},
			}},
		}},
		"lEmpty": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"name": s("Joe"), "age": n("35"), "bin": &types.AttributeValueMemberB{Value: []byte("hi")},
			"inner": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"ok": &types.AttributeValueMemberBOOL{Value: true}}},
		}},
		"mEmpty": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
		"ss":     &types.AttributeValueMemberSS{Value: []string{"Giraffe", "Zebra"}},
		"ns":     &types.AttributeValueMemberNS{Value: []string{"1234", "567.8", "-0.001"}},
		"bs":     &types.AttributeValueMemberBS{Value: [][]byte{{1, 2}, {}, []byte("x")}},
		"a.b c":  s("odd name"),
	}
}

// Decode(EncodeChange(c)) == c for every operation and attribute type.
func TestEncodeChangeRoundTrip(t *testing.T) {
	keys := Item{"pk": s("TYPES#1"), "sk": s("ALL")}
	base := Change{
		EventID: "e-1", Seq: "000123456789012345678901234567890", Keys: keys,
		Created: time.Unix(1732240800, 123456789).UTC(), SizeBytes: 321,
		Source: "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2024",
	}
	with := func(f func(*Change)) Change {
		c := base
		f(&c)
		return c
	}
	tests := map[string]Change{
		"insert":       with(func(c *Change) { c.Op, c.New = Insert, everyType() }),
		"modify":       with(func(c *Change) { c.Op, c.New, c.Old = Modify, everyType(), Item{"pk": s("TYPES#1"), "sk": s("ALL")} }),
		"remove":       with(func(c *Change) { c.Op, c.Old = Remove, everyType() }),
		"ttl remove":   with(func(c *Change) { c.Op, c.Old, c.TTL = Remove, everyType(), true }),
		"no image":     with(func(c *Change) { c.Op = Remove }), // the item was already gone
		"no created":   with(func(c *Change) { c.Op, c.New, c.Created = Insert, keys, time.Time{} }),
		"whole second": with(func(c *Change) { c.Op, c.New, c.Created = Insert, keys, time.Unix(5, 0).UTC() }),
		"epoch zero":   with(func(c *Change) { c.Op, c.New, c.Created, c.SizeBytes = Insert, keys, time.Unix(0, 1).UTC(), 0 }),
		"no source":    with(func(c *Change) { c.Op, c.New, c.Source = Insert, keys, "" }),
	}
	// Each type alone, as the only non-key attribute, so a failure names it.
	for name, v := range everyType() {
		tests["attribute "+name] = with(func(c *Change) { c.Op, c.New = Insert, Item{"pk": s("k"), name: v} })
	}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			raw, err := EncodeChange(c, "", "us-east-1")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(raw)
			if err != nil {
				t.Fatalf("%v\n%s", err, raw)
			}
			if !equalChange(got, c) {
				t.Errorf("round trip changed the record:\n got: %s\nwant: %s\njson: %s", render(got), render(c), raw)
			}
		})
	}
}

// Every testdata record survives Decode -> EncodeChange -> Decode.
func TestEncodeChangeTestdataRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, file := range files {
		for i, raw := range splitFile(t, file) {
			c, err := Decode(raw)
			if err != nil {
				continue // mixed_batch holds a bad record on purpose
			}
			enc, err := EncodeChange(c, "", "r")
			if err != nil {
				t.Fatalf("%s[%d]: %v", file, i, err)
			}
			got, err := Decode(enc)
			if err != nil || !equalChange(got, c) {
				t.Errorf("%s[%d]: round trip: %v\n got: %s\nwant: %s", file, i, err, render(got), render(c))
			}
		}
	}
}

func TestEncodeChangeErrors(t *testing.T) {
	keys := Item{"pk": s("a")}
	ok := Change{EventID: "e", Op: Insert, Seq: "1", Keys: keys, New: keys}
	with := func(f func(*Change)) Change {
		c := ok
		f(&c)
		return c
	}
	deep := types.AttributeValue(s("x"))
	for i := 0; i < MaxDepth; i++ {
		deep = &types.AttributeValueMemberL{Value: []types.AttributeValue{deep}}
	}
	tests := []struct {
		name string
		c    Change
		want string
	}{
		{"no event id", with(func(c *Change) { c.EventID = "" }), "encoding record : eventID: missing or empty"},
		{"no op", with(func(c *Change) { c.Op = 0 }), "eventName: operation 0 is not INSERT, MODIFY or REMOVE"},
		{"bad seq", with(func(c *Change) { c.Seq = "12x" }), `encoding record e: dynamodb.SequenceNumber: "12x" is not a decimal number`},
		{"empty seq", with(func(c *Change) { c.Seq = "" }), `dynamodb.SequenceNumber: "" is not a decimal number`},
		{"no keys", with(func(c *Change) { c.Keys = nil }), "dynamodb.Keys: missing or empty"},
		{"negative size", with(func(c *Change) { c.SizeBytes = -1 }), "dynamodb.SizeBytes: -1 is negative"},
		{"ttl insert", with(func(c *Change) { c.TTL = true }), "TTL is set on a INSERT change"},
		{"insert without new", with(func(c *Change) { c.New = nil }), "dynamodb.NewImage: missing"},
		{"insert with old", with(func(c *Change) { c.Old = keys }), "dynamodb.OldImage: not expected with eventName INSERT"},
		{"modify without old", with(func(c *Change) { c.Op = Modify }), "dynamodb.OldImage: missing"},
		{"created before 1970", with(func(c *Change) { c.Created = time.Unix(-1, 0) }), "dynamodb.ApproximateCreationDateTime: "},
		{"nil value", with(func(c *Change) { c.New = Item{"pk": s("a"), "x": nil} }), "dynamodb.NewImage.x: nil attribute value"},
		{"typed nil", with(func(c *Change) { c.New = Item{"pk": s("a"), "x": (*types.AttributeValueMemberM)(nil)} }), "dynamodb.NewImage.x: nil attribute value"},
		{"nil in list", with(func(c *Change) {
			c.New = Item{"pk": s("a"), "x": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), nil}}}
		}), "dynamodb.NewImage.x.L[1]: nil attribute value"},
		{"bad number", with(func(c *Change) {
			c.New = Item{"pk": s("a"), "x": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"y": n("1,5")}}}
		}), `dynamodb.NewImage.x.M.y: N value "1,5" is not a number`},
		{"bad set number", with(func(c *Change) {
			c.New = Item{"pk": s("a"), "x": &types.AttributeValueMemberNS{Value: []string{"1", "x"}}}
		}), `dynamodb.NewImage.x.NS[1]: NS member "x" is not a number`},
		{"null false", with(func(c *Change) { c.New = Item{"pk": s("a"), "x": &types.AttributeValueMemberNULL{}} }), "dynamodb.NewImage.x: NULL value must be true"},
		{"invalid UTF-8 value", with(func(c *Change) { c.New = Item{"pk": s("a\xff")} }), `dynamodb.NewImage.pk: string "a\xff" is not valid UTF-8`},
		{"invalid UTF-8 name", with(func(c *Change) { c.New = Item{"p\xffk": s("a")} }), `is not valid UTF-8`},
		{"invalid UTF-8 set", with(func(c *Change) {
			c.New = Item{"pk": &types.AttributeValueMemberSS{Value: []string{"\xff"}}}
		}), `dynamodb.NewImage.pk.SS[0]: string "\xff" is not valid UTF-8`},
		{"invalid UTF-8 event id", with(func(c *Change) { c.EventID = "\xff" }), `is not valid UTF-8`},
		{"unknown type", with(func(c *Change) { c.New = Item{"pk": &types.UnknownUnionMember{Tag: "X"}} }), "unsupported attribute value type *types.UnknownUnionMember"},
		{"too deep", with(func(c *Change) { c.New = Item{"pk": deep} }), "attribute values nest deeper than 64 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := EncodeChange(tt.c, "arn", "r")
			if err == nil {
				t.Fatalf("no error; encoded %s", raw)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// What a Lambda function receives for a GetRecords record, field by field.
func TestEncodeStreamRecord(t *testing.T) {
	created := time.Unix(1732240800, 0)
	r := streamstypes.Record{
		AwsRegion: aws.String("ddblocal"), EventID: aws.String("ev-1"), EventName: streamstypes.OperationTypeModify,
		EventSource: aws.String("aws:dynamodb"), EventVersion: aws.String("1.1"),
		Dynamodb: &streamstypes.StreamRecord{
			ApproximateCreationDateTime: &created,
			Keys:                        map[string]streamstypes.AttributeValue{"pk": &streamstypes.AttributeValueMemberS{Value: "A"}},
			NewImage: map[string]streamstypes.AttributeValue{
				"pk": &streamstypes.AttributeValueMemberS{Value: "A"},
				"n":  &streamstypes.AttributeValueMemberN{Value: "1.5"},
				"b":  &streamstypes.AttributeValueMemberB{Value: []byte{1, 2}},
				"t":  &streamstypes.AttributeValueMemberBOOL{Value: true},
				"z":  &streamstypes.AttributeValueMemberNULL{Value: true},
				"l": &streamstypes.AttributeValueMemberL{Value: []streamstypes.AttributeValue{
					&streamstypes.AttributeValueMemberM{Value: map[string]streamstypes.AttributeValue{"x": &streamstypes.AttributeValueMemberS{Value: "\"q\""}}},
				}},
				"ss": &streamstypes.AttributeValueMemberSS{Value: []string{"a", "b"}},
				"ns": &streamstypes.AttributeValueMemberNS{Value: []string{"1", "2"}},
				"bs": &streamstypes.AttributeValueMemberBS{Value: [][]byte{{3}}},
			},
			OldImage:       map[string]streamstypes.AttributeValue{"pk": &streamstypes.AttributeValueMemberS{Value: "A"}},
			SequenceNumber: aws.String("000000000000000000042"), SizeBytes: aws.Int64(99),
			StreamViewType: streamstypes.StreamViewTypeNewAndOldImages,
		},
	}
	const arn = "arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/2024-11-22T00:00:00.000"
	raw, err := EncodeStreamRecord(r, arn, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"eventID":"ev-1","eventName":"MODIFY","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"ddblocal",` +
		`"dynamodb":{"ApproximateCreationDateTime":1732240800,"Keys":{"pk":{"S":"A"}},` +
		`"NewImage":{"b":{"B":"AQI="},"bs":{"BS":["Aw=="]},"l":{"L":[{"M":{"x":{"S":"\"q\""}}}]},"n":{"N":"1.5"},"ns":{"NS":["1","2"]},"pk":{"S":"A"},"ss":{"SS":["a","b"]},"t":{"BOOL":true},"z":{"NULL":true}},` +
		`"OldImage":{"pk":{"S":"A"}},"SequenceNumber":"000000000000000000042","SizeBytes":99,"StreamViewType":"NEW_AND_OLD_IMAGES"},` +
		`"eventSourceARN":"` + arn + `"}`
	if string(raw) != want {
		t.Fatalf("got\n%s\nwant\n%s", raw, want)
	}
	c, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c.Op != Modify || c.Seq != "000000000000000000042" || c.TTL || c.Source != arn || !c.Created.Equal(created) || c.SizeBytes != 99 {
		t.Errorf("decoded %s", render(c))
	}
	if got := renderValue(&types.AttributeValueMemberM{Value: c.New}); got != `M {"b": B 0102, "bs": BS [03], "l": L [M {"x": S "\"q\""}], "n": N 1.5, "ns": NS [1 2], "pk": S "A", "ss": SS ["a" "b"], "t": BOOL true, "z": NULL true}` {
		t.Errorf("new image %s", got)
	}

	// A TTL deletion carries userIdentity; the region argument wins over the record's.
	r.EventName = streamstypes.OperationTypeRemove
	r.Dynamodb.NewImage = nil
	r.UserIdentity = &streamstypes.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")}
	raw, err = EncodeStreamRecord(r, arn, "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"awsRegion":"eu-west-1"`) ||
		!strings.Contains(string(raw), `"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}`) {
		t.Errorf("TTL record: %s", raw)
	}
	if c, err := Decode(raw); err != nil || !c.TTL || c.Op != Remove {
		t.Errorf("TTL record decoded to %+v, %v", c, err)
	}
}

func TestEncodeStreamRecordErrors(t *testing.T) {
	rec := func(v streamstypes.AttributeValue) streamstypes.Record {
		return streamstypes.Record{EventID: aws.String("ev"), Dynamodb: &streamstypes.StreamRecord{
			Keys: map[string]streamstypes.AttributeValue{"pk": &streamstypes.AttributeValueMemberS{Value: "a"}},
			NewImage: map[string]streamstypes.AttributeValue{"x": &streamstypes.AttributeValueMemberL{
				Value: []streamstypes.AttributeValue{v}}},
		}}
	}
	tests := []struct {
		name string
		r    streamstypes.Record
		want string
	}{
		{"no stream record", streamstypes.Record{EventID: aws.String("ev")}, "encoding record ev: no dynamodb stream record"},
		{"nil value", rec(nil), "encoding record ev: dynamodb.NewImage.x.L[0]: nil attribute value"},
		{"typed nil", rec((*streamstypes.AttributeValueMemberS)(nil)), "dynamodb.NewImage.x.L[0]: nil attribute value"},
		{"unknown type", rec(&streamstypes.UnknownUnionMember{Tag: "X"}), "unsupported attribute value type *types.UnknownUnionMember"},
		{"invalid UTF-8", rec(&streamstypes.AttributeValueMemberS{Value: "\xff"}), "is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := EncodeStreamRecord(tt.r, "arn", "r"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestEncodeEvent(t *testing.T) {
	if got := string(EncodeEvent(nil)); got != `{"Records":[]}` {
		t.Errorf("empty: %s", got)
	}
	payload := EncodeEvent([]json.RawMessage{json.RawMessage(`{"a":1}`), nil, json.RawMessage(`2`)})
	if string(payload) != `{"Records":[{"a":1},null,2]}` {
		t.Fatalf("got %s", payload)
	}
	recs, err := SplitEvent(payload)
	if err != nil || len(recs) != 3 || string(recs[1]) != "null" {
		t.Fatalf("split: %q, %v", recs, err)
	}
}

// The encoders write what aws-lambda-go reads, and Decode reads what aws-lambda-go writes.
func TestLambdaGoCompatibility(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, file := range files {
		for i, raw := range splitFile(t, file) {
			want, err := Decode(raw)
			if err != nil {
				continue
			}
			enc, err := EncodeChange(want, "", "us-east-1")
			if err != nil {
				t.Fatal(err)
			}
			var ev events.DynamoDBEventRecord
			if err := json.Unmarshal(enc, &ev); err != nil {
				t.Fatalf("%s[%d]: aws-lambda-go cannot read EncodeChange output: %v\n%s", file, i, err, enc)
			}
			if ev.EventID != want.EventID || ev.EventName != want.Op.String() || ev.Change.SequenceNumber != want.Seq ||
				ev.EventSourceArn != want.Source || (ev.UserIdentity != nil) != want.TTL ||
				ev.Change.ApproximateCreationDateTime.Unix() != want.Created.Unix() || len(ev.Change.Keys) != len(want.Keys) {
				t.Errorf("%s[%d]: aws-lambda-go read %+v", file, i, ev)
			}
			// And back: aws-lambda-go's own marshalling (fractional epoch seconds, its field order).
			again, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(again)
			if err != nil {
				t.Fatalf("%s[%d]: Decode of aws-lambda-go JSON: %v\n%s", file, i, err, again)
			}
			// aws-lambda-go goes through float64 seconds: sub-microsecond digits are lost.
			if d := got.Created.Sub(want.Created); d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("%s[%d]: Created %v via aws-lambda-go, want %v", file, i, got.Created, want.Created)
			}
			got.Created = want.Created
			if !equalChange(got, want) {
				t.Errorf("%s[%d]: via aws-lambda-go:\n got: %s\nwant: %s", file, i, render(got), render(want))
			}
		}
	}
}

func equalChange(a, b Change) bool {
	if !a.Created.Equal(b.Created) {
		return false
	}
	a.Created, b.Created = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}
