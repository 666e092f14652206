package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// A figure is one or more panels stacked over a shared x axis from 0 to
// xmax, drawn as SVG by writeSVG.
type figure struct {
	title   string
	xlabel  string
	xmax    float64
	panels  []panel
	caption []string // lines under the figure
}

// A panel is one chart of a figure, with a y axis of its own from 0.
type panel struct {
	ylabel string
	height float64 // of the plotting area, px
	series []series
}

// A series is one line of a panel, in data units.
type series struct {
	name   string // in the legend; series of the same name share an entry, "" has none
	color  string // CSS colour
	width  float64
	dashed bool
	xs, ys []float64
}

// okabeIto returns colour i (mod 8) of the Okabe–Ito colour-blind-safe
// palette, with grey in place of its black, which the figures keep for
// totals.
func okabeIto(i int) string {
	return [...]string{"#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999"}[i%8]
}

// writeSVG draws f as a standalone SVG: a white background (so that it
// reads the same in a dark theme), the title, the panels with their grids,
// ticks and axis labels (x tick labels under the last panel only), a legend
// to the right of the panels and the caption below. The output depends on
// f alone.
func writeSVG(w io.Writer, f figure) error {
	const (
		width    = 960.0
		left     = 72.0  // the plotting area's left edge: room for the y ticks and label
		right    = 790.0 // its right edge: the legend is beyond
		top      = 48.0  // under the title
		gap      = 22.0  // between panels
		xaxis    = 44.0  // x tick labels and the x label under the last panel
		lineStep = 16.0  // caption and legend line height
	)
	height := top + xaxis + lineStep*float64(len(f.caption)) + 12
	for i, p := range f.panels {
		height += p.height
		if i > 0 {
			height += gap
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif" font-size="12" fill="#222222">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="28" font-size="15" font-weight="bold">%s</text>`+"\n", left, escapeXML(f.title))

	xmax := f.xmax
	if !(xmax > 0) {
		xmax = 1
	}
	x := func(v float64) float64 { return left + v/xmax*(right-left) }
	xstep := tickStep(xmax, 10)
	y0 := top
	for i, p := range f.panels {
		last := i == len(f.panels)-1
		ymax := 0.0
		for _, s := range p.series {
			for _, v := range s.ys {
				ymax = max(ymax, v)
			}
		}
		ymax *= 1.03 // so that a line at the maximum does not run along the frame
		ystep := tickStep(ymax, 5)
		ytop := math.Max(1, math.Ceil(ymax/ystep-1e-9)) * ystep
		y := func(v float64) float64 { return y0 + p.height - v/ytop*p.height }
		b.WriteString("<g>\n")
		for k := 0; float64(k)*xstep <= xmax*(1+1e-9); k++ {
			v := float64(k) * xstep
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x(v), y0, x(v), y0+p.height)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444444"/>`+"\n", x(v), y0+p.height, x(v), y0+p.height+4)
			if last {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(v), y0+p.height+17, tickLabel(v, xstep))
			}
		}
		for k := 0; float64(k)*ystep <= ytop*(1+1e-9); k++ {
			v := float64(k) * ystep
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", left, y(v), right, y(v))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444444"/>`+"\n", left-4, y(v), left, y(v))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-7, y(v)+4, tickLabel(v, ystep))
		}
		cy := y0 + p.height/2
		fmt.Fprintf(&b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">%s</text>`+"\n", cy, cy, escapeXML(p.ylabel))
		for _, s := range p.series {
			var pts []string
			for k := range min(len(s.xs), len(s.ys)) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.xs[k]), y(s.ys[k])))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%g" stroke-linejoin="round"%s points="%s"/>`+"\n",
				s.color, s.width, dash(s.dashed), strings.Join(pts, " "))
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444444"/>`+"\n", left, y0, right-left, p.height)
		b.WriteString("</g>\n")
		y0 += p.height + gap
	}
	y0 -= gap
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+right)/2, y0+36, escapeXML(f.xlabel))

	// The legend: one entry per name, in order of first appearance.
	seen := map[string]bool{}
	ly := top + 8
	for _, p := range f.panels {
		for _, s := range p.series {
			if s.name == "" || seen[s.name] {
				continue
			}
			seen[s.name] = true
			fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`+"\n",
				right+14, ly, right+40, ly, s.color, max(s.width, 2), dash(s.dashed))
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f">%s</text>`+"\n", right+46, ly+4, escapeXML(s.name))
			ly += lineStep
		}
	}
	for i, line := range f.caption {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" fill="#555555">%s</text>`+"\n", left, y0+xaxis+lineStep*float64(i+1), escapeXML(line))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dash returns the attribute of a dashed line, or nothing.
func dash(dashed bool) string {
	if dashed {
		return ` stroke-dasharray="6 4"`
	}
	return ""
}

// tickStep returns a step of 1, 2 or 5 times a power of ten that divides
// [0, span] into at most n intervals.
func tickStep(span float64, n int) float64 {
	if !(span > 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// tickLabel formats v with as many decimals as the step needs.
func tickLabel(v, step float64) string {
	return fmt.Sprintf("%.*f", max(0, int(math.Ceil(-math.Log10(step)-1e-9))), v)
}

// escapeXML escapes text for an SVG element's content.
func escapeXML(s string) string { return xmlEscaper.Replace(s) }

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
