package hostpattern

import (
	"strings"
	"testing"
)

// TestMayFoldFindsEveryFoldableByte: whatever its length and wherever
// the byte stands, mayFold finds an upper-case ASCII letter or a non-ASCII
// byte, and nothing else, also where it reads eight bytes at a time.
func TestMayFoldFindsEveryFoldableByte(t *testing.T) {
	for n := 0; n <= 24; n++ {
		plain := strings.Repeat("a", n)
		if mayFold(plain) {
			t.Fatalf("mayFold(%q) = true; want false", plain)
		}
		for i := 0; i < n; i++ {
			for c := 0; c < 256; c++ {
				b := []byte(plain)
				b[i] = byte(c)
				want := 'A' <= c && c <= 'Z' || c >= 0x80
				if got := mayFold(string(b)); got != want {
					t.Fatalf("mayFold(%q) = %v; want %v", b, got, want)
				}
			}
		}
	}
}
