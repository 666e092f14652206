package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
	"github.com/retrytransport/retrytransport/internal/svgplot"
)

// chart is what writeChart draws: the delays of an SNS backoff phase of
// retries retries from minDelay to maxDelay, for each of the four backoff
// functions (backoff.Curve).
type chart struct {
	minDelay, maxDelay time.Duration
	retries            int
}

// snsChart returns the case of the chart in SNS's guide (docs/sns.md): 10
// retries from 5s to 260s.
func snsChart() chart {
	return chart{minDelay: 5 * time.Second, maxDelay: 260 * time.Second, retries: 10}
}

// The chart's layout, in SVG user units (pixels): the plot area, the
// legend to its right and the whole picture.
const (
	svgWidth   = 780
	svgHeight  = 480
	plotLeft   = 80
	plotTop    = 80
	plotWidth  = 460
	plotHeight = 310
	plotRight  = plotLeft + plotWidth
	plotBottom = plotTop + plotHeight
	legendLeft = plotRight + 40
)

// series is one curve of the chart.
type series struct {
	curve  backoff.Curve
	color  string    // stroke and marker colour
	dash   string    // stroke-dasharray, "" for a solid line
	delays []float64 // seconds, for retries 1 to chart.retries
	total  float64   // seconds, the sum of delays
}

// series returns the four curves in SNS's order, each with its delays from
// backoff.Schedule: with no other phase, retry i is the i-th backoff retry.
// The colours are from the Okabe–Ito palette, which colour-blind readers
// can tell apart, and each curve has its own dashes for grey-scale prints.
func (c chart) series() []series {
	style := []struct{ color, dash string }{
		{"#0072B2", ""},
		{"#D55E00", "9 4"},
		{"#009E73", "3 3"},
		{"#CC79A7", "12 4 3 4"},
	}
	curves := []backoff.Curve{backoff.CurveLinear, backoff.CurveArithmetic, backoff.CurveExponential, backoff.CurveGeometric}
	var out []series
	for i, cv := range curves {
		s := backoff.Schedule{MinDelay: c.minDelay, MaxDelay: c.maxDelay, NumRetries: c.retries, BackoffFunction: cv}
		sr := series{curve: cv, color: style[i].color, dash: style[i].dash, total: s.Total().Seconds()}
		for n := 1; n <= c.retries; n++ {
			sr.delays = append(sr.delays, s.Delay(n).Seconds())
		}
		out = append(out, sr)
	}
	return out
}

// yAxis returns the top of the delay axis and its tick step, in seconds: a
// step of 1, 2 or 5 times a power of ten that gives about six ticks, and
// the first multiple of it at or above maxDelay.
func (c chart) yAxis() (top, step float64) {
	maxSec := c.maxDelay.Seconds()
	step = svgplot.TickStep(maxSec, 6)
	return math.Ceil(maxSec/step) * step, step
}

// x returns the horizontal position of retry i, from 1.
func (c chart) x(i int) float64 {
	return plotLeft + float64(i-1)/float64(c.retries-1)*plotWidth
}

// y returns the vertical position of a delay of sec seconds.
func (c chart) y(sec float64) float64 {
	top, _ := c.yAxis()
	return plotBottom - sec/top*plotHeight
}

// seconds is the inverse of y: the delay that position y stands for.
func (c chart) seconds(y float64) float64 {
	top, _ := c.yAxis()
	return (plotBottom - y) / plotHeight * top
}

// writeChart writes c as a standalone SVG 1.1 document to w: axes labelled
// in seconds and retry numbers, a polyline with markers per backoff
// function, and a legend with each function's total. It uses only the
// generic sans-serif font family and no script, and its output depends on c
// alone, so the same chart gives the same bytes.
func writeChart(w io.Writer, c chart) error {
	if c.retries < 2 || c.minDelay <= 0 || c.maxDelay <= c.minDelay {
		return fmt.Errorf("chart: want at least 2 retries and 0 < minDelay < maxDelay, have %d retries from %v to %v",
			c.retries, c.minDelay, c.maxDelay)
	}
	p := &svgplot.Printer{W: w}
	top, step := c.yAxis()
	all := c.series()

	p.Printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p.Printf(`<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13" fill="#222">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	title := fmt.Sprintf("Amazon SNS backoff functions: %d retries from %s to %s", c.retries, secText(c.minDelay.Seconds()), secText(c.maxDelay.Seconds()))
	p.Printf("<title>%s</title>\n", svgplot.Escape(title))
	var desc []string
	for _, s := range all {
		var v []string
		for _, d := range s.delays {
			v = append(v, strconv.FormatFloat(d, 'f', 2, 64))
		}
		desc = append(desc, fmt.Sprintf("%s: %s s", s.curve, strings.Join(v, ", ")))
	}
	p.Printf("<desc>Delay before each retry of the backoff phase, as package backoff computes it. %s.</desc>\n", svgplot.Escape(strings.Join(desc, "; ")))
	p.Printf(`<rect width="%d" height="%d" fill="#fff"/>`+"\n", svgWidth, svgHeight)
	p.Printf(`<text x="%d" y="32" font-size="17" font-weight="bold">Amazon SNS backoff functions</text>`+"\n", plotLeft)
	p.Printf(`<text x="%d" y="54" fill="#555">%s</text>`+"\n", plotLeft,
		svgplot.Escape(fmt.Sprintf("%d backoff retries, minDelayTarget %s, maxDelayTarget %s", c.retries, secText(c.minDelay.Seconds()), secText(c.maxDelay.Seconds()))))

	// Grid and ticks of the delay axis.
	p.Printf(`<g stroke="#e3e3e3" stroke-width="1">` + "\n")
	for v := 0.0; v <= top+step/2; v += step {
		p.Printf(`<line x1="%d" y1="%s" x2="%d" y2="%s"/>`+"\n", plotLeft, num(c.y(v)), plotRight, num(c.y(v)))
	}
	p.Printf("</g>\n")
	p.Printf(`<g text-anchor="end">` + "\n")
	for v := 0.0; v <= top+step/2; v += step {
		p.Printf(`<text x="%d" y="%s">%s</text>`+"\n", plotLeft-8, num(c.y(v)+4), num(v))
	}
	p.Printf("</g>\n")
	p.Printf(`<text transform="translate(28 %d) rotate(-90)" text-anchor="middle">delay before the retry (s)</text>`+"\n", plotTop+plotHeight/2)

	// Ticks of the retry axis.
	xStep := 1
	for c.retries/xStep > 20 {
		xStep *= 2
	}
	p.Printf(`<g text-anchor="middle">` + "\n")
	for i := 1; i <= c.retries; i += xStep {
		p.Printf(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#222"/>`+"\n", num(c.x(i)), plotBottom, num(c.x(i)), plotBottom+5)
		p.Printf(`<text x="%s" y="%d">%d</text>`+"\n", num(c.x(i)), plotBottom+21, i)
	}
	p.Printf("</g>\n")
	p.Printf(`<text x="%d" y="%d" text-anchor="middle">retry of the backoff phase</text>`+"\n", plotLeft+plotWidth/2, plotBottom+45)
	p.Printf(`<path d="M%d %dV%dH%d" fill="none" stroke="#222" stroke-width="1.2"/>`+"\n", plotLeft, plotTop-10, plotBottom, plotRight+10)

	// The curves, then their markers on top.
	for _, s := range all {
		var pts []string
		for i, d := range s.delays {
			pts = append(pts, num(c.x(i+1))+","+num(c.y(d)))
		}
		p.Printf(`<polyline id="%s" points="%s" fill="none" stroke="%s" stroke-width="2.5"%s/>`+"\n",
			s.curve, strings.Join(pts, " "), s.color, svgplot.DashAttr(s.dash))
	}
	for _, s := range all {
		p.Printf(`<g fill="%s">`+"\n", s.color)
		for i, d := range s.delays {
			p.Printf(`<circle cx="%s" cy="%s" r="3.5"/>`+"\n", num(c.x(i+1)), num(c.y(d)))
		}
		p.Printf("</g>\n")
	}

	// The legend, in SNS's order.
	p.Printf(`<text x="%d" y="%d" font-weight="bold">backoffFunction</text>`+"\n", legendLeft, plotTop+4)
	for i, s := range all {
		y := plotTop + 30 + 44*i
		p.Printf(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`+"\n",
			legendLeft, y, legendLeft+36, y, s.color, svgplot.DashAttr(s.dash))
		p.Printf(`<circle cx="%d" cy="%d" r="3.5" fill="%s"/>`+"\n", legendLeft+18, y, s.color)
		p.Printf(`<text x="%d" y="%d">%s</text>`+"\n", legendLeft+46, y+4, s.curve)
		p.Printf(`<text x="%d" y="%d" font-size="11" fill="#555">%s in all</text>`+"\n", legendLeft+46, y+19, svgplot.Escape(secText(s.total)))
	}
	p.Printf(`<text x="%d" y="%d" font-size="11" fill="#555">SNS publishes this chart but no formulas; these are package backoff's (see backoff.Curve).</text>`+"\n",
		plotLeft, svgHeight-10)
	p.Printf("</svg>\n")
	return p.Err
}

// num formats a coordinate or a tick value with at most two decimals and
// no trailing zeros, so the output does not depend on float formatting
// defaults.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// secText formats sec seconds for a label, with thousands separators and
// at most two decimals: "1,325 s", "722.63 s".
func secText(sec float64) string {
	whole := math.Floor(sec)
	frac := strings.TrimPrefix(num(sec-whole), "0")
	if frac == "1" { // the fraction rounded up to a whole second
		whole, frac = whole+1, ""
	}
	return commas(int(whole)) + frac + " s"
}
