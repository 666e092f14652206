// Package svgplot holds what the module's SVG pictures share: the bench's
// figures of the fleet runs and the SNS backoff chart of
// examples/schedule. It writes the markup ([Printer]), escapes text
// ([Escape]), dashes lines ([DashAttr]) and divides axes ([TickStep],
// [TickLabel]); where the marks go is each picture's own layout.
//
// Every function's output depends on its arguments alone, so that a
// picture drawn twice from the same data gives the same bytes.
package svgplot

import (
	"fmt"
	"io"
	"strings"
)

// Printer writes formatted markup to W and keeps the first error, so that
// a picture is written without an error check per element.
type Printer struct {
	W   io.Writer
	Err error // the first write error; later writes are skipped
}

// Printf writes to p.W unless an earlier write failed.
func (p *Printer) Printf(format string, args ...any) {
	if p.Err == nil {
		_, p.Err = fmt.Fprintf(p.W, format, args...)
	}
}

// Escape escapes s for the text of an SVG element: &, < and >. Quotes
// stay as they are, so s must not go into an attribute value.
func Escape(s string) string { return escaper.Replace(s) }

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// DashAttr returns the stroke-dasharray attribute, with its leading space,
// of a line dashed as dash ("5 3"), or "" for a solid line.
func DashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}
