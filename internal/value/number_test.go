package value

import "testing"

func TestNumberArithmetic(t *testing.T) {
	cases := []struct {
		a, b string
		sum  string
	}{
		{"1", "2", "3"},
		{"1.5", "-0.5", "1"},
		{"0.1", "0.2", "0.3"},
		{"9223372036854775807", "1", "9223372036854775808"},
		{"-9223372036854775808", "-1", "-9223372036854775809"},
		{"1e3", "1", "1001"},
		{"123456789012345678901234567890", "1", "123456789012345678901234567891"},
	}
	for _, c := range cases {
		a, err := ParseNumber(c.a)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ParseNumber(c.b)
		if got := a.Add(b).String(); got != c.sum {
			t.Errorf("%s + %s = %s, want %s", c.a, c.b, got, c.sum)
		}
		if got := a.Add(b).Sub(b).Sub(a); !got.IsZero() {
			t.Errorf("%s + %s - %s - %s = %s, want 0", c.a, c.b, c.b, c.a, got)
		}
	}
	if _, err := ParseNumber("x1"); err == nil {
		t.Error("ParseNumber accepted x1")
	}
	if Int(0).Neg().String() != "0" || Int(5).Neg().String() != "-5" {
		t.Error("Neg is wrong")
	}
}
