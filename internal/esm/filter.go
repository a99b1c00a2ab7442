package esm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Filter is a compiled set of Lambda event filtering patterns. It supports the subset Denorm
// needs: exact values, {"prefix":...}, {"anything-but":[...]} (or one value),
// {"anything-but":{"prefix":...}}, {"exists":bool} and nested objects. A record passes when
// any pattern matches it; a nil Filter passes everything.
type Filter struct {
	patterns []fieldSet
}

// fieldSet is one pattern object: every field must match (AND).
type fieldSet []field

type field struct {
	name     string
	nested   fieldSet  // set when the pattern nests an object
	matchers []matcher // otherwise: any matcher may match (OR)
}

type matchKind uint8

const (
	matchExact matchKind = iota + 1
	matchPrefix
	matchAnythingBut       // not any of values
	matchAnythingButPrefix // a string without the prefix
	matchExists
)

type matcher struct {
	kind   matchKind
	values []any // exact and anything-but values: string, json.Number, bool or nil
	prefix string
	exists bool
}

// CompileFilter parses Lambda FilterCriteria patterns. Errors name the pattern by index and
// the field's path.
func CompileFilter(patterns []string) (*Filter, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	f := &Filter{}
	var errs []error
	for i, p := range patterns {
		var obj map[string]any
		if err := decodeJSON([]byte(p), &obj); err != nil || obj == nil {
			errs = append(errs, fmt.Errorf("esm: filter pattern %d is not a JSON object: %q", i, p))
			continue
		}
		fs, err := compileFields(obj, "")
		if err != nil {
			errs = append(errs, fmt.Errorf("esm: filter pattern %d: %w", i, err))
			continue
		}
		f.patterns = append(f.patterns, fs)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

func compileFields(obj map[string]any, path string) (fieldSet, error) {
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names) // deterministic error order
	var fs fieldSet
	var errs []error
	for _, name := range names {
		p := path + "." + name
		switch v := obj[name].(type) {
		case map[string]any:
			nested, err := compileFields(v, p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			fs = append(fs, field{name: name, nested: nested})
		case []any:
			if len(v) == 0 {
				errs = append(errs, fmt.Errorf("%s: empty list matches nothing", p[1:]))
				continue
			}
			var ms []matcher
			for _, e := range v {
				m, err := compileMatcher(e)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", p[1:], err))
					continue
				}
				ms = append(ms, m)
			}
			fs = append(fs, field{name: name, matchers: ms})
		default:
			errs = append(errs, fmt.Errorf("%s: want a list of values or matchers, or an object, got %v", p[1:], v))
		}
	}
	return fs, errors.Join(errs...)
}

func compileMatcher(e any) (matcher, error) {
	obj, ok := e.(map[string]any)
	if !ok {
		if _, isList := e.([]any); isList {
			return matcher{}, errors.New("nested lists are not allowed")
		}
		return matcher{kind: matchExact, values: []any{e}}, nil
	}
	if len(obj) != 1 {
		return matcher{}, fmt.Errorf("a matcher object has exactly one key, got %d", len(obj))
	}
	var op string
	var arg any
	for k, v := range obj { // the only key
		op, arg = k, v
	}
	switch op {
	case "prefix":
		s, ok := arg.(string)
		if !ok {
			return matcher{}, fmt.Errorf("prefix wants a string, got %v", arg)
		}
		return matcher{kind: matchPrefix, prefix: s}, nil
	case "exists":
		b, ok := arg.(bool)
		if !ok {
			return matcher{}, fmt.Errorf("exists wants true or false, got %v", arg)
		}
		return matcher{kind: matchExists, exists: b}, nil
	case "anything-but":
		switch a := arg.(type) {
		case []any:
			for _, v := range a {
				if !isScalar(v) {
					return matcher{}, fmt.Errorf("anything-but list holds %v, want strings, numbers, booleans or null", v)
				}
			}
			return matcher{kind: matchAnythingBut, values: a}, nil
		case map[string]any:
			s, ok := a["prefix"].(string)
			if len(a) != 1 || !ok {
				return matcher{}, fmt.Errorf("anything-but object supports only {\"prefix\": string}, got %v", a)
			}
			return matcher{kind: matchAnythingButPrefix, prefix: s}, nil
		default:
			return matcher{kind: matchAnythingBut, values: []any{a}}, nil
		}
	}
	return matcher{}, fmt.Errorf("matcher %q is not supported locally (supported: exact values, prefix, anything-but, exists)", op)
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, json.Number, bool, nil:
		return true
	}
	return false
}

// Match reports whether the record (one element of the event's Records, as JSON) passes.
func (f *Filter) Match(record json.RawMessage) (bool, error) {
	if f == nil {
		return true, nil
	}
	var obj map[string]any
	if err := decodeJSON(record, &obj); err != nil {
		return false, fmt.Errorf("esm: filtering a record that is not a JSON object: %w", err)
	}
	for _, p := range f.patterns {
		if p.match(obj) {
			return true, nil
		}
	}
	return false, nil
}

func (fs fieldSet) match(obj map[string]any) bool {
	for _, f := range fs {
		v, present := obj[f.name] // a nil obj (missing parent) has no fields
		if f.nested != nil {
			child, _ := v.(map[string]any)
			if !f.nested.match(child) {
				return false
			}
			continue
		}
		leaves := leafValues(v, present)
		ok := false
		for _, m := range f.matchers {
			if m.match(present, leaves) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// leafValues returns the scalar values a matcher compares: the value itself, or the
// elements of a list. Objects are not leaves, so no matcher but exists:false sees them.
func leafValues(v any, present bool) []any {
	if !present {
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		return nil
	case []any:
		var out []any
		for _, e := range x {
			if isScalar(e) {
				out = append(out, e)
			}
		}
		return out
	}
	return []any{v}
}

func (m matcher) match(present bool, leaves []any) bool {
	switch m.kind {
	case matchExists:
		if m.exists {
			return len(leaves) > 0
		}
		return !present
	case matchExact:
		for _, l := range leaves {
			if equalValue(l, m.values[0]) {
				return true
			}
		}
	case matchPrefix:
		for _, l := range leaves {
			if s, ok := l.(string); ok && strings.HasPrefix(s, m.prefix) {
				return true
			}
		}
	case matchAnythingBut:
		for _, l := range leaves {
			excluded := false
			for _, v := range m.values {
				if equalValue(l, v) {
					excluded = true
					break
				}
			}
			if !excluded {
				return true
			}
		}
	case matchAnythingButPrefix:
		for _, l := range leaves {
			if s, ok := l.(string); ok && !strings.HasPrefix(s, m.prefix) {
				return true
			}
		}
	}
	return false
}

// equalValue compares JSON scalars; numbers by value, so 5 matches 5.0.
func equalValue(a, b any) bool {
	an, aNum := a.(json.Number)
	bn, bNum := b.(json.Number)
	if aNum || bNum {
		if !aNum || !bNum {
			return false
		}
		if an == bn {
			return true
		}
		af, err1 := an.Float64()
		bf, err2 := bn.Float64()
		return err1 == nil && err2 == nil && af == bf
	}
	return a == b
}

// decodeJSON decodes keeping numbers exact: sequence-number-like values exceed float64.
func decodeJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after JSON value")
	}
	return nil
}
