package keys

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	cases := []struct {
		in   string
		want string // RFC 3339 in UTC; "" for an error
		prec Width
	}{
		{"2026-11-23T21:34:37Z", "2026-11-23T21:34:37Z", Hour},
		{"2026-11-23T21:34:37.123456Z", "2026-11-23T21:34:37.123456Z", Hour},
		{"2026-11-23T21:34:37,5Z", "2026-11-23T21:34:37.5Z", Hour},
		{"2026-11-23T21:34:37+00:00", "2026-11-23T21:34:37Z", Hour},
		{"2026-11-23T21:34:37-00:00", "2026-11-23T21:34:37Z", Hour},
		{"2026-11-23t21:34:37z", "2026-11-23T21:34:37Z", Hour},
		{"2026-11-23 21:34:37", "2026-11-23T21:34:37Z", Hour},               // no zone: UTC
		{"2026-11-23T21:34:37.999999", "2026-11-23T21:34:37.999999Z", Hour}, // Python isoformat
		// Offsets convert to UTC: the local evening of the 23rd is the 24th in UTC.
		{"2026-11-23T23:30:00-05:00", "2026-11-24T04:30:00Z", Hour},
		{"2026-11-24T01:00:00+02:00", "2026-11-23T23:00:00Z", Hour},
		{"2026-11-24T05:29+0530", "2026-11-23T23:59:00Z", Hour},
		{"2026-11-24T05:00+05", "2026-11-24T00:00:00Z", Hour},
		{"2026-11-23T21:34", "2026-11-23T21:34:00Z", Hour},
		{"2026-11-23T21", "2026-11-23T21:00:00Z", Hour},
		{"2026-11-23T21Z", "2026-11-23T21:00:00Z", Hour},
		{"2026-11-23", "2026-11-23T00:00:00Z", Day},
		{"2026-11", "2026-11-01T00:00:00Z", Month},
		{"2026", "2026-01-01T00:00:00Z", Year},
		{"2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999999999Z", Hour}, // a leap second stays in its year
		// Epoch seconds, as a number attribute's text or a string of digits.
		{"1795469677", "2026-11-23T21:34:37Z", Hour},
		{"1795469677.9", "2026-11-23T21:34:37Z", Hour},
		{"1.795469677e9", "2026-11-23T21:34:37Z", Hour},
		{"1795469677E0", "2026-11-23T21:34:37Z", Hour},
		{"0", "1970-01-01T00:00:00Z", Hour},
		{"-0.5", "1969-12-31T23:59:59Z", Hour},
		{"-1", "1969-12-31T23:59:59Z", Hour},
		{"253402300799", "9999-12-31T23:59:59Z", Hour},
		// Not times: they link to no bucket.
		{"", "", 0},
		{"yesterday", "", 0},
		{"1795469677000", "", 0}, // epoch milliseconds
		{"253402300800", "", 0},  // year 10000
		{"1e999", "", 0},
		{"1e", "", 0},
		{".5", "", 0},
		{"2026-13-01", "", 0},
		{"2026-11-31", "", 0},
		{"2026-02-29", "", 0},
		{"2026-11-23T24:00:00Z", "", 0},
		{"2026-11-23T21:34:37+05:30x", "", 0},
		{"2026-11-23T21+05:30", "", 0}, // which UTC hour is it?
		{"2026-11-23Z", "", 0},
		{"20261123T213437Z", "", 0}, // basic format
		{"2026-11-23T", "", 0},
		{"2026-11-23T21:34:37.Z", "", 0},
		{"2026-1-23", "", 0},
		{"0000-01-01T00:30:00+01:00", "", 0}, // before year 0000 in UTC
		{strings.Repeat("9", 65), "", 0},
	}
	for _, c := range cases {
		got, prec, err := ParseTime(c.in)
		if c.want == "" {
			if err == nil || !errors.Is(err, ErrNotTime) {
				t.Errorf("ParseTime(%q) = %v, %v, %v; want an ErrNotTime", c.in, got, prec, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTime(%q): %v", c.in, err)
			continue
		}
		if s := got.Format(time.RFC3339Nano); s != c.want || prec != c.prec || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %s (%v), %v; want %s, %v", c.in, s, got.Location(), prec, c.want, c.prec)
		}
	}
}

func TestWidthBuckets(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)
	for _, c := range []struct {
		w           Width
		bucket, end string
	}{
		{Hour, "2026-12-31T23", "2027-01-01T00:00:00Z"},
		{Day, "2026-12-31", "2027-01-01T00:00:00Z"},
		{Month, "2026-12", "2027-01-01T00:00:00Z"},
		{Year, "2026", "2027-01-01T00:00:00Z"},
	} {
		b := c.w.Bucket(at)
		if b != c.bucket {
			t.Errorf("%s bucket of %s = %q, want %q", c.w, at, b, c.bucket)
		}
		start, err := c.w.Start(b)
		if err != nil {
			t.Fatal(err)
		}
		if end := c.w.End(start).Format(time.RFC3339); end != c.end {
			t.Errorf("%s bucket %s ends %s, want %s", c.w, b, end, c.end)
		}
		if w, ok := ParseWidth(c.w.String()); !ok || w != c.w {
			t.Errorf("ParseWidth(%q) = %v, %v", c.w.String(), w, ok)
		}
	}
	// Bucket renders in UTC whatever the time's location.
	ny := time.FixedZone("EST", -5*3600)
	if got := Day.Bucket(time.Date(2026, 11, 23, 22, 0, 0, 0, ny)); got != "2026-11-24" {
		t.Errorf("day of 22:00 EST on the 23rd = %s, want 2026-11-24", got)
	}
	for _, bad := range []string{"2026-11-31", "2026-11-23Z", "2026-1-23", "26-11-23", ""} {
		if _, err := Day.Start(bad); err == nil {
			t.Errorf("Day.Start(%q) succeeded", bad)
		}
	}
	// February of a leap year.
	start, _ := Month.Start("2028-02")
	if got := Month.End(start).Sub(start); got != 29*24*time.Hour {
		t.Errorf("2028-02 lasts %v, want 29 days", got)
	}
}

func TestBucketTemplates(t *testing.T) {
	get := func(v string) Lookup {
		return func(n string) (string, bool) { return v, n == "createdAt" }
	}
	cases := []struct {
		tmpl, value, want string
	}{
		{"DAY#{createdAt:day}", "2026-11-23T21:34:37Z", "DAY#2026-11-23"},
		{"HOUR#{createdAt:hour}", "2026-11-23T21:34:37.5Z", "HOUR#2026-11-23T21"},
		{"MONTH#{createdAt:month}", "1795469677", "MONTH#2026-11"},
		{"YEAR#{createdAt:year}", "2026-11-23T21:34:37+00:00", "YEAR#2026"},
		{"DAY#{createdAt:day}", "2026-11-23T23:30:00-05:00", "DAY#2026-11-24"},
		{"POST#p1#DAY#{createdAt:day}", "2026-11-23", "POST#p1#DAY#2026-11-23"},
		// A coarser bucket from a finer one: the bucket values of other templates work.
		{"MONTH#{createdAt:month}", "2026-11-23", "MONTH#2026-11"},
		{"YEAR#{createdAt:year}", "2026", "YEAR#2026"},
	}
	for _, c := range cases {
		got, err := MustParse(c.tmpl).Render(get(c.value))
		if err != nil || got != c.want {
			t.Errorf("%q with %q = %q, %v; want %q", c.tmpl, c.value, got, err, c.want)
		}
	}
	// Not a time, or not precise enough: no value, so the item links to no bucket.
	for _, c := range []struct{ tmpl, value string }{
		{"DAY#{createdAt:day}", "yesterday"},
		{"DAY#{createdAt:day}", "a#b"},
		{"DAY#{createdAt:day}", "2026-11"},
		{"HOUR#{createdAt:hour}", "2026-11-23"},
		{"DAY#{createdAt:day}", "1795469677000"},
	} {
		_, err := MustParse(c.tmpl).Render(get(c.value))
		if !errors.Is(err, ErrNoValue) || !errors.Is(err, ErrNotTime) {
			t.Errorf("%q with %q: err = %v, want ErrNoValue and ErrNotTime", c.tmpl, c.value, err)
		}
	}
	if _, err := MustParse("DAY#{createdAt:day}").Render(func(string) (string, bool) { return "", false }); !errors.Is(err, ErrNoValue) || errors.Is(err, ErrNotTime) {
		t.Errorf("missing variable: err = %v, want ErrNoValue only", err)
	}

	// Matching accepts exactly the rendered buckets of the width.
	tm := MustParse("POST#{postId}#DAY#{createdAt:day}")
	if vars, ok := tm.Match("POST#p1#DAY#2026-11-23", nil); !ok || fmt.Sprint(vars) != "[postId p1 createdAt 2026-11-23]" {
		t.Errorf("Match = %v, %v", vars, ok)
	}
	for _, k := range []string{"POST#p1#DAY#2026-11-31", "POST#p1#DAY#2026-11", "POST#p1#DAY#2026-11-23T21", "POST#p1#DAY#x"} {
		if _, ok := tm.Match(k, nil); ok {
			t.Errorf("%q matched %q", tm, k)
		}
	}
	if p := tm.Parts()[3]; p.Var != "createdAt" || p.Bucket != Day || p.Pad != 0 {
		t.Errorf("part = %+v, want createdAt with a day bucket", p)
	}
}

func TestBucketParseErrors(t *testing.T) {
	for _, c := range []struct{ src, frag string }{
		{"DAY#{createdAt:week}", `"week" is not a time bucket: use hour, day, month or year`},
		{"DAY#{createdAt:Day}", "did you mean {createdAt:day}?"},
		{"DAY#{createdAt:daily}", "did you mean {createdAt:day}?"},
		{"DAY#{createdAt:hours}", "did you mean {createdAt:hour}?"},
		{"DAY#{createdAt:}", "must be a number from 1 to 38 (or hour, day, month or year"},
		{"DAY#{createdAt:0}", "must be a number from 1 to 38"},
		{"DAY#{createdAt:day}#{createdAt:month}", "appears twice"},
	} {
		_, err := Parse(c.src)
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("Parse(%q) = %v, want %q", c.src, err, c.frag)
		}
	}
}

// FuzzParseTime: never panics; a time it reads renders, in every bucket it is precise
// enough for, a bucket that reads back as the same bucket.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-23T21:34:37Z", "2026-11-23T21:34:37.123+05:30", "1795469677", "-1.5e3", "2026", "2026-11", "2026-11-23", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tm, prec, err := ParseTime(v)
		if err != nil {
			if !errors.Is(err, ErrNotTime) {
				t.Fatalf("ParseTime(%q): %v is no ErrNotTime", v, err)
			}
			return
		}
		for _, w := range Widths {
			if w < prec {
				continue
			}
			b := w.Bucket(tm)
			back, p2, err := ParseTime(b)
			if err != nil || w.Bucket(back) != b || p2 > w {
				t.Fatalf("%q: %s bucket %q reads back as %v, %v, %v", v, w, b, back, p2, err)
			}
		}
	})
}
