package esm

import (
	"encoding/json"
	"strings"
	"testing"
)

// rec is a record as the event carries it, trimmed to what the patterns look at.
const rec = `{"eventName":"INSERT","awsRegion":"us-east-1","dynamodb":{"Keys":{"pk":{"S":"USER#1"},"sk":{"S":"PROFILE"}},
	"NewImage":{"pk":{"S":"USER#1"},"n":{"N":"5"},"tags":{"SS":["a","b"]},"nil":{"NULL":true}},"SizeBytes":42},
	"flag":true,"count":7,"nothing":null,"list":["x","y"]}`

func TestFilterMatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patterns []string
		want     bool
	}{
		{"no patterns pass everything", nil, true},
		{"exact string", []string{`{"eventName":["INSERT"]}`}, true},
		{"exact string, other value", []string{`{"eventName":["REMOVE"]}`}, false},
		{"one of several values", []string{`{"eventName":["MODIFY","INSERT"]}`}, true},
		{"nested exact", []string{`{"dynamodb":{"Keys":{"pk":{"S":["USER#1"]}}}}`}, true},
		{"nested, missing field", []string{`{"dynamodb":{"Keys":{"gsi1pk":{"S":["USER#1"]}}}}`}, false},
		{"prefix", []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"USER#"}]}}}}`}, true},
		{"prefix, no match", []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"_dn"}]}}}}`}, false},
		{"anything-but prefix", []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"anything-but":{"prefix":"_dn"}}]}}}}`}, true},
		{"anything-but prefix, excluded", []string{`{"dynamodb":{"Keys":{"pk":{"S":[{"anything-but":{"prefix":"USER"}}]}}}}`}, false},
		{"anything-but list", []string{`{"eventName":[{"anything-but":["REMOVE","MODIFY"]}]}`}, true},
		{"anything-but list, excluded", []string{`{"eventName":[{"anything-but":["INSERT"]}]}`}, false},
		{"anything-but one value", []string{`{"eventName":[{"anything-but":"INSERT"}]}`}, false},
		{"anything-but needs the field", []string{`{"missing":[{"anything-but":["x"]}]}`}, false},
		{"exists true", []string{`{"dynamodb":{"NewImage":{"n":{"N":[{"exists":true}]}}}}`}, true},
		{"exists true, missing", []string{`{"dynamodb":{"OldImage":{"n":{"N":[{"exists":true}]}}}}`}, false},
		{"exists false, missing", []string{`{"dynamodb":{"OldImage":[{"exists":false}]}}`}, true},
		{"exists false, present", []string{`{"eventName":[{"exists":false}]}`}, false},
		{"exists true on an object is not a leaf", []string{`{"dynamodb":{"Keys":[{"exists":true}]}}`}, false},
		{"number compares by value", []string{`{"count":[7.0]}`}, true},
		{"number is not its string", []string{`{"count":["7"]}`}, false},
		{"DynamoDB numbers are strings", []string{`{"dynamodb":{"NewImage":{"n":{"N":["5"]}}}}`}, true},
		{"boolean", []string{`{"flag":[true]}`}, true},
		{"null", []string{`{"nothing":[null]}`}, true},
		{"list value matches any element", []string{`{"list":["y"]}`}, true},
		{"set value matches any element", []string{`{"dynamodb":{"NewImage":{"tags":{"SS":[{"prefix":"b"}]}}}}`}, true},
		{"all fields must match", []string{`{"eventName":["INSERT"],"awsRegion":["eu-west-1"]}`}, false},
		{"any pattern may match", []string{`{"eventName":["REMOVE"]}`, `{"awsRegion":["us-east-1"]}`}, true},
		{"reserved items out, jobs in (rules' filters)", []string{
			`{"dynamodb":{"Keys":{"pk":{"S":[{"anything-but":{"prefix":"_dn"}}]}}}}`,
			`{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"_dn#job#"}]}}}}`,
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := CompileFilter(tc.patterns)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Match(json.RawMessage(rec))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Match = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilterReservedPrefix(t *testing.T) {
	f, err := CompileFilter([]string{
		`{"dynamodb":{"Keys":{"pk":{"S":[{"anything-but":{"prefix":"_dn"}}]}}}}`,
		`{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"_dn#job#"}]}}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	for pk, want := range map[string]bool{"USER#1": true, "_dn#marker#e1": false, "_dn#job#42": true, "_dnx": false, "": true} {
		r := `{"dynamodb":{"Keys":{"pk":{"S":` + strings.ReplaceAll(`"PK"`, "PK", pk) + `}}}}`
		if got, _ := f.Match(json.RawMessage(r)); got != want {
			t.Errorf("pk %q: Match = %v, want %v", pk, got, want)
		}
	}
}

func TestCompileFilterErrors(t *testing.T) {
	for _, tc := range []struct {
		pattern, want string
	}{
		{`not json`, "not a JSON object"},
		{`["a"]`, "not a JSON object"},
		{`{"a":"x"}`, "a: want a list"},
		{`{"a":[]}`, "a: empty list"},
		{`{"a":{"b":[{"suffix":"x"}]}}`, `a.b: matcher "suffix" is not supported`},
		{`{"a":[{"prefix":1}]}`, "prefix wants a string"},
		{`{"a":[{"exists":"yes"}]}`, "exists wants true or false"},
		{`{"a":[{"anything-but":{"suffix":"x"}}]}`, "anything-but object supports only"},
		{`{"a":[{"anything-but":[{"prefix":"x"}]}]}`, "anything-but list holds"},
		{`{"a":[{"prefix":"x","exists":true}]}`, "exactly one key"},
		{`{"a":[["x"]]}`, "nested lists"},
	} {
		_, err := CompileFilter([]string{`{"ok":["x"]}`, tc.pattern})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pattern 1") {
			t.Errorf("%s: error %v, want one about pattern 1 containing %q", tc.pattern, err, tc.want)
		}
	}
}

func FuzzFilter(f *testing.F) {
	f.Add(`{"dynamodb":{"Keys":{"pk":{"S":[{"anything-but":{"prefix":"_dn"}}]}}}}`, rec)
	f.Add(`{"a":[{"exists":false}],"b":[1,"x",null,true]}`, `{"a":{"b":[1,{"c":2}]}}`)
	f.Fuzz(func(t *testing.T, pattern, record string) {
		fl, err := CompileFilter([]string{pattern})
		if err != nil {
			return
		}
		_, _ = fl.Match(json.RawMessage(record)) // must not panic
	})
}
