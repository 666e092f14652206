package backoff_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/backoff"
)

func TestCurveString(t *testing.T) {
	tests := []struct {
		c    backoff.Curve
		want string
	}{
		{backoff.CurveLinear, "linear"},
		{backoff.CurveArithmetic, "arithmetic"},
		{backoff.CurveExponential, "exponential"},
		{backoff.CurveGeometric, "geometric"},
		{backoff.Curve(4), "Curve(4)"},
		{backoff.Curve(-1), "Curve(-1)"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("Curve(%d).String() = %q; want %q", int(tt.c), got, tt.want)
		}
	}
}

func TestParseCurve(t *testing.T) {
	tests := []struct {
		in   string
		want backoff.Curve
	}{
		{"linear", backoff.CurveLinear},
		{"arithmetic", backoff.CurveArithmetic},
		{"exponential", backoff.CurveExponential},
		{"geometric", backoff.CurveGeometric},
		{"Exponential", backoff.CurveExponential},
		{"GEOMETRIC", backoff.CurveGeometric},
	}
	for _, tt := range tests {
		got, err := backoff.ParseCurve(tt.in)
		if got != tt.want || err != nil {
			t.Errorf("ParseCurve(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
		}
	}
}

func TestParseCurveUnknown(t *testing.T) {
	for _, in := range []string{"", "fast", " linear", "linear ", "expo", "Curve(1)"} {
		got, err := backoff.ParseCurve(in)
		var fe *backoff.FieldError
		if got != backoff.CurveLinear || !errors.As(err, &fe) {
			t.Errorf("ParseCurve(%q) = %v, %v; want linear, a *FieldError", in, got, err)
			continue
		}
		want := `backoff: Schedule.BackoffFunction is "` + in + `", want linear, arithmetic, exponential or geometric`
		if err.Error() != want {
			t.Errorf("ParseCurve(%q) error = %q; want %q", in, err, want)
		}
	}
}

func TestCurveJSON(t *testing.T) {
	type policy struct {
		BackoffFunction backoff.Curve `json:"backoffFunction"`
	}
	var p policy
	if err := json.Unmarshal([]byte(`{"backoffFunction": "geometric"}`), &p); err != nil {
		t.Fatalf("json.Unmarshal(geometric) error = %v", err)
	}
	if p.BackoffFunction != backoff.CurveGeometric {
		t.Errorf("json.Unmarshal(geometric) = %v; want geometric", p.BackoffFunction)
	}
	out, err := json.Marshal(policy{BackoffFunction: backoff.CurveExponential})
	if err != nil {
		t.Fatalf("json.Marshal(exponential) error = %v", err)
	}
	if diff := cmp.Diff(`{"backoffFunction":"exponential"}`, string(out)); diff != "" {
		t.Errorf("json.Marshal(exponential) mismatch (-want +got):\n%s", diff)
	}
	p = policy{BackoffFunction: backoff.CurveArithmetic}
	if err := json.Unmarshal([]byte(`{"backoffFunction": "steep"}`), &p); err == nil {
		t.Errorf("json.Unmarshal(steep) error = nil; want an error")
	}
	if p.BackoffFunction != backoff.CurveArithmetic {
		t.Errorf("json.Unmarshal(steep) changed the curve to %v; want it unchanged", p.BackoffFunction)
	}
	if _, err := json.Marshal(policy{BackoffFunction: backoff.Curve(9)}); err == nil {
		t.Errorf("json.Marshal(Curve(9)) error = nil; want an error")
	}
}

func FuzzParseCurve(f *testing.F) {
	for _, s := range []string{"", "linear", "ARITHMETIC", "exponentiaL", "geometric", "fast", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := backoff.ParseCurve(s)
		if err != nil {
			var fe *backoff.FieldError
			if c != backoff.CurveLinear || !errors.As(err, &fe) {
				t.Fatalf("ParseCurve(%q) = %v, %v; want linear and a *FieldError", s, c, err)
			}
			return
		}
		if !strings.EqualFold(c.String(), s) {
			t.Fatalf("ParseCurve(%q) = %v; want the curve of that name", s, c)
		}
	})
}
