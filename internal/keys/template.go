// Package keys parses and evaluates key templates such as "COMMENT#{createdAt}#{commentId}".
//
// A template is literal text with variables in braces. A variable captures one or more
// characters other than '#', the segment separator of single-table designs, so matching is
// unambiguous and linear. "{n:8}" renders a number zero-padded to 8 digits so that numeric
// segments sort as numbers (seed 003); matching accepts any digits there. "{createdAt:day}"
// renders the UTC day of a timestamp (a time bucket: hour, day, month or year); matching
// accepts a well-formed bucket of that width there.
package keys

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sep separates key segments; variable values never contain it.
const Sep = '#'

// Part is a literal run or a variable of a template.
type Part struct {
	Literal string // set for literal parts
	Var     string // set for variables
	Pad     int    // zero-pad width for numeric variables, 0 for none
	Bucket  Width  // time bucket of the variable's timestamp, 0 for none
}

// Template is a parsed key template. It is immutable and safe for concurrent use.
type Template struct {
	src   string
	parts []Part
	vars  []string
}

// ErrSyntax is returned (wrapped) for malformed templates.
var ErrSyntax = errors.New("key template syntax")

// ErrNoValue is returned (wrapped) by Render when a variable has no value: the item does not
// carry the attribute that links it (a parent removed, a sparse index key absent).
var ErrNoValue = errors.New("no value for")

// Parse parses a template. Variables are [A-Za-z_][A-Za-z0-9_]* with an optional ":N" (a
// zero-pad width, digits) or ":hour", ":day", ":month", ":year" (a time bucket, letters).
// Two variables may not touch (nothing would tell where one ends), and a literal may follow a
// variable only if it starts with '#'.
func Parse(src string) (*Template, error) {
	t := &Template{src: src}
	seen := map[string]bool{}
	lit := strings.Builder{}
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case '{':
			end := strings.IndexByte(src[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("%w: %q: unclosed '{' at offset %d", ErrSyntax, src, i)
			}
			body := src[i+1 : i+end]
			name, pad, bucket, err := parseVar(body)
			if err != nil {
				return nil, fmt.Errorf("%w: %q: %v", ErrSyntax, src, err)
			}
			if seen[name] {
				return nil, fmt.Errorf("%w: %q: variable {%s} appears twice", ErrSyntax, src, name)
			}
			seen[name] = true
			if lit.Len() > 0 {
				t.parts = append(t.parts, Part{Literal: lit.String()})
				lit.Reset()
			}
			if n := len(t.parts); n > 0 && t.parts[n-1].Var != "" {
				return nil, fmt.Errorf("%w: %q: variables {%s} and {%s} touch; put a '#' between them", ErrSyntax, src, t.parts[n-1].Var, name)
			}
			t.parts = append(t.parts, Part{Var: name, Pad: pad, Bucket: bucket})
			t.vars = append(t.vars, name)
			i += end + 1
		case '}':
			return nil, fmt.Errorf("%w: %q: unexpected '}' at offset %d", ErrSyntax, src, i)
		default:
			if n := len(t.parts); lit.Len() == 0 && n > 0 && t.parts[n-1].Var != "" && c != Sep {
				return nil, fmt.Errorf("%w: %q: text after {%s} must start with '#'", ErrSyntax, src, t.parts[n-1].Var)
			}
			lit.WriteByte(c)
			i++
		}
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, Part{Literal: lit.String()})
	}
	return t, nil
}

func parseVar(body string) (string, int, Width, error) {
	name, opt, hasOpt := strings.Cut(body, ":")
	if name == "" {
		return "", 0, 0, fmt.Errorf("empty variable name")
	}
	for i, r := range name {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return "", 0, 0, fmt.Errorf("variable name %q: use letters, digits and '_'", name)
		}
	}
	if !hasOpt {
		return name, 0, 0, nil
	}
	// Digits are a zero-pad width, a word a bucket width: the two cannot be confused.
	if w, ok := ParseWidth(opt); ok {
		return name, 0, w, nil
	}
	if opt != "" && !isDigits(opt) {
		hint := ""
		if h := widthHint(opt); h != "" {
			hint = fmt.Sprintf(" (did you mean {%s:%s}?)", name, h)
		}
		return "", 0, 0, fmt.Errorf("variable {%s}: %q is not a time bucket%s: use hour, day, month or year (or a number from 1 to 38 to zero-pad)", body, opt, hint)
	}
	n, err := strconv.Atoi(opt)
	if err != nil || n < 1 || n > 38 {
		return "", 0, 0, fmt.Errorf("variable {%s}: width %q must be a number from 1 to 38 (or hour, day, month or year for a time bucket)", body, opt)
	}
	return name, n, 0, nil
}

// MustParse is Parse for templates known to be valid (tests, examples).
func MustParse(src string) *Template {
	t, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the template's source.
func (t *Template) String() string { return t.src }

// Parts returns the template's parts; callers must not modify them.
func (t *Template) Parts() []Part { return t.parts }

// Vars returns the variable names in order of appearance.
func (t *Template) Vars() []string { return t.vars }

// IsLiteral reports whether the template has no variables.
func (t *Template) IsLiteral() bool { return len(t.vars) == 0 }

// Prefix returns the literal text before the first variable: what every matching key starts
// with (the whole key for a literal template). Queries use it with begins_with.
func (t *Template) Prefix() string {
	if len(t.parts) > 0 && t.parts[0].Var == "" {
		return t.parts[0].Literal
	}
	return ""
}

// Match reports whether s matches the template and appends the captured values to dst as
// name/value pairs (dst[2i] name, dst[2i+1] value). It does not allocate beyond dst's growth.
func (t *Template) Match(s string, dst []string) ([]string, bool) {
	pos := 0
	for i, p := range t.parts {
		if p.Var == "" {
			if !strings.HasPrefix(s[pos:], p.Literal) {
				return dst, false
			}
			pos += len(p.Literal)
			continue
		}
		// A variable runs to the next '#' (or the end); the parser guarantees what follows a
		// variable is a literal starting with '#' or nothing.
		end := strings.IndexByte(s[pos:], Sep)
		if end < 0 {
			end = len(s) - pos
		}
		if end == 0 {
			return dst, false
		}
		v := s[pos : pos+end]
		if p.Pad > 0 && !isDigits(v) {
			return dst, false
		}
		if p.Bucket != 0 {
			if _, err := p.Bucket.Start(v); err != nil {
				return dst, false
			}
		}
		dst = append(dst, p.Var, v)
		pos += end
		_ = i
	}
	return dst, pos == len(s)
}

// Lookup resolves a variable name to its value.
type Lookup func(name string) (string, bool)

// Render builds the key from variable values. It fails, naming the variable, when one is
// missing, empty, contains '#', or is not a whole number where a width is given. A bucket
// variable renders the bucket of its value (see ParseTime); a value that is not a time, or
// not as precise as the bucket, fails with an error wrapping both ErrNoValue and ErrNotTime:
// the item links to no bucket, as if it lacked the variable.
func (t *Template) Render(get Lookup) (string, error) {
	if len(t.parts) == 1 && t.parts[0].Var == "" {
		return t.parts[0].Literal, nil
	}
	var b strings.Builder
	b.Grow(len(t.src) + 16) // one allocation for typical keys
	for _, p := range t.parts {
		if p.Var == "" {
			b.WriteString(p.Literal)
			continue
		}
		v, ok := get(p.Var)
		if !ok || v == "" {
			return "", fmt.Errorf("key %q: %w {%s}", t.src, ErrNoValue, p.Var)
		}
		if p.Bucket != 0 {
			bt, prec, err := ParseTime(v)
			if err == nil && prec > p.Bucket {
				err = fmt.Errorf("%w: %q names a %s, not a %s", ErrNotTime, v, prec, p.Bucket)
			}
			if err != nil {
				return "", fmt.Errorf("key %q: %w {%s:%s}: %w", t.src, ErrNoValue, p.Var, p.Bucket, err)
			}
			var buf [16]byte
			b.Write(p.Bucket.AppendBucket(buf[:0], bt))
			continue
		}
		if strings.IndexByte(v, Sep) >= 0 {
			return "", fmt.Errorf("key %q: value %q of {%s} contains '#'", t.src, v, p.Var)
		}
		if p.Pad > 0 {
			if !isDigits(v) {
				return "", fmt.Errorf("key %q: value %q of {%s} is not a whole non-negative number", t.src, v, p.Var)
			}
			v = strings.TrimLeft(v, "0")
			if len(v) < p.Pad {
				b.WriteString(strings.Repeat("0", p.Pad-len(v)))
			}
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// MayOverlap reports whether some key could match both templates. Literal segments must be
// equal; a segment holding a variable matches any segment its literal parts allow. It is
// exact for templates whose variables fill whole '#'-separated segments and conservative
// (it may say true) otherwise.
func MayOverlap(a, b *Template) bool {
	sa, sb := segments(a), segments(b)
	if len(sa) != len(sb) {
		return false
	}
	for i := range sa {
		if !segOverlap(sa[i], sb[i]) {
			return false
		}
	}
	return true
}

// segments splits a template's source on '#'; variables never contain '#', so each segment
// of a matching key corresponds to one template segment.
func segments(t *Template) []string { return strings.Split(t.src, string(Sep)) }

func segOverlap(x, y string) bool {
	xv, yv := strings.Contains(x, "{"), strings.Contains(y, "{")
	switch {
	case !xv && !yv:
		return x == y
	case xv && !yv:
		return segMatches(x, y)
	case !xv && yv:
		return segMatches(y, x)
	default:
		px, py := x[:strings.IndexByte(x, '{')], y[:strings.IndexByte(y, '{')]
		return strings.HasPrefix(px, py) || strings.HasPrefix(py, px)
	}
}

// segMatches reports whether literal segment lit can match template segment tmpl.
func segMatches(tmpl, lit string) bool {
	t, err := Parse(tmpl)
	if err != nil {
		return true
	}
	_, ok := t.Match(lit, nil)
	return ok
}
