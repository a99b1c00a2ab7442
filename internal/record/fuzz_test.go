package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts is JSON, means
// what encoding/json says it means, and survives EncodeChange.
//
//	make fuzz FUZZTIME=60s (or go test ./internal/record -run '^$' -fuzz FuzzDecode -fuzztime 60s -fuzzminimizetime 5s)
func FuzzDecode(f *testing.F) {
	for _, raw := range seedRecords(f) {
		// Compact seeds mutate and minimize faster than indented ones.
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			b.Reset()
			b.Write(raw)
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// Decode reads its input in place; what it returns must not change when the
		// caller reuses the buffer, so the checks below run after it is overwritten.
		buf := bytes.Clone(raw)
		c, err := Decode(buf)
		clear(buf)
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if _, again := Decode(raw); again == nil || again.Error() != err.Error() {
				t.Fatalf("error changed with the input buffer: %q, then %v", err, again)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
		want, err := refDecode(raw)
		if err != nil {
			t.Fatalf("Decode accepted what encoding/json rejects (%v): %q", err, raw)
		}
		// The reference goes through float64, which near 1e11 s resolves only ~15 µs.
		if d := c.Created.Sub(want.Created); d < -time.Millisecond || d > time.Millisecond {
			t.Fatalf("Created %v, encoding/json says %v: %q", c.Created, want.Created, raw)
		}
		want.Created = c.Created
		if !equalChange(c, want) {
			t.Fatalf("Decode and encoding/json disagree on %q:\n%s\n%s", raw, render(c), render(want))
		}
		enc, err := EncodeChange(c, "", "r")
		if err != nil {
			t.Fatalf("EncodeChange of a decoded record: %v", err)
		}
		back, err := Decode(enc)
		if err != nil || !equalChange(back, c) {
			t.Fatalf("round trip: %v\n%s\n%s", err, render(back), render(c))
		}
	})
}

// FuzzSplitEvent checks that SplitEvent never panics and splits only JSON, into the
// records encoding/json finds.
//
//	make fuzz (or go test ./internal/record -run '^$' -fuzz FuzzSplitEvent -fuzztime 60s -fuzzminimizetime 5s)
func FuzzSplitEvent(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{"Records":[]}`, `{"Records":[1,{"a":[]},"x"]}`, `{"x":1,"Records":[null]}`, `{}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		recs, err := SplitEvent(payload)
		if err != nil {
			return
		}
		if !json.Valid(payload) {
			t.Fatalf("accepted invalid JSON %q", payload)
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal(payload, &env); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", payload, err)
		}
		var want []json.RawMessage
		if err := json.Unmarshal(env["Records"], &want); err != nil || want == nil {
			t.Fatalf("encoding/json finds no Records array in %q: %v", payload, err)
		}
		if len(recs) != len(want) {
			t.Fatalf("%d records, encoding/json finds %d in %q", len(recs), len(want), payload)
		}
		for i := range recs {
			if !bytes.Equal(recs[i], bytes.TrimSpace(want[i])) {
				t.Fatalf("record %d is %q, encoding/json says %q", i, recs[i], want[i])
			}
		}
	})
}

// seedRecords returns every record in testdata, well-formed and not.
func seedRecords(tb testing.TB) []json.RawMessage {
	var out []json.RawMessage
	for _, pattern := range []string{"testdata/*.json", "testdata/malformed/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			out = append(out, splitFile(tb, file)...)
		}
	}
	return out
}

// refDecode is an independent decoder built on encoding/json (exact-case keys through
// maps) for records Decode has already accepted: it extracts, it does not validate.
func refDecode(raw []byte) (Change, error) {
	var c Change
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rec); err != nil {
		return c, err
	}
	var op string
	for field, dst := range map[string]*string{"eventID": &c.EventID, "eventName": &op, "eventSourceARN": &c.Source} {
		if v, ok := rec[field]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return c, fmt.Errorf("%s: %w", field, err)
			}
		}
	}
	var ddb map[string]json.RawMessage
	if err := json.Unmarshal(rec["dynamodb"], &ddb); err != nil {
		return c, err
	}
	if err := json.Unmarshal(ddb["SequenceNumber"], &c.Seq); err != nil {
		return c, err
	}
	if v, ok := ddb["SizeBytes"]; ok {
		if err := json.Unmarshal(v, &c.SizeBytes); err != nil {
			return c, err
		}
	}
	if v, ok := ddb["ApproximateCreationDateTime"]; ok && string(v) != "null" {
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return c, err
		}
		sec := int64(f)
		c.Created = time.Unix(sec, int64((f-float64(sec))*1e9)).UTC()
	}
	var err error
	for name, dst := range map[string]*Item{"Keys": &c.Keys, "NewImage": &c.New, "OldImage": &c.Old} {
		if v, ok := ddb[name]; ok {
			if *dst, err = refItem(v); err != nil {
				return c, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	c.Op = map[string]Op{"INSERT": Insert, "MODIFY": Modify, "REMOVE": Remove}[op]
	var user struct {
		Type        *string `json:"type"`
		PrincipalID *string `json:"principalId"`
	}
	if v, ok := rec["userIdentity"]; ok {
		var u map[string]json.RawMessage
		if err := json.Unmarshal(v, &u); err != nil {
			return c, err
		}
		_ = json.Unmarshal(u["type"], &user.Type)
		_ = json.Unmarshal(u["principalId"], &user.PrincipalID)
	}
	c.TTL = c.Op == Remove && user.Type != nil && *user.Type == "Service" &&
		user.PrincipalID != nil && *user.PrincipalID == "dynamodb.amazonaws.com"
	return c, nil
}

func refItem(raw json.RawMessage) (Item, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, err
	}
	out := make(Item, len(m))
	for k, v := range m {
		av, err := refValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func refValue(raw json.RawMessage) (types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("%d type keys", len(m))
	}
	for typ, v := range m {
		var err error
		switch typ {
		case "S", "N":
			var s string
			err = json.Unmarshal(v, &s)
			if typ == "S" {
				return &types.AttributeValueMemberS{Value: s}, err
			}
			return &types.AttributeValueMemberN{Value: s}, err
		case "B":
			var b []byte
			err = json.Unmarshal(v, &b)
			return &types.AttributeValueMemberB{Value: b}, err
		case "BOOL", "NULL":
			var b bool
			err = json.Unmarshal(v, &b)
			if typ == "BOOL" {
				return &types.AttributeValueMemberBOOL{Value: b}, err
			}
			return &types.AttributeValueMemberNULL{Value: b}, err
		case "L":
			var raws []json.RawMessage
			if err = json.Unmarshal(v, &raws); err != nil {
				return nil, err
			}
			l := make([]types.AttributeValue, 0, len(raws))
			for _, r := range raws {
				av, err := refValue(r)
				if err != nil {
					return nil, err
				}
				l = append(l, av)
			}
			return &types.AttributeValueMemberL{Value: l}, nil
		case "M":
			item, err := refItem(v)
			if item == nil && err == nil {
				err = fmt.Errorf("M is null")
			}
			return &types.AttributeValueMemberM{Value: item}, err
		case "SS", "NS":
			ss := []string{}
			err = json.Unmarshal(v, &ss)
			if typ == "SS" {
				return &types.AttributeValueMemberSS{Value: ss}, err
			}
			return &types.AttributeValueMemberNS{Value: ss}, err
		case "BS":
			bs := [][]byte{}
			err = json.Unmarshal(v, &bs)
			return &types.AttributeValueMemberBS{Value: bs}, err
		}
		return nil, fmt.Errorf("type %q", typ)
	}
	return nil, nil
}
