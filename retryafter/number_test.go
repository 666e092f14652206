package retryafter_test

import (
	"math"
	"testing"

	"github.com/retrytransport/retrytransport/retryafter"
)

func TestParseUint(t *testing.T) {
	tests := []struct {
		v    string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"007", 7, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", math.MaxInt64, true},
		{"99999999999999999999999", math.MaxInt64, true},
		{"99999999999999999999999x", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{" 1", 0, false},
	}
	for _, tt := range tests {
		got, ok := retryafter.ParseUint(tt.v)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseUint(%q) = %d, %t; want %d, %t", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseFixed(t *testing.T) {
	tests := []struct {
		v       string
		n, frac int64
		ok      bool
	}{
		{"12", 12, 0, true},
		{"12.5", 12, 500_000_000, true},
		{"0.000000001", 0, 1, true},
		{"1.1234567899", 1, 123_456_789, true}, // the tenth digit is below a nanosecond
		{"1.000", 1, 0, true},
		{"99999999999999999999.5", math.MaxInt64, 500_000_000, true},
		{"1.", 0, 0, false},
		{".5", 0, 0, false},
		{".", 0, 0, false},
		{"", 0, 0, false},
		{"1.2.3", 0, 0, false},
		{"-1.5", 0, 0, false},
		{"1.5e3", 0, 0, false},
		{"1,5", 0, 0, false},
	}
	for _, tt := range tests {
		n, frac, ok := retryafter.ParseFixed(tt.v)
		if n != tt.n || frac != tt.frac || ok != tt.ok {
			t.Errorf("parseFixed(%q) = %d, %d, %t; want %d, %d, %t", tt.v, n, frac, ok, tt.n, tt.frac, tt.ok)
		}
	}
}
