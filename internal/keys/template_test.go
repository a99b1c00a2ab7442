package keys

import (
	"strings"
	"testing"
)

func TestMatchAndRender(t *testing.T) {
	cases := []struct {
		tmpl, key string
		ok        bool
		vars      map[string]string
	}{
		{"USER#{userId}", "USER#u1", true, map[string]string{"userId": "u1"}},
		{"USER#{userId}", "USER#", false, nil},
		{"USER#{userId}", "USER#u1#x", false, nil},
		{"PROFILE", "PROFILE", true, map[string]string{}},
		{"PROFILE", "PROFILEX", false, nil},
		{"COMMENT#{createdAt}#{commentId}", "COMMENT#2025-01-02T10:00:00Z#c1", true, map[string]string{"createdAt": "2025-01-02T10:00:00Z", "commentId": "c1"}},
		{"COMMENT#{createdAt}#{commentId}", "COMMENT#2025#", false, nil},
		{"V{n:8}", "V00000042", true, map[string]string{"n": "00000042"}},
		{"V{n:8}", "Vabc", false, nil},
		{"{tenant}#ORDER#{orderId}", "acme#ORDER#9", true, map[string]string{"tenant": "acme", "orderId": "9"}},
	}
	for _, c := range cases {
		tm := MustParse(c.tmpl)
		got, ok := tm.Match(c.key, nil)
		if ok != c.ok {
			t.Errorf("%q.Match(%q) = %v, want %v", c.tmpl, c.key, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		m := map[string]string{}
		for i := 0; i < len(got); i += 2 {
			m[got[i]] = got[i+1]
		}
		for k, v := range c.vars {
			if m[k] != v {
				t.Errorf("%q.Match(%q)[%s] = %q, want %q", c.tmpl, c.key, k, m[k], v)
			}
		}
		// Whatever matched renders back to the same key (widths already applied).
		back, err := tm.Render(func(n string) (string, bool) { v, ok := m[n]; return v, ok })
		if err != nil || back != c.key {
			t.Errorf("%q.Render = %q, %v; want %q", c.tmpl, back, err, c.key)
		}
	}
}

func TestRenderPadsNumbersSoTheySort(t *testing.T) {
	tm := MustParse("PRIORITY#{p:6}")
	var keys []string
	for _, v := range []string{"9", "10", "100", "007"} {
		k, err := tm.Render(func(string) (string, bool) { return v, true })
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	want := []string{"PRIORITY#000009", "PRIORITY#000010", "PRIORITY#000100", "PRIORITY#000007"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("rendered %v, want %v", keys, want)
	}
	if _, err := tm.Render(func(string) (string, bool) { return "1.5", true }); err == nil {
		t.Error("a fraction rendered into a zero-padded segment")
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{"USER#{", "USER#}", "{a}{b}", "{a}x", "{1a}", "{a:0}", "{a:x}", "{a}#{a}", "{}"} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", src)
		}
	}
}

func TestRenderRejectsSeparatorInValue(t *testing.T) {
	_, err := MustParse("USER#{id}").Render(func(string) (string, bool) { return "a#b", true })
	if err == nil || !strings.Contains(err.Error(), "contains '#'") {
		t.Errorf("err = %v, want a message about '#'", err)
	}
}

func TestMayOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"USER#{u}", "USER#{v}", true},
		{"USER#{u}", "POST#{p}", false},
		{"PROFILE", "POST#{p}", false},
		{"GROUP#{g}", "POST#{p}", false},
		{"{t}#X", "A#X", true},
		{"COMMENT#{a}#{b}", "COMMENT#{a}", false},
		{"PROFILE", "{x}", true},
	}
	for _, c := range cases {
		if got := MayOverlap(MustParse(c.a), MustParse(c.b)); got != c.want {
			t.Errorf("MayOverlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// FuzzTemplate: parsing, matching and rendering never panic, and whatever a template
// matches renders back to the same key.
func FuzzTemplate(f *testing.F) {
	for _, s := range [][2]string{{"USER#{userId}", "USER#u1"}, {"COMMENT#{a}#{b}", "COMMENT#x#y"}, {"V{n:8}", "V00000001"}, {"{t}#X", "a#X"}, {"DAY#{d:day}#{h:hour}", "DAY#2026-11-23#2026-11-23T21"}, {"Y{y:year}", "Y2026"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, tmpl, key string) {
		tm, err := Parse(tmpl)
		if err != nil {
			return
		}
		_ = tm.Prefix()
		vars, ok := tm.Match(key, nil)
		if !ok {
			return
		}
		m := map[string]string{}
		for i := 0; i < len(vars); i += 2 {
			m[vars[i]] = vars[i+1]
		}
		back, err := tm.Render(func(n string) (string, bool) { v, ok := m[n]; return v, ok })
		if err != nil {
			t.Fatalf("%q matched %q but does not render back: %v", tmpl, key, err)
		}
		if back != key && !hasPad(tm) {
			t.Fatalf("%q matched %q but renders %q", tmpl, key, back)
		}
	})
}

func hasPad(t *Template) bool {
	for _, p := range t.Parts() {
		if p.Pad > 0 {
			return true
		}
	}
	return false
}
