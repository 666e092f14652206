package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/internal/svgplot"
)

// TestJain checks the fairness index on shares whose index is known.
func TestJain(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{5, 5, 5, 5, 5, 5, 5, 5}, 1},
		{[]float64{0, 0, 0, 0, 0, 0, 0, 80}, 1.0 / 8},
		{[]float64{0, 10}, 0.5},
		{[]float64{1, 3}, 16.0 / 20}, // (1+3)² / (2·(1+9))
		{[]float64{0, 0, 0}, 1},      // equal shares of nothing
	} {
		if got := jain(tc.xs); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("jain(%v) = %v; want %v", tc.xs, got, tc.want)
		}
	}
}

// bins returns admitted counts per 50 ms bin for a run of length d whose
// rate, in requests per second, is rate(t) for the bin starting at t.
func bins(d time.Duration, rate func(t time.Duration) float64) []int64 {
	out := make([]int64, binCount(d, settleBin))
	for k := range out {
		out[k] = int64(math.Round(rate(time.Duration(k)*settleBin) * settleBin.Seconds()))
	}
	return out
}

// TestSettleTime checks the settle detection on synthetic bins: a window
// counts only if it lies entirely within the new phase.
func TestSettleTime(t *testing.T) {
	const d = 10 * time.Second
	change, end := 4*time.Second, 7*time.Second
	t.Run("settles", func(t *testing.T) {
		// 200/s before the change, nothing for 300 ms after it, then 2 and 3
		// per bin in turn: 50/s over any 500 ms window.
		admitted := bins(d, func(at time.Duration) float64 {
			if at < change {
				return 200
			}
			return 0
		})
		for k := range admitted {
			if at := time.Duration(k) * settleBin; at >= change+300*time.Millisecond {
				admitted[k] = int64(2 + k%2)
			}
		}
		s := settleTime(admitted, settleBin, settleWindow, change, end, 50)
		if !s.ok {
			t.Fatalf("settleTime = %+v; want settled", s)
		}
		// The first window all at 50/s starts 300 ms after the change; a window
		// starting a bin earlier holds a zero bin: 44/s, outside ±10 %.
		if want := 800 * time.Millisecond; s.after != want {
			t.Errorf("settle after %v; want %v", s.after, want)
		}
		if math.Abs(s.held-1) > 0.02 {
			t.Errorf("held %.3f of capacity; want 1", s.held)
		}
	})
	t.Run("never", func(t *testing.T) {
		// The fleet keeps sending 100/s: twice the new capacity.
		admitted := bins(d, func(time.Duration) float64 { return 100 })
		if s := settleTime(admitted, settleBin, settleWindow, change, end, 50); s.ok {
			t.Errorf("settleTime = %+v; want never", s)
		}
	})
	t.Run("window after the change", func(t *testing.T) {
		// The rate was already 50/s before the change and drops to 0 at it: a
		// window reaching back before the change would settle at once.
		admitted := make([]int64, binCount(d, settleBin))
		for k := range admitted {
			if time.Duration(k)*settleBin < change {
				admitted[k] = int64(2 + k%2)
			}
		}
		if s := settleTime(admitted, settleBin, settleWindow, change, end, 50); s.ok {
			t.Errorf("settleTime = %+v; want never: no window within the phase holds 50/s", s)
		}
	})
	t.Run("window within the phase", func(t *testing.T) {
		// 50/s only after the phase ends: too late.
		admitted := make([]int64, binCount(d, settleBin))
		for k := range admitted {
			if time.Duration(k)*settleBin >= end {
				admitted[k] = int64(2 + k%2)
			}
		}
		if s := settleTime(admitted, settleBin, settleWindow, change, end, 50); s.ok {
			t.Errorf("settleTime = %+v; want never: 50/s only after the phase", s)
		}
	})
	t.Run("unaligned change", func(t *testing.T) {
		// A change 20 ms into a bin: the first window starts at the next bin.
		admitted := bins(d, func(time.Duration) float64 { return 200 })
		s := settleTime(admitted, settleBin, settleWindow, change+20*time.Millisecond, end, 200)
		if want := 530 * time.Millisecond; !s.ok || s.after != want {
			t.Errorf("settleTime = %+v; want settled after %v", s, want)
		}
	})
}

// TestMinMedMax checks the summary of runs and its cell format.
func TestMinMedMax(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		xs           []float64
		lo, med, hi  float64
		spreadFormat string
	}{
		{[]float64{3}, 3, 3, 3, "3"},
		{[]float64{5, 1, 3}, 1, 3, 5, "1 / 3 / 5"},
		{[]float64{4, 1, 3, 2}, 1, 2.5, 4, "1 / 2.5 / 4"},
		{[]float64{2, nan, 1}, 1, 1.5, 2, "1 / 1.5 / 2"},
		{[]float64{1, math.Inf(1), 2}, 1, 2, math.Inf(1), "1 / 2 / +Inf"},
		{[]float64{7, 7}, 7, 7, 7, "7"},
	} {
		lo, med, hi := minMedMax(tc.xs)
		if lo != tc.lo || med != tc.med || hi != tc.hi {
			t.Errorf("minMedMax(%v) = %v, %v, %v; want %v, %v, %v", tc.xs, lo, med, hi, tc.lo, tc.med, tc.hi)
		}
		if got := spread(tc.xs, formatG); got != tc.spreadFormat {
			t.Errorf("spread(%v) = %q; want %q", tc.xs, got, tc.spreadFormat)
		}
	}
	if lo, med, hi := minMedMax([]float64{nan}); !math.IsNaN(lo) || !math.IsNaN(med) || !math.IsNaN(hi) {
		t.Errorf("minMedMax(NaN) = %v, %v, %v; want NaNs", lo, med, hi)
	}
	if got := spread(nil, formatG); got != "n/a" {
		t.Errorf("spread(nil) = %q; want n/a", got)
	}
}

// formatG formats x as briefly as it can be read back.
func formatG(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// testRun returns a fleet run of the capacity variant with every client
// sending at a different steady rate, a tenth of it answered 429.
func testRun(d time.Duration) fleetRun {
	v := fleetVariants()[2]
	r := fleetRun{phases: v.schedule(d)}
	for i := range fleetClients {
		r.trace.attempts[i] = make([]int64, binCount(d, fleetBin))
		r.trace.throttles[i] = make([]int64, binCount(d, fleetBin))
		for k := range r.trace.attempts[i] {
			r.trace.attempts[i][k] = int64(2 + i + k%3)
			r.trace.throttles[i][k] = int64(k % 2)
		}
	}
	return r
}

// scaledRun returns r with every count multiplied by m.
func scaledRun(r fleetRun, m int64) fleetRun {
	out := fleetRun{phases: r.phases}
	for i := range fleetClients {
		for _, k := range []struct {
			dst *[]int64
			src []int64
		}{
			{&out.trace.attempts[i], r.trace.attempts[i]},
			{&out.trace.throttles[i], r.trace.throttles[i]},
		} {
			*k.dst = make([]int64, len(k.src))
			for j, x := range k.src {
				(*k.dst)[j] = m * x
			}
		}
	}
	return out
}

// testColumns are the test figures' column titles.
var testColumns = []string{"contender <a>", "contender & b"}

// testFigure is a figure of two contenders: testRun, and testRun with
// three times its counts.
func testFigure(title string, d time.Duration) figure {
	return fleetFigure(title, testColumns, []fleetRun{testRun(d), scaledRun(testRun(d), 3)}, d)
}

// svgChart is one chart of a drawn figure: its frame and its lines' points
// in px.
type svgChart struct {
	x, y, w, h float64
	lines      [][][2]float64
}

// svgDoc is what the tests read back from writeSVG's output.
type svgDoc struct {
	width, height float64
	charts        map[string]*svgChart // by id, "r0c1"
	texts         []string
	polylines     int
}

// parseSVG parses writeSVG's output, failing t if it is not well-formed
// XML with an svg root.
func parseSVG(t *testing.T, data []byte) svgDoc {
	t.Helper()
	doc := svgDoc{charts: map[string]*svgChart{}}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("not a number in the SVG: %q", s)
		}
		return v
	}
	attrs := func(e xml.StartElement) map[string]string {
		m := map[string]string{}
		for _, a := range e.Attr {
			m[a.Name.Local] = a.Value
		}
		return m
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root string
	var cur *svgChart
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("writeSVG output does not parse: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			a := attrs(e)
			switch {
			case root == "":
				root = e.Name.Local
				doc.width, doc.height = num(a["width"]), num(a["height"])
			case e.Name.Local == "g":
				cur = &svgChart{}
				doc.charts[a["id"]] = cur
			case e.Name.Local == "rect" && cur != nil && cur.w == 0:
				cur.x, cur.y, cur.w, cur.h = num(a["x"]), num(a["y"]), num(a["width"]), num(a["height"])
			case e.Name.Local == "polyline":
				doc.polylines++
				if cur == nil {
					t.Fatal("a polyline outside a chart")
				}
				var pts [][2]float64
				for _, p := range strings.Fields(a["points"]) {
					x, y, _ := strings.Cut(p, ",")
					pts = append(pts, [2]float64{num(x), num(y)})
				}
				cur.lines = append(cur.lines, pts)
			}
		case xml.EndElement:
			if e.Name.Local == "g" {
				cur = nil
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(e)); s != "" {
				doc.texts = append(doc.texts, s)
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q; want svg", root)
	}
	return doc
}

// TestWriteSVG checks that a fleet picture is well-formed XML with a line
// per series, its title, column titles and legend, a white background,
// under 120 KiB, and the same bytes for the same data.
func TestWriteSVG(t *testing.T) {
	const d = 10 * time.Second
	const title = "fleet, capacity 200 → 50 → 200 <&>"
	var a, b bytes.Buffer
	if err := writeSVG(&a, testFigure(title, d)); err != nil {
		t.Fatal(err)
	}
	if err := writeSVG(&b, testFigure(title, d)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("writeSVG wrote different bytes for the same figure")
	}
	if n := a.Len(); n > 120<<10 {
		t.Errorf("writeSVG wrote %d bytes; want at most 120 KiB", n)
	}
	doc := parseSVG(t, a.Bytes())
	// Per column: the capacity and the fleet admitted; 8 replicas and the fair share; the fleet's 429s.
	if want := 2 * (2 + fleetClients + 1 + 1); doc.polylines != want {
		t.Errorf("%d polylines; want %d", doc.polylines, want)
	}
	all := strings.Join(doc.texts, "\n")
	for _, want := range append([]string{title, "replica 1", "replica 8", "fleet admitted (not 429)", "server capacity",
		"fair share: capacity / 8", "fleet 429s", "fleet, requests per second", "each replica, attempts per second",
		"fleet, 429s per second"}, testColumns...) {
		if !strings.Contains(all, want) {
			t.Errorf("writeSVG output lacks the text %q", want)
		}
	}
	for _, name := range []string{"replica 1", "server capacity", "fleet 429s"} {
		if n := slices.Index(doc.texts, name); n < 0 || slices.Index(doc.texts[n+1:], name) >= 0 {
			t.Errorf("the legend has %q other than once", name)
		}
	}
	if !strings.Contains(a.String(), `fill="#ffffff"`) {
		t.Error("writeSVG output has no white background")
	}
}

// TestFigureLayout checks the grid: a chart per row and column, the
// charts of a row level and of one height, those of a column aligned and
// of one width, the columns apart and in order, everything inside the
// picture, and one set of y tick labels per row (left of the first
// column).
func TestFigureLayout(t *testing.T) {
	const d = 10 * time.Second
	f := fleetFigure("t", []string{"a", "b", "c", "d"}, []fleetRun{testRun(d), testRun(d), testRun(d), testRun(d)}, d)
	var buf bytes.Buffer
	if err := writeSVG(&buf, f); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, buf.Bytes())
	const rows, cols = 3, 4
	if len(f.rows) != rows || len(doc.charts) != rows*cols {
		t.Fatalf("%d rows and %d charts; want %d and %d", len(f.rows), len(doc.charts), rows, rows*cols)
	}
	chart := func(r, c int) *svgChart {
		ch := doc.charts[fmt.Sprintf("r%dc%d", r, c)]
		if ch == nil {
			t.Fatalf("no chart r%dc%d", r, c)
		}
		return ch
	}
	for r := range rows {
		for c := range cols {
			ch := chart(r, c)
			if ch.y != chart(r, 0).y || ch.h != chart(r, 0).h || ch.h != f.rows[r].height {
				t.Errorf("chart r%dc%d at y %v, height %v; want row %d's %v, %v", r, c, ch.y, ch.h, r, chart(r, 0).y, f.rows[r].height)
			}
			if ch.x != chart(0, c).x || ch.w != chart(0, c).w {
				t.Errorf("chart r%dc%d at x %v, width %v; want column %d's %v, %v", r, c, ch.x, ch.w, c, chart(0, c).x, chart(0, c).w)
			}
			if c > 0 && ch.x < chart(r, c-1).x+chart(r, c-1).w+10 {
				t.Errorf("chart r%dc%d at x %v overlaps or touches the chart left of it", r, c, ch.x)
			}
			if r > 0 && ch.y < chart(r-1, c).y+chart(r-1, c).h+10 {
				t.Errorf("chart r%dc%d at y %v overlaps or touches the chart above it", r, c, ch.y)
			}
			if ch.x < 40 || ch.y < 40 || ch.x+ch.w > doc.width || ch.y+ch.h > doc.height-60 {
				t.Errorf("chart r%dc%d (%v, %v, %v, %v) is not inside the %v × %v picture with room for the axes", r, c, ch.x, ch.y, ch.w, ch.h, doc.width, doc.height)
			}
		}
	}
	// The replicas' panel's tick labels: one axis, drawn once.
	top, step := f.rows[fleetRowReplicas].axis()
	if n := strings.Count(buf.String(), ">"+svgplot.TickLabel(top, step)+"</text>"); n < 1 || n > 2 {
		t.Errorf("the replicas' top tick %s is drawn %d times", svgplot.TickLabel(top, step), n)
	}
}

// TestFleetFigureSharesScales reads the drawn lines back from the SVG of
// two contenders, the second with three times the first's counts: every
// point maps back to its series' value through the one axis of its row,
// so both columns are drawn to the same scale; the row's axis covers both
// columns; and the replicas' row has an axis of its own, well under the
// fleet's.
func TestFleetFigureSharesScales(t *testing.T) {
	const d = 10 * time.Second
	f := testFigure("t", d)
	var buf bytes.Buffer
	if err := writeSVG(&buf, f); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, buf.Bytes())
	for ri, r := range f.rows {
		top, _ := r.axis()
		var colMax [2]float64
		for c, cell := range r.cells {
			ch := doc.charts[fmt.Sprintf("r%dc%d", ri, c)]
			if ch == nil || len(ch.lines) != len(cell) {
				t.Fatalf("chart r%dc%d: %v; want %d lines", ri, c, ch, len(cell))
			}
			for k, s := range cell {
				if len(ch.lines[k]) != len(s.ys) {
					t.Fatalf("chart r%dc%d line %d has %d points; want %d", ri, c, k, len(ch.lines[k]), len(s.ys))
				}
				for j, p := range ch.lines[k] {
					x := (p[0] - ch.x) / ch.w * f.xmax
					y := (ch.y + ch.h - p[1]) / ch.h * top
					if math.Abs(x-s.xs[j]) > 0.06*f.xmax/ch.w || math.Abs(y-s.ys[j]) > 0.06*top/ch.h {
						t.Fatalf("chart r%dc%d line %q point %d reads (%.3f, %.3f); want (%v, %v)", ri, c, s.name, j, x, y, s.xs[j], s.ys[j])
					}
					colMax[c] = max(colMax[c], s.ys[j])
				}
			}
		}
		if top < max(colMax[0], colMax[1]) || top > 2*max(colMax[0], colMax[1]) {
			t.Errorf("row %d's axis top %v; its columns' maxima are %v", ri, top, colMax)
		}
		if colMax[1] < 2.5*colMax[0] {
			t.Errorf("row %d: the second column's maximum %v is not about three times the first's %v", ri, colMax[1], colMax[0])
		}
	}
	fleetTop, _ := f.rows[fleetRowTotal].axis()
	if replicaTop, _ := f.rows[fleetRowReplicas].axis(); replicaTop > fleetTop/3 {
		t.Errorf("the replicas' axis top %v; want an axis that fits them, well under the fleet's %v", replicaTop, fleetTop)
	}
}

// TestReplicaStyles checks the replicas' eight styles: colours far apart
// in RGB (a little less far where the dashes differ), none light on
// white, and each replica drawn in its own style in every column.
func TestReplicaStyles(t *testing.T) {
	rgb := func(c string) [3]float64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(c, "#"), 16, 32)
		if err != nil || len(c) != 7 {
			t.Fatalf("colour %q", c)
		}
		return [3]float64{float64(v >> 16), float64(v >> 8 & 0xff), float64(v & 0xff)}
	}
	for i := range 8 {
		ci, di := replicaStyle(i)
		a := rgb(ci)
		if lum := 0.2126*a[0] + 0.7152*a[1] + 0.0722*a[2]; lum > 170 {
			t.Errorf("replica %d's colour %s is light on white (luminance %.0f)", i+1, ci, lum)
		}
		for j := range i {
			cj, dj := replicaStyle(j)
			b := rgb(cj)
			// A dash tells a pair apart as well, so such a pair may be a little closer.
			dist, want := math.Hypot(math.Hypot(a[0]-b[0], a[1]-b[1]), a[2]-b[2]), 90.0
			if di != dj {
				want = 70
			}
			if dist < want {
				t.Errorf("replicas %d and %d: colours %s and %s (dashes %q, %q) are %.0f apart; want at least %.0f", j+1, i+1, cj, ci, dj, di, dist, want)
			}
		}
	}
	const d = 10 * time.Second
	f := testFigure("t", d)
	for c, cell := range f.rows[fleetRowReplicas].cells {
		for i := range fleetClients {
			color, dash := replicaStyle(i)
			if s := cell[i]; s.name != fmt.Sprintf("replica %d", i+1) || s.color != color || s.dash != dash {
				t.Errorf("column %d's series %d is %q in %s %q; want replica %d in %s %q", c, i, s.name, s.color, s.dash, i+1, color, dash)
			}
		}
	}
}

// TestFleetFigure checks the figure's numbers on testRun's counts: replica
// i sends 2+i+k%3 attempts in bin k, k%2 of them answered 429. The first
// 500 ms window (bins 0 to 4, drawn at 0.25 s) holds 14+5i attempts and 2
// 429s per replica, so 28+10i attempts per second per replica and 8·4 = 32
// 429s per second for the fleet, which admitted (8·14 + 5·28 - 8·2)/0.5 =
// 472 per second; the capacity and the fair share follow the variant's
// schedule. The second column has three times the counts.
func TestFleetFigure(t *testing.T) {
	const d = 10 * time.Second
	f := testFigure("t", d)
	if !slices.Equal(f.columns, testColumns) {
		t.Errorf("columns %q; want %q", f.columns, testColumns)
	}
	first := func(s series) [2]float64 { return [2]float64{s.xs[0], s.ys[0]} }
	for c, m := range []float64{1, 3} {
		total, replicas, throttles := f.rows[fleetRowTotal].cells[c], f.rows[fleetRowReplicas].cells[c], f.rows[fleetRowThrottles].cells[c]
		for i := range fleetClients {
			if got, want := first(replicas[i]), [2]float64{0.25, m * float64(28+10*i)}; got != want {
				t.Errorf("column %d: replica %d's first send point %v; want %v", c, i+1, got, want)
			}
		}
		if got, want := first(throttles[0]), [2]float64{0.25, m * 32}; got != want {
			t.Errorf("column %d: the fleet's first 429 point %v; want %v", c, got, want)
		}
		if got, want := first(total[1]), [2]float64{0.25, m * 472}; got != want {
			t.Errorf("column %d: fleet admitted's first point %v; want %v", c, got, want)
		}
		if n := len(replicas[0].xs); n != 96 {
			t.Errorf("column %d: %d points per replica; want 96 windows of 500 ms in 10 s of 100 ms bins", c, n)
		}
		capacity, fair := total[0], replicas[fleetClients]
		for _, s := range []series{capacity, fair} {
			if want := []float64{0, 4, 4, 7, 7, 10}; !slices.Equal(s.xs, want) {
				t.Errorf("column %d: %s xs %v; want %v", c, s.name, s.xs, want)
			}
		}
		if want := []float64{200, 200, 50, 50, 200, 200}; !slices.Equal(capacity.ys, want) {
			t.Errorf("column %d: capacity ys %v; want %v", c, capacity.ys, want)
		}
		if want := []float64{25, 25, 6.25, 6.25, 25, 25}; !slices.Equal(fair.ys, want) {
			t.Errorf("column %d: fair share ys %v; want %v", c, fair.ys, want)
		}
	}
}
