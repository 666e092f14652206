package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/retrytransport/retrytransport/internal/svgplot"
)

// A figure is a grid of charts drawn as SVG by writeSVG: one column per
// subject (a contender, say), titled, and rows of charts that share one y
// axis across the columns, so that the columns compare at a glance. Every
// chart has the same x axis, from 0 to xmax.
type figure struct {
	title   string
	xlabel  string
	xmax    float64
	columns []string // column titles, one per column; "" for none
	rows    []row
	caption []string // lines under the legend
}

// A row is one line of charts, one per column, with a y axis from 0 to a
// maximum shared by all of them (see axis).
type row struct {
	ylabel string
	height float64    // of each chart's plotting area, px
	cells  [][]series // one per column: the lines of that column's chart
}

// A series is one line of a chart, in data units.
type series struct {
	name  string // in the legend; series of the same name share an entry, "" has none
	color string // CSS colour
	width float64
	dash  string // an SVG stroke-dasharray, "" for a solid line
	xs    []float64
	ys    []float64
}

// The figures' layout, in px.
const (
	plotLeft     = 68.0  // the first column's left edge: room for the y ticks and label
	plotColumn   = 256.0 // a chart's width
	plotColGap   = 30.0  // between columns: room for the x tick labels at both columns' ends
	plotRight    = 18.0  // right of the last column
	plotTop      = 66.0  // the first row's top: under the title and the column titles
	plotRowGap   = 14.0  // between rows
	plotXAxis    = 44.0  // x tick labels and the x label under the last row
	plotLineStep = 16.0  // caption and legend line height
)

// replicaColors are eight colours for lines on white: Tableau 10 (d3's
// category10) without its olive and grey. The second four are drawn
// dashed (replicaStyle), so that a pair such as green and red, which some
// readers cannot tell apart, also differs in the line.
var replicaColors = [8]string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728", "#8c564b", "#e377c2", "#17becf"}

// replicaStyle returns the colour and dash of line i (mod 8).
func replicaStyle(i int) (color, dash string) {
	i %= len(replicaColors)
	if i >= len(replicaColors)/2 {
		dash = "5 3"
	}
	return replicaColors[i], dash
}

// columnCount is the number of columns of f: its titles, or its widest row.
func (f figure) columnCount() int {
	n := max(1, len(f.columns))
	for _, r := range f.rows {
		n = max(n, len(r.cells))
	}
	return n
}

// width is f's width in px.
func (f figure) width() float64 {
	n := float64(f.columnCount())
	return plotLeft + n*plotColumn + (n-1)*plotColGap + plotRight
}

// columnX returns the left edge of column c.
func columnX(c int) float64 { return plotLeft + float64(c)*(plotColumn+plotColGap) }

// axis returns r's y axis: its top, a multiple of its tick step, at or
// above the greatest value of every column's lines (with 3 % to spare, so
// that a line at the maximum does not run along the frame), and the step.
// Every chart of the row is drawn to it.
func (r row) axis() (top, step float64) {
	ymax := 0.0
	for _, cell := range r.cells {
		for _, s := range cell {
			for _, v := range s.ys {
				ymax = max(ymax, v)
			}
		}
	}
	ymax *= 1.03
	step = svgplot.TickStep(ymax, 5)
	return math.Max(1, math.Ceil(ymax/step-1e-9)) * step, step
}

// legend returns one entry per series name, in order of first appearance,
// row by row, column by column, and the row of each.
func (f figure) legend() (entries []series, rows []int) {
	seen := map[string]bool{}
	for ri, r := range f.rows {
		for _, cell := range r.cells {
			for _, s := range cell {
				if s.name == "" || seen[s.name] {
					continue
				}
				seen[s.name] = true
				entries, rows = append(entries, s), append(rows, ri)
			}
		}
	}
	return entries, rows
}

// legendLayout places the legend's entries in lines across the figure's
// width, from x = plotLeft, each row's entries from a new line; it returns
// each entry's x and line number and the number of lines.
func (f figure) legendLayout() (xs []float64, lines []int, n int) {
	const sample = 30.0 // the sample line and the space after it
	x, line := plotLeft, -1
	entries, rows := f.legend()
	for i, s := range entries {
		w := sample + textWidth(s.name) + 16
		if line < 0 || rows[i] != rows[i-1] || x+w > f.width()-plotRight {
			x, line = plotLeft, line+1
		}
		xs, lines = append(xs, x), append(lines, line)
		x += w
	}
	return xs, lines, line + 1
}

// textWidth estimates the width of s in the figures' 12 px sans-serif.
func textWidth(s string) float64 { return 6.6 * float64(len([]rune(s))) }

// writeSVG draws f as a standalone SVG: a white background (so that it
// reads the same in a dark theme), the title, the column titles, the rows
// of charts with their grids and frames, y tick labels left of the first
// column (one axis per row, shared by the columns), x tick labels under
// the last row, the legend below them and the caption below it. Each chart
// is a <g id="rRcC"> (row R, column C, from 0) holding its frame, then its
// lines in order. The output depends on f alone.
func writeSVG(w io.Writer, f figure) error {
	cols := f.columnCount()
	width := f.width()
	rowsHeight := 0.0
	for i, r := range f.rows {
		rowsHeight += r.height
		if i > 0 {
			rowsHeight += plotRowGap
		}
	}
	lx, lline, nLegend := f.legendLayout()
	height := plotTop + rowsHeight + plotXAxis + plotLineStep*float64(nLegend+len(f.caption)) + 26

	p := &svgplot.Printer{W: w}
	p.Printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif" font-size="12" fill="#222222">`+"\n",
		width, height, width, height)
	p.Printf(`<rect width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", width, height)
	p.Printf(`<text x="%.0f" y="26" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, svgplot.Escape(f.title))
	for c, t := range f.columns {
		if t != "" {
			p.Printf(`<text x="%.1f" y="%.0f" text-anchor="middle" font-size="13" font-weight="bold">%s</text>`+"\n",
				columnX(c)+plotColumn/2, plotTop-10, svgplot.Escape(t))
		}
	}

	xmax := f.xmax
	if !(xmax > 0) {
		xmax = 1
	}
	xstep := svgplot.TickStep(xmax, 5)
	y0 := plotTop
	for ri, r := range f.rows {
		last := ri == len(f.rows)-1
		ytop, ystep := r.axis()
		y := func(v float64) float64 { return y0 + r.height - v/ytop*r.height }
		for k := 0; float64(k)*ystep <= ytop*(1+1e-9); k++ {
			v := float64(k) * ystep
			p.Printf(`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-7, y(v)+4, svgplot.TickLabel(v, ystep))
		}
		cy := y0 + r.height/2
		p.Printf(`<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n", cy, cy, svgplot.Escape(r.ylabel))
		for c := range cols {
			left := columnX(c)
			x := func(v float64) float64 { return left + v/xmax*plotColumn }
			p.Printf("<g id=\"r%dc%d\">\n", ri, c)
			p.Printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444444"/>`+"\n", left, y0, plotColumn, r.height)
			for k := 0; float64(k)*xstep <= xmax*(1+1e-9); k++ {
				v := float64(k) * xstep
				p.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e8e8e8"/>`+"\n", x(v), y0, x(v), y0+r.height)
				p.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444444"/>`+"\n", x(v), y0+r.height, x(v), y0+r.height+4)
				if last {
					p.Printf(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(v), y0+r.height+17, svgplot.TickLabel(v, xstep))
				}
			}
			for k := 0; float64(k)*ystep <= ytop*(1+1e-9); k++ {
				v := float64(k) * ystep
				p.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e8e8e8"/>`+"\n", left, y(v), left+plotColumn, y(v))
				p.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444444"/>`+"\n", left-4, y(v), left, y(v))
			}
			if c < len(r.cells) {
				for _, s := range r.cells[c] {
					var pts []string
					for k := range min(len(s.xs), len(s.ys)) {
						pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.xs[k]), y(s.ys[k])))
					}
					p.Printf(`<polyline fill="none" stroke="%s" stroke-width="%g" stroke-linejoin="round"%s points="%s"/>`+"\n",
						s.color, s.width, svgplot.DashAttr(s.dash), strings.Join(pts, " "))
				}
			}
			p.Printf("</g>\n")
		}
		y0 += r.height + plotRowGap
	}
	y0 -= plotRowGap
	p.Printf(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (plotLeft+columnX(cols-1)+plotColumn)/2, y0+36, svgplot.Escape(f.xlabel))

	ly := y0 + plotXAxis + 10
	entries, _ := f.legend()
	for i, s := range entries {
		yy := ly + plotLineStep*float64(lline[i])
		p.Printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`+"\n",
			lx[i], yy, lx[i]+24, yy, s.color, max(s.width, 2), svgplot.DashAttr(s.dash))
		p.Printf(`<text x="%.1f" y="%.1f">%s</text>`+"\n", lx[i]+30, yy+4, svgplot.Escape(s.name))
	}
	cy := ly + plotLineStep*float64(nLegend) + 6
	for i, line := range f.caption {
		p.Printf(`<text x="%.0f" y="%.1f" fill="#555555">%s</text>`+"\n", plotLeft, cy+plotLineStep*float64(i)+4, svgplot.Escape(line))
	}
	p.Printf("</svg>\n")
	return p.Err
}
