package keys

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Width is the size of a time bucket: "{createdAt:day}" renders the UTC day of the
// timestamp in createdAt, so every item of one day renders the same key. The zero Width is
// no bucket. Widths are ordered from the finest (Hour) to the coarsest (Year).
type Width uint8

// Bucket widths.
const (
	Hour Width = iota + 1
	Day
	Month
	Year
)

// Widths is every bucket width, finest first.
var Widths = []Width{Hour, Day, Month, Year}

// layouts are the rendered forms: ISO-8601 reduced precision, so buckets sort in time
// order as strings and a bucket reads as the period it is.
var layouts = [...]string{Hour: "2006-01-02T15", Day: "2006-01-02", Month: "2006-01", Year: "2006"}

var widthNames = [...]string{Hour: "hour", Day: "day", Month: "month", Year: "year"}

// String returns the width's name as written in templates ("day").
func (w Width) String() string {
	if w >= Hour && w <= Year {
		return widthNames[w]
	}
	return fmt.Sprintf("Width(%d)", uint8(w))
}

// Layout returns the width's rendered form as a Go time layout ("2006-01-02" for Day).
func (w Width) Layout() string { return layouts[w] }

// ParseWidth returns the width named s ("hour", "day", "month", "year").
func ParseWidth(s string) (Width, bool) {
	for _, w := range Widths {
		if widthNames[w] == s {
			return w, true
		}
	}
	return 0, false
}

// widthHint suggests the width a misspelt one means ("Day", "days", "daily"), or "".
func widthHint(s string) string {
	l := strings.ToLower(s)
	for _, w := range Widths {
		n := widthNames[w]
		if l == n || l == n+"s" || l == n+"ly" || (w == Day && l == "daily") {
			return n
		}
	}
	return ""
}

// Bucket renders the bucket of width w that holds t, in UTC.
func (w Width) Bucket(t time.Time) string {
	var buf [16]byte
	return string(w.AppendBucket(buf[:0], t))
}

// AppendBucket appends the bucket of width w that holds t, in UTC, to b: Bucket without
// an allocation of its own, for the key renderer on every record's path. Years are
// 0000 to 9999 (ParseTime refuses others).
func (w Width) AppendBucket(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, m, d := t.Date()
	b = appendDigits(b, y, 4)
	if w <= Month {
		b = appendDigits(append(b, '-'), int(m), 2)
	}
	if w <= Day {
		b = appendDigits(append(b, '-'), d, 2)
	}
	if w == Hour {
		b = appendDigits(append(b, 'T'), t.Hour(), 2)
	}
	return b
}

// appendDigits appends n, zero-padded to width digits (n is not negative).
func appendDigits(b []byte, n, width int) []byte {
	var d [4]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[:width]...)
}

// Start parses a rendered bucket of width w and returns the instant it begins. Only the
// exact rendered form is accepted: "2026-11-23" is a day, "2026-11-31" or "2026-11-23Z"
// is nothing.
func (w Width) Start(bucket string) (time.Time, error) {
	if w < Hour || w > Year {
		return time.Time{}, fmt.Errorf("no bucket width %d", uint8(w))
	}
	// Read by hand, not by time.Parse: every record of a bucketed rule's sources goes
	// through here (Template.Match, CompiledRule.Expiry), and time.Parse allocates.
	bad := func() (time.Time, error) {
		return time.Time{}, fmt.Errorf("%q is not a %s bucket (%s)", bucket, w, layouts[w])
	}
	if len(bucket) != len(layouts[w]) {
		return bad()
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(bucket[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day, hour := num(0, 4), 1, 1, 0
	if year < 0 {
		return bad()
	}
	if w <= Month {
		if month = num(5, 2); bucket[4] != '-' || month < 1 || month > 12 {
			return bad()
		}
	}
	if w <= Day {
		last := time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
		if day = num(8, 2); bucket[7] != '-' || day < 1 || day > last {
			return bad()
		}
	}
	if w == Hour {
		if hour = num(11, 2); bucket[10] != 'T' || hour < 0 || hour > 23 {
			return bad()
		}
	}
	return time.Date(year, time.Month(month), day, hour, 0, 0, 0, time.UTC), nil
}

// End returns the instant after the bucket that starts at start: the start of the next one.
func (w Width) End(start time.Time) time.Time {
	switch w {
	case Hour:
		return start.Add(time.Hour)
	case Day:
		return start.AddDate(0, 0, 1)
	case Month:
		return start.AddDate(0, 1, 0)
	default:
		return start.AddDate(1, 0, 0)
	}
}

// ErrNotTime is returned (wrapped) by ParseTime, and by Render for a bucket variable whose
// value is not a time (or not precise enough for the bucket). Render's error wraps
// ErrNoValue too: such an item links to no bucket, like an item without the variable.
var ErrNotTime = errors.New("not a time")

// Years a bucket can render: four digits.
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// ParseTime reads a timestamp the way bucket variables do and returns the instant in UTC
// and its precision: the finest width whose bucket the value determines.
//
//   - A number in decimal notation ("1764000000", "1764000000.25", "1.764e9"), as DynamoDB
//     writes a number attribute or as a string of digits, is epoch seconds (precision Hour).
//     Exactly four digits ("2026") are a year instead: the form year buckets render.
//   - Otherwise ISO 8601 in extended format: "2026-11", "2026-11-23",
//     "2026-11-23T21", "2026-11-23T21:34", "2026-11-23T21:34:37" with optional fractional
//     seconds ("." or ","), 'T', 't' or a space between date and time, and an optional zone:
//     "Z", "+00:00", "-05:00", "+0530" or "+05". An offset converts the time to UTC
//     ("2026-11-23T23:30:00-05:00" is 2026-11-24T04:30Z); a time without a zone is read as
//     UTC. A leap second (":60") counts as the second before it.
//
// Years are 0000 to 9999. Epoch milliseconds are out of that range and not read as seconds.
func ParseTime(v string) (time.Time, Width, error) {
	if len(v) == 0 || len(v) > 64 {
		return time.Time{}, 0, fmt.Errorf("%w: %q", ErrNotTime, v)
	}
	if len(v) == 4 && isDigits(v) {
		t, _ := Year.Start(v)
		return t, Year, nil
	}
	if t, ok, err := parseEpoch(v); ok {
		return t, Hour, err
	}
	t, w, err := parseISO(v)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("%w: %q: %v", ErrNotTime, v, err)
	}
	return t, w, nil
}

// parseEpoch reads a decimal number as epoch seconds, rounded down to the second. ok is
// false when v is not a number at all (then it may be ISO 8601).
func parseEpoch(v string) (t time.Time, ok bool, err error) {
	s := v
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, expS, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expS, hasExp = s[:i], s[i+1:], true
	}
	intPart, frac, hasPoint := strings.Cut(mant, ".")
	if intPart+frac == "" || (intPart != "" && !isDigits(intPart)) || (frac != "" && !isDigits(frac)) || (hasPoint && intPart == "") {
		return time.Time{}, false, nil
	}
	exp := 0
	if hasExp {
		e := strings.TrimPrefix(expS, "+")
		eneg := strings.HasPrefix(e, "-")
		e = strings.TrimPrefix(e, "-")
		if !isDigits(e) {
			return time.Time{}, true, fmt.Errorf("%w: %q: not a number", ErrNotTime, v)
		}
		if len(e) > 3 {
			return time.Time{}, true, errEpochRange(v)
		}
		for _, c := range e {
			exp = exp*10 + int(c-'0')
		}
		if eneg {
			exp = -exp
		}
	}
	// The value is 0.digits x 10^point.
	all := intPart + frac
	digits := strings.TrimLeft(all, "0")
	point := len(intPart) - (len(all) - len(digits)) + exp
	whole, fracNonZero := "", false
	switch {
	case digits == "":
	case point <= 0:
		fracNonZero = true
	case point >= len(digits):
		if point > 13 {
			return time.Time{}, true, errEpochRange(v)
		}
		whole = digits + strings.Repeat("0", point-len(digits))
	default:
		whole = digits[:point]
		fracNonZero = strings.Trim(digits[point:], "0") != ""
	}
	if len(whole) > 12 {
		return time.Time{}, true, errEpochRange(v)
	}
	var sec int64
	for _, c := range whole {
		sec = sec*10 + int64(c-'0')
	}
	if neg {
		sec = -sec
		if fracNonZero {
			sec-- // round down, toward the earlier second
		}
	}
	t = time.Unix(sec, 0).UTC()
	if t.Before(minTime) || !t.Before(maxTime) {
		return time.Time{}, true, errEpochRange(v)
	}
	return t, true, nil
}

// errEpochRange is parseEpoch's error for a number of seconds outside years 0000 to 9999.
func errEpochRange(v string) error {
	return fmt.Errorf("%w: %q: epoch seconds out of range (years 0000 to 9999; epoch milliseconds are not read as seconds)", ErrNotTime, v)
}

// parseISO reads ISO 8601 extended format, reduced precision allowed (see ParseTime).
func parseISO(v string) (time.Time, Width, error) {
	p := isoReader{s: v}
	year := p.num(4)
	if !p.lit('-') {
		return time.Time{}, 0, errors.New("want YYYY-MM, YYYY-MM-DD or an ISO 8601 date and time, or epoch seconds")
	}
	month := p.num(2)
	day, hour, minute, sec, nsec := 1, 0, 0, 0, 0
	w := Month
	if p.lit('-') {
		day, w = p.num(2), Day
		if p.lit('T') || p.lit('t') || p.lit(' ') {
			hour, w = p.num(2), Hour
			hasMinutes := false
			if p.lit(':') {
				minute, hasMinutes = p.num(2), true
				if p.lit(':') {
					sec = p.num(2)
					if p.lit('.') || p.lit(',') {
						nsec = p.fraction()
					}
				}
			}
			if err := p.zone(hasMinutes); err != nil {
				return time.Time{}, 0, err
			}
		}
	}
	if p.bad || p.i != len(p.s) {
		return time.Time{}, 0, errors.New("want YYYY-MM, YYYY-MM-DD or an ISO 8601 date and time, or epoch seconds")
	}
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, 0, errors.New("a field is out of range")
	}
	if sec == 60 {
		sec, nsec = 59, 999999999 // a leap second belongs to the minute it ends
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day {
		return time.Time{}, 0, fmt.Errorf("%04d-%02d has no day %d", year, month, day)
	}
	t = t.Add(-p.offset)
	if t.Before(minTime) || !t.Before(maxTime) {
		return time.Time{}, 0, errors.New("out of range: years 0000 to 9999 in UTC")
	}
	return t, w, nil
}

// isoReader reads fixed-width fields; bad records the first malformed one.
type isoReader struct {
	s      string
	i      int
	bad    bool
	offset time.Duration
}

func (p *isoReader) num(width int) int {
	if p.i+width > len(p.s) || !isDigits(p.s[p.i:p.i+width]) {
		p.bad = true
		return 0
	}
	n := 0
	for _, c := range p.s[p.i : p.i+width] {
		n = n*10 + int(c-'0')
	}
	p.i += width
	return n
}

func (p *isoReader) lit(c byte) bool {
	if !p.bad && p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// fraction reads fractional seconds (at least one digit) as nanoseconds.
func (p *isoReader) fraction() int {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	digits := p.s[start:p.i]
	if digits == "" {
		p.bad = true
		return 0
	}
	digits = (digits + "000000000")[:9]
	n := 0
	for _, c := range digits {
		n = n*10 + int(c-'0')
	}
	return n
}

// zone reads an optional zone designator. A numeric offset needs the minutes of the time:
// "21+05:30" does not say which UTC hour it is.
func (p *isoReader) zone(hasMinutes bool) error {
	if p.bad || p.i == len(p.s) {
		return nil
	}
	switch p.s[p.i] {
	case 'Z', 'z':
		p.i++
		return nil
	case '+', '-':
	default:
		p.bad = true
		return nil
	}
	sign := time.Duration(1)
	if p.s[p.i] == '-' {
		sign = -1
	}
	p.i++
	h := p.num(2)
	m := 0
	if p.lit(':') || (p.i < len(p.s) && !p.bad) {
		m = p.num(2)
	}
	if p.bad || h > 23 || m > 59 {
		p.bad = true
		return nil
	}
	if (h != 0 || m != 0) && !hasMinutes {
		return errors.New("a time with a zone offset needs its minutes (hh:mm)")
	}
	p.offset = sign * (time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
	return nil
}
