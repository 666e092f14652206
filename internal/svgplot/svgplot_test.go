package svgplot_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrytransport/retrytransport/internal/svgplot"
)

func TestEscape(t *testing.T) {
	const in, want = `a <b> & "c" it's`, `a &lt;b&gt; &amp; "c" it's`
	if got := svgplot.Escape(in); got != want {
		t.Errorf("Escape(%q) = %q; want %q", in, got, want)
	}
}

func TestDashAttr(t *testing.T) {
	if got := svgplot.DashAttr(""); got != "" {
		t.Errorf(`DashAttr("") = %q; want ""`, got)
	}
	if got, want := svgplot.DashAttr("5 3"), ` stroke-dasharray="5 3"`; got != want {
		t.Errorf("DashAttr(%q) = %q; want %q", "5 3", got, want)
	}
}

// failAfter accepts n writes and fails the rest.
type failAfter struct {
	n     int
	calls int
}

var errWrite = errors.New("write failed")

func (f *failAfter) Write(p []byte) (int, error) {
	f.calls++
	if f.calls > f.n {
		return 0, errWrite
	}
	return len(p), nil
}

func TestPrinter(t *testing.T) {
	var b strings.Builder
	p := &svgplot.Printer{W: &b}
	p.Printf("<g id=%q>", "r0c1")
	p.Printf("</g>\n")
	if got, want := b.String(), "<g id=\"r0c1\"></g>\n"; got != want || p.Err != nil {
		t.Errorf("Printer wrote %q, Err %v; want %q, nil", got, p.Err, want)
	}

	w := &failAfter{n: 1}
	p = &svgplot.Printer{W: w}
	for range 3 {
		p.Printf("x")
	}
	if !errors.Is(p.Err, errWrite) || w.calls != 2 {
		t.Errorf("Printer on a writer failing its second write: Err %v after %d writes; want %v after 2, none after it", p.Err, w.calls, errWrite)
	}
}
