package record

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// The well-formed testdata events: what each record must decode to in brief; the
// .golden file next to each holds the full decoded form.
func TestDecodeTestdata(t *testing.T) {
	tests := []struct {
		file string
		want []string // per record: "OP seq ttl=..." or "error: <fragment>"
	}{
		{"comment_insert.json", []string{"INSERT 4421584500000000017450439091 ttl=false"}},
		{"user_modify.json", []string{"MODIFY 4421584600000000017450439170 ttl=false"}},
		{"comment_remove.json", []string{"REMOVE 4421584700000000017450439322 ttl=false"}},
		{"ttl_remove.json", []string{
			"REMOVE 4421584800000000017450439400 ttl=true",
			"REMOVE 4421584800000000017450439401 ttl=false", // Service, but not DynamoDB
		}},
		{"all_types.json", []string{
			"INSERT 4421584900000000017450439500 ttl=false",
			"MODIFY 4421584900000000017450439600 ttl=false",
		}},
		{"lambda_go_order.json", []string{"INSERT 000000000000000000001 ttl=false"}},
		{"concurrent_remove.json", []string{ // the second delete of one item found it gone
			"REMOVE 000000000000000000085 ttl=false",
			"REMOVE 000000000000000000086 ttl=false",
		}},
		{"mixed_batch.json", []string{
			"INSERT 4421584500000000017450439091 ttl=false",
			`error: record bad-1: dynamodb.NewImage.body: N value "many" is not a number`,
			"INSERT 4421584500000000017450439092 ttl=false",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			records := splitFile(t, filepath.Join("testdata", tt.file))
			if len(records) != len(tt.want) {
				t.Fatalf("%d records, want %d", len(records), len(tt.want))
			}
			var golden strings.Builder
			for i, raw := range records {
				c, err := Decode(raw)
				var got string
				if err != nil {
					got = "error: " + err.Error()
					fmt.Fprintf(&golden, "# record %d\n%s\n", i, got)
				} else {
					got = fmt.Sprintf("%s %s ttl=%t", c.Op, c.Seq, c.TTL)
					fmt.Fprintf(&golden, "# record %d\n%s", i, render(c))
				}
				if !strings.Contains(got, tt.want[i]) {
					t.Errorf("record %d: got %q, want %q", i, got, tt.want[i])
				}
			}
			checkGolden(t, filepath.Join("testdata", strings.TrimSuffix(tt.file, ".json")+".golden"), golden.String())
		})
	}
}

// Every file in testdata/malformed is one bad record; the error must say what and where.
func TestDecodeMalformed(t *testing.T) {
	tests := map[string]string{
		"event_name_unknown":       `record c81e728d9d4c2f636f067f89cc14862c: eventName: "UPSERT" is not INSERT, MODIFY or REMOVE`,
		"event_name_missing":       `eventName: missing or empty`,
		"event_id_missing":         `record <no eventID>: eventID: missing or empty`,
		"seq_missing":              `dynamodb.SequenceNumber: missing or empty`,
		"seq_not_digits":           `dynamodb.SequenceNumber: "4421584500000000017450439091x" is not a decimal number`,
		"seq_number_type":          `dynamodb.SequenceNumber: must be a string of digits, found a number`,
		"keys_missing":             `dynamodb.Keys: missing`,
		"keys_empty":               `dynamodb.Keys: empty`,
		"insert_without_new_image": `dynamodb.NewImage: missing (eventName INSERT, StreamViewType KEYS_ONLY; Denorm needs NEW_AND_OLD_IMAGES)`,
		"modify_without_old_image": `dynamodb.OldImage: missing (eventName MODIFY, StreamViewType NEW_IMAGE;`,
		"remove_keys_only":         `dynamodb.OldImage: missing (eventName REMOVE, StreamViewType KEYS_ONLY; Denorm needs NEW_AND_OLD_IMAGES)`,
		"remove_with_new_image":    `dynamodb.NewImage: not expected with eventName REMOVE`,
		"insert_with_old_image":    `dynamodb.OldImage: not expected with eventName INSERT`,
		"dynamodb_missing":         `: dynamodb: missing`,
		"dynamodb_not_object":      `dynamodb: must be a JSON object, found an array`,
		"two_types":                `dynamodb.NewImage.body: attribute value has more than one type (S and "N")`,
		"no_type":                  `dynamodb.NewImage.body: attribute value {} has no type`,
		"unknown_type_lowercase":   `dynamodb.NewImage.body: unknown attribute type "s"`,
		"value_not_object":         `dynamodb.NewImage.body: an attribute value must be a JSON object like {"S":"text"}, found a string`,
		"nested_bad_number":        `record c81e728d9d4c2f636f067f89cc14862c: dynamodb.NewImage.tags.L[2]: N value "x" is not a number`,
		"map_bad_number":           `dynamodb.NewImage.profile.M.address.M.zip: N value "12a" is not a number`,
		"number_too_precise":       `dynamodb.NewImage.score: N value "1.23456789012345678901234567890123456789" has more than 38 significant digits`,
		"number_too_large":         `dynamodb.NewImage.score: N value "1E126" is outside DynamoDB's range`,
		"number_too_small":         `N value "-9E-131" is outside DynamoDB's range`,
		"number_not_string":        `dynamodb.NewImage.score: N value must be a string, found a number`,
		"ns_bad_member":            `dynamodb.NewImage.scores.NS[1]: NS member "1,5" is not a number`,
		"ss_not_strings":           `dynamodb.NewImage.tags.SS[1]: SS members must be strings, found a number`,
		"b_not_base64":             `dynamodb.NewImage.avatar: B value is not base64: illegal base64 data at input byte 3`,
		"bs_not_base64":            `dynamodb.NewImage.avatars.BS[1]: BS value is not base64`,
		"null_false":               `dynamodb.NewImage.gone: NULL value must be true`,
		"bool_string":              `dynamodb.NewImage.flag: BOOL value must be true or false, found a string`,
		"s_number":                 `dynamodb.NewImage.body: S value must be a string, found a number`,
		"l_not_array":              `dynamodb.NewImage.tags.L: L value must be a JSON array, found an object`,
		"odd_name_bad_number":      `dynamodb.NewImage["a.b"]: N value "x" is not a number`,
		"image_not_object":         `dynamodb.NewImage: must be a JSON object of attribute values, found an array`,
		"created_string":           `dynamodb.ApproximateCreationDateTime: must be a number of epoch seconds, found a string`,
		"created_millis":           `dynamodb.ApproximateCreationDateTime: 1732240800000 is not epoch seconds between 0 and 100000000000`,
		"size_negative":            `dynamodb.SizeBytes: -5 is not a non-negative whole number`,
		"size_fraction":            `dynamodb.SizeBytes: 1.5 is not a non-negative whole number`,
		"user_identity_string":     `userIdentity: must be a JSON object, found a string`,
		"record_not_object":        `record <no eventID>: a record must be a JSON object, found a string`,
		"too_deep":                 `attribute values nest deeper than 64 levels`,
		"duplicate_field":          `record dup-1: eventName: duplicate field`,
		"duplicate_attribute":      `record dup-2: dynamodb.NewImage.title: duplicate attribute`,
		"event_id_after_error":     `record late-1: dynamodb.Keys.pk: N value "one" is not a number`,
	}
	files, err := filepath.Glob(filepath.Join("testdata", "malformed", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		want, ok := tests[name]
		if !ok {
			t.Errorf("%s has no expected error in this test", file)
			continue
		}
		delete(tests, name)
		t.Run(name, func(t *testing.T) {
			records := splitFile(t, file)
			if len(records) != 1 {
				t.Fatalf("%d records, want 1", len(records))
			}
			c, err := Decode(records[0])
			if err == nil {
				t.Fatalf("decoded without error: %s", render(c))
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error:\n  %s\nwant it to contain:\n  %s", err, want)
			}
		})
	}
	for name := range tests {
		t.Errorf("no testdata/malformed/%s.json", name)
	}
}

// A REMOVE without OldImage (DynamoDB Local: the item was already gone) decodes to a
// change with neither image, unless the stream's view never carries old images; INSERT and
// MODIFY still need theirs.
func TestDecodeRemoveWithoutOldImage(t *testing.T) {
	rec := func(op, view, user, images string) json.RawMessage {
		r := `{"eventID":"e","eventName":"` + op + `","dynamodb":{"Keys":{"pk":{"S":"a"}},` + images + `"SequenceNumber":"7"`
		if view != "" {
			r += `,"StreamViewType":"` + view + `"`
		}
		r += `}` + user + `}`
		return json.RawMessage(r)
	}
	const ttlUser = `,"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}`
	tests := []struct {
		name string
		raw  json.RawMessage
		want string // "" means no error
	}{
		{"new and old images", rec("REMOVE", "NEW_AND_OLD_IMAGES", "", ""), ""},
		{"old image view", rec("REMOVE", "OLD_IMAGE", "", ""), ""},
		{"view not given", rec("REMOVE", "", "", ""), ""},
		{"by TTL", rec("REMOVE", "NEW_AND_OLD_IMAGES", ttlUser, ""), ""},
		{"keys only view", rec("REMOVE", "KEYS_ONLY", "", ""), "dynamodb.OldImage: missing (eventName REMOVE, StreamViewType KEYS_ONLY;"},
		{"new image view", rec("REMOVE", "NEW_IMAGE", "", ""), "dynamodb.OldImage: missing (eventName REMOVE, StreamViewType NEW_IMAGE;"},
		{"with new image", rec("REMOVE", "NEW_AND_OLD_IMAGES", "", `"NewImage":{"pk":{"S":"a"}},`), "dynamodb.NewImage: not expected with eventName REMOVE"},
		{"insert without new image", rec("INSERT", "NEW_AND_OLD_IMAGES", "", ""), "dynamodb.NewImage: missing (eventName INSERT"},
		{"modify without images", rec("MODIFY", "NEW_AND_OLD_IMAGES", "", ""), "dynamodb.NewImage: missing (eventName MODIFY"},
		{"modify without old image", rec("MODIFY", "NEW_AND_OLD_IMAGES", "", `"NewImage":{"pk":{"S":"a"}},`), "dynamodb.OldImage: missing (eventName MODIFY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Decode(tt.raw)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Op != Remove || c.Old != nil || c.New != nil || c.Image() != nil || len(c.Keys) != 1 || c.Seq != "7" {
				t.Fatalf("decoded %s", render(c))
			}
			// EncodeChange writes it back the same (fault injection re-encodes removals).
			enc, err := EncodeChange(c, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if back, err := Decode(enc); err != nil || !equalChange(back, c) {
				t.Fatalf("round trip: %v\n%s", err, enc)
			}
		})
	}
}

// Input that is not JSON, or is at the edges of it.
func TestDecodeJSONSyntax(t *testing.T) {
	valid := `{"eventID":"e","eventName":"INSERT","dynamodb":{"Keys":{"pk":{"S":"a"}},"NewImage":{"pk":{"S":"a"}},"SequenceNumber":"1"}}`
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name, raw, want string // want "" means no error
	}{
		{"minimal", valid, ""},
		{"whitespace", " \t\n" + strings.ReplaceAll(valid, ",", " ,\r\n ") + "\n ", ""},
		{"unknown fields skipped", `{"x":[1,-2.5e-3,true,false,null,{"y":"\u00e9"}],` + valid[1:], ""},
		{"deep unknown field", `{"x":` + deep(1000) + `,` + valid[1:], ""},
		{"too deep unknown field", `{"x":` + deep(maxJSONDepth+1) + `,` + valid[1:], "nested deeper than 10000 levels"},
		{"empty", ``, "record <no eventID>: invalid JSON at byte 0: unexpected end of input"},
		{"null", `null`, "a record must be a JSON object, found null"},
		{"truncated", valid[:40], "invalid JSON at byte 40"},
		{"trailing data", valid + `{}`, "unexpected data after the top-level value"},
		{"trailing comma", `{"eventID":"e",}`, "expected a member name"},
		{"missing colon", `{"eventID" "e"}`, "expected ':'"},
		{"missing comma", `{"eventID":"e" "eventName":"INSERT"}`, "expected ',' or '}'"},
		{"bad literal", `{"x":nul}`, "invalid literal"},
		{"bad number", `{"x":01}`, "expected ',' or '}'"},
		{"bad fraction", `{"x":1.}`, "expected a digit after the decimal point"},
		{"bad exponent", `{"x":1e}`, "expected a digit in the exponent"},
		{"bare minus", `{"x":-}`, "a JSON value, found"},
		{"invalid character", `{"x":@}`, `invalid character '@'`},
		{"control character", "{\"eventID\":\"a\tb\"}", "control character in string"},
		{"invalid UTF-8", "{\"eventID\":\"a\xffb\"}", "invalid UTF-8 in string"},
		{"invalid UTF-8 after escape", "{\"eventID\":\"\\n\xff\"}", "invalid UTF-8 in string"},
		{"bad escape", `{"eventID":"esc-1","dynamodb":{"Keys":{"pk":{"S":"a\qb"}}}}`, `record esc-1: dynamodb.Keys.pk: invalid JSON at byte 52: invalid escape "\\q"`},
		{"short unicode escape", `{"eventID":"\u12"}`, `invalid \u escape`},
		{"unterminated string", `{"eventID":"abc`, "unexpected end of input in string"},
		{"unterminated escape", `{"eventID":"abc\`, "unexpected end of input in string"},
		{"eventID number", `{"eventID":7}`, "eventID: must be a string, found a number"},
		{"lone surrogate kept as U+FFFD", strings.Replace(valid, `"S":"a"}},"New`, `"S":"\ud800x"}},"New`, 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(json.RawMessage(tt.raw))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("no error, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// Escapes decode as encoding/json decodes them.
func TestDecodeStringEscapes(t *testing.T) {
	for _, lit := range []string{
		`"plain"`, `""`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"é中😀"`,
		`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`, `"a\u0000b"`, `"\uD83D\uDE00"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		raw := `{"eventID":` + lit + `,"eventName":"INSERT","dynamodb":{"Keys":{"k":{"S":` + lit + `}},"NewImage":{"k":{"S":"x"}},"SequenceNumber":"1"}}`
		c, err := Decode(json.RawMessage(raw))
		if lit == `""` {
			if err == nil || !strings.Contains(err.Error(), "eventID: missing or empty") {
				t.Errorf("empty eventID: err = %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		if got := c.Keys["k"].(*types.AttributeValueMemberS).Value; got != want || c.EventID != want {
			t.Errorf("%s: got %q and %q, want %q", lit, c.EventID, got, want)
		}
	}
}

func TestDecodeCreated(t *testing.T) {
	tests := []struct {
		raw  string
		want time.Time
	}{
		{"1480642020", time.Unix(1480642020, 0)},
		{"1480642020.5", time.Unix(1480642020, 5e8)},
		{"1480642020.123456789", time.Unix(1480642020, 123456789)},
		{"1480642020.1234567899", time.Unix(1480642020, 123456789)}, // beyond ns: truncated
		{"1.48064202e9", time.Unix(1480642020, 0)},
		{"0", time.Unix(0, 0)},
		{"null", time.Time{}},
	}
	for _, tt := range tests {
		raw := `{"eventID":"e","eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":` + tt.raw +
			`,"Keys":{"k":{"S":"a"}},"NewImage":{"k":{"S":"a"}},"SequenceNumber":"1"}}`
		c, err := Decode(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", tt.raw, err)
		}
		if !c.Created.Equal(tt.want) || (!c.Created.IsZero() && c.Created.Location() != time.UTC) {
			t.Errorf("%s: Created = %v, want %v in UTC", tt.raw, c.Created, tt.want)
		}
	}
}

func TestCheckNumber(t *testing.T) {
	valid := []string{
		"0", "-0", "1", "42", "1.5", "-12.5e3", "1E+5", "1e-5", ".5", "5.", "+1", "0.000", "007",
		"1E-130", "-1e-130", "9.9999999999999999999999999999999999999E+125", "0.1e-129",
		"1" + strings.Repeat("0", 120), "12345678901234567890123456789012345678",
		"0.00000000000000000000000000000000000000000012345678901234567890123456789012345678",
		"0e999999999999", "1e00000000000000000000000125",
	}
	invalid := map[string]string{
		"": "not a number", "-": "not a number", ".": "not a number", "e5": "not a number", "1e": "not a number",
		"1e+": "not a number", "1.2.3": "not a number", "0x10": "not a number", " 1": "not a number",
		"1 ": "not a number", "NaN": "not a number", "Infinity": "not a number", "1,5": "not a number",
		"--1": "not a number", "1e5.5": "not a number",
		"123456789012345678901234567890123456789":  "more than 38 significant digits",
		"1.00000000000000000000000000000000000001": "more than 38 significant digits",
		"1e126": "outside", "10e125": "outside", "1e-131": "outside", "0.01e-129": "outside",
		"1e99999999999999999999": "outside", "1e-99999999999999999999": "outside",
	}
	for _, s := range valid {
		if f := checkNumber("N value", s); f != nil {
			t.Errorf("%q: %s", s, f.render())
		}
	}
	for s, want := range invalid {
		f := checkNumber("N value", s)
		if f == nil {
			t.Errorf("%q: accepted", s)
		} else if !strings.Contains(f.msg, want) {
			t.Errorf("%q: %s, want %q", s, f.msg, want)
		}
	}
}

func TestSplitEvent(t *testing.T) {
	tests := []struct {
		name, payload string
		want          []string // records; nil with err
		err           string
	}{
		{"empty records", `{"Records":[]}`, []string{}, ""},
		{"raw slices", ` { "other" : {"a":[1]}, "Records" : [ {"a": 1} , 2 ,"x", null ] , "z":0} `,
			[]string{`{"a": 1}`, `2`, `"x"`, `null`}, ""},
		{"empty", ``, nil, "splitting event: invalid JSON at byte 0: unexpected end of input"},
		{"not an object", `[]`, nil, "an event must be a JSON object, found an array"},
		{"no Records", `{"records":[]}`, nil, "no Records array"},
		{"Records null", `{"Records":null}`, nil, "Records: must be a JSON array, found null"},
		{"Records object", `{"Records":{}}`, nil, "Records: must be a JSON array, found an object"},
		{"bad element", `{"Records":[{"a":1},{"b":}]}`, nil, "Records[1]: invalid JSON at byte 25: invalid character '}'"},
		{"trailing comma", `{"Records":[1,]}`, nil, "Records[1]: invalid JSON"},
		{"duplicate", `{"Records":[],"Records":[]}`, nil, "Records: duplicate field"},
		{"trailing data", `{"Records":[]}]`, nil, "unexpected data after the top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SplitEvent([]byte(tt.payload))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotS []string
			for _, r := range got {
				gotS = append(gotS, string(r))
			}
			if len(gotS) != len(tt.want) || (len(gotS) > 0 && !slices.Equal(gotS, tt.want)) {
				t.Fatalf("records %q, want %q", gotS, tt.want)
			}
		})
	}
}

// A record's raw slice cannot be appended into the next record's bytes.
func TestSplitEventCapsRecords(t *testing.T) {
	payload := []byte(`{"Records":[1,2]}`)
	recs, err := SplitEvent(payload)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(recs[0], 'x')
	if string(payload) != `{"Records":[1,2]}` {
		t.Fatalf("payload changed to %s", payload)
	}
}

func TestDecodeErrorPath(t *testing.T) {
	f := failf("bad")
	for i := 0; i < 40; i++ {
		f = f.at(0).in("L")
	}
	f = f.attr("deep").in("NewImage").in("dynamodb")
	p := f.path()
	if !strings.HasPrefix(p, "dynamodb.NewImage.deep.L[0]") || !strings.Contains(p, "…") || !strings.HasSuffix(p, "L[0]") {
		t.Errorf("path %q", p)
	}
	if n := strings.Count(p, "L"); n > maxPathSegs {
		t.Errorf("path has %d list segments, want it shortened: %q", n, p)
	}
	e := &DecodeError{EventID: "x", Path: "a.b", Msg: "m", Err: errors.New("cause")}
	if e.Error() != "record x: a.b: m: cause" || errors.Unwrap(e).Error() != "cause" {
		t.Errorf("Error() = %q", e.Error())
	}
}

func splitFile(t testing.TB, path string) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	records, err := SplitEvent(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return records
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("decoded output differs from %s (rerun with -update if the change is intended):\n%s", path, got)
	}
}

// render prints a Change in a stable, readable form for golden files.
func render(c Change) string {
	var b strings.Builder
	created := "-"
	if !c.Created.IsZero() {
		created = c.Created.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(&b, "%s id=%s seq=%s ttl=%t size=%d created=%s\n", c.Op, c.EventID, c.Seq, c.TTL, c.SizeBytes, created)
	fmt.Fprintf(&b, "source=%s\n", c.Source)
	for _, im := range []struct {
		name string
		item Item
	}{{"keys", c.Keys}, {"new", c.New}, {"old", c.Old}} {
		if im.item == nil {
			fmt.Fprintf(&b, "%s: -\n", im.name)
			continue
		}
		fmt.Fprintf(&b, "%s:\n", im.name)
		for _, k := range sortedKeys(im.item) {
			fmt.Fprintf(&b, "  %s = %s\n", strconv.Quote(k), renderValue(im.item[k]))
		}
	}
	return b.String()
}

func renderValue(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S " + strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return "N " + v.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B %x", v.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL %t", v.Value)
	case *types.AttributeValueMemberNULL:
		return fmt.Sprintf("NULL %t", v.Value)
	case *types.AttributeValueMemberL:
		var parts []string
		for _, x := range v.Value {
			parts = append(parts, renderValue(x))
		}
		return "L [" + strings.Join(parts, ", ") + "]"
	case *types.AttributeValueMemberM:
		var parts []string
		for _, k := range sortedKeys(v.Value) {
			parts = append(parts, strconv.Quote(k)+": "+renderValue(v.Value[k]))
		}
		return "M {" + strings.Join(parts, ", ") + "}"
	case *types.AttributeValueMemberSS:
		return fmt.Sprintf("SS %q", v.Value)
	case *types.AttributeValueMemberNS:
		return fmt.Sprintf("NS %v", v.Value)
	case *types.AttributeValueMemberBS:
		return fmt.Sprintf("BS %x", v.Value)
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]types.AttributeValue) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
