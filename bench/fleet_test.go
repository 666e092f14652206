package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestWriteSVG checks that a fleet picture is well-formed XML with a line
// per series, its title and legend, a white background, under 60 KiB, and
// the same bytes for the same data.
func TestWriteSVG(t *testing.T) {
	const d = 10 * time.Second
	const title = "retrytransport adaptive: fleet, capacity 200 → 50 → 200 <&>"
	f := fleetFigure(title, testRun(d), d)
	var a, b bytes.Buffer
	if err := writeSVG(&a, f); err != nil {
		t.Fatal(err)
	}
	if err := writeSVG(&b, fleetFigure(title, testRun(d), d)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("writeSVG wrote different bytes for the same figure")
	}
	if n := a.Len(); n > 60<<10 {
		t.Errorf("writeSVG wrote %d bytes; want at most 60 KiB", n)
	}

	// It parses as XML; count the polylines and find the title.
	dec := xml.NewDecoder(bytes.NewReader(a.Bytes()))
	var polylines, points int
	var texts []string
	var root string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("writeSVG output does not parse: %v\n%s", err, a.String())
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
			}
			if e.Name.Local == "polyline" {
				polylines++
				for _, at := range e.Attr {
					if at.Name.Local == "points" {
						points += len(strings.Fields(at.Value))
					}
				}
			}
		case xml.CharData:
			texts = append(texts, string(e))
		}
	}
	if root != "svg" {
		t.Errorf("root element %q; want svg", root)
	}
	// Top: 8 replicas, the fleet's admitted rate, the capacity; bottom: 8 replicas.
	if want := 2*fleetClients + 2; polylines != want {
		t.Errorf("%d polylines; want %d", polylines, want)
	}
	// 96 windows of 500 ms in 10 s of 100 ms bins, for every line but the capacity (3 phases, 2 points each).
	if want := (2*fleetClients+1)*96 + 6; points != want {
		t.Errorf("%d points; want %d", points, want)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{title, "replica 1", "replica 8", "fleet admitted", "server capacity", "attempts per second", "429s per second"} {
		if !strings.Contains(all, want) {
			t.Errorf("writeSVG output lacks the text %q", want)
		}
	}
	if !strings.Contains(a.String(), `fill="#ffffff"`) {
		t.Error("writeSVG output has no white background")
	}
}

// TestTickStep checks the axis steps: 1, 2 or 5 times a power of ten.
func TestTickStep(t *testing.T) {
	for _, tc := range []struct {
		span float64
		n    int
		want float64
	}{
		{10, 10, 1}, {1.5, 10, 0.2}, {230, 5, 50}, {1000, 5, 200}, {0, 5, 1}, {3, 5, 1},
	} {
		if got := tickStep(tc.span, tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("tickStep(%v, %d) = %v; want %v", tc.span, tc.n, got, tc.want)
		}
	}
}

// TestFleetFigure checks the figure's numbers on testRun's counts: replica
// i sends 2+i+k%3 attempts in bin k, k%2 of them answered 429. The first
// 500 ms window (bins 0 to 4, drawn at 0.25 s) holds 14+5i attempts and 2
// 429s per replica, so 28+10i and 4 per second, and the fleet admitted
// (8·14 + 5·28 - 8·2)/0.5 = 472 per second; the capacity follows the
// variant's schedule.
func TestFleetFigure(t *testing.T) {
	const d = 10 * time.Second
	f := fleetFigure("t", testRun(d), d)
	sends, throttles := f.panels[0].series, f.panels[1].series
	first := func(s series) [2]float64 { return [2]float64{s.xs[0], s.ys[0]} }
	for i := range fleetClients {
		if got, want := first(sends[i]), [2]float64{0.25, float64(28 + 10*i)}; got != want {
			t.Errorf("replica %d's first send point %v; want %v", i+1, got, want)
		}
		if got, want := first(throttles[i]), [2]float64{0.25, 4}; got != want {
			t.Errorf("replica %d's first 429 point %v; want %v", i+1, got, want)
		}
	}
	if got, want := first(sends[fleetClients]), [2]float64{0.25, 472}; got != want {
		t.Errorf("fleet admitted's first point %v; want %v", got, want)
	}
	c := sends[fleetClients+1]
	if want := []float64{0, 4, 4, 7, 7, 10}; !slices.Equal(c.xs, want) {
		t.Errorf("capacity xs %v; want %v", c.xs, want)
	}
	if want := []float64{200, 200, 50, 50, 200, 200}; !slices.Equal(c.ys, want) {
		t.Errorf("capacity ys %v; want %v", c.ys, want)
	}
}
