package backoff

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Curve is the backoffFunction of an SNS delivery policy (docs/sns.md): how
// the delays of a [Schedule]'s backoff phase grow from MinDelay at its
// first retry to MaxDelay at its last. The zero value is CurveLinear, SNS's
// default.
//
// SNS names four functions and publishes a chart of them (10 retries from
// 5s to 260s) but not their formulas. The formulas below are this
// package's: each passes through MinDelay at the first retry and MaxDelay
// at the last, rises monotonically, and has a shape of its own. For the
// i-th of k backoff retries, with t = (i-1)/(k-1) running from 0 to 1,
// min = MinDelay, max = MaxDelay and R = max/min:
//
//	linear       min + (max-min)*t           a straight line: equal steps
//	arithmetic   min + (max-min)*t²          steps that grow by a constant
//	exponential  min * R^t                   a geometric progression: each
//	                                         delay (max/min)^(1/(k-1)) times the last
//	geometric    max + min - min * R^(1-t)   exponential turned upside
//	                                         down: steps that shrink by that ratio
//
// Arithmetic and exponential start slowly and make their largest step at
// the end; geometric makes its largest step first and then levels off
// towards max, for a policy that should back off hard at once. A backoff
// phase of one retry waits min: the first-retry rule wins.
//
// The chart's case, 10 retries from 5s to 260s, in seconds:
//
//	retry i       1     2      3       4       5       6       7       8       9      10   total
//	linear        5  33.33  61.67   90.00  118.33  146.67  175.00  203.33  231.67  260  1325.00
//	arithmetic    5   8.15  17.59   33.33   55.37   83.70  118.33  159.26  206.48  260   947.22
//	exponential   5   7.76  12.03   18.66   28.95   44.91   69.66  108.05  167.61  260   722.63
//	geometric     5  97.39 156.95  195.34  220.09  236.05  246.34  252.97  257.24  260  1927.37
//
// Delays are computed in float64 and rounded to the nanosecond; the first
// and last retries of the phase are exact.
type Curve int

// The four backoff functions of SNS, in the order of its documentation's
// list. Their String forms are the names SNS uses in JSON.
const (
	CurveLinear      Curve = iota // "linear", the default
	CurveArithmetic               // "arithmetic"
	CurveExponential              // "exponential"
	CurveGeometric                // "geometric"
)

// curveNames holds the SNS JSON name of each Curve, indexed by value.
var curveNames = [...]string{"linear", "arithmetic", "exponential", "geometric"}

// String returns the name SNS uses for c in JSON, such as "exponential",
// or "Curve(n)" for a value that is none of the four.
func (c Curve) String() string {
	if c.valid() {
		return curveNames[c]
	}
	return "Curve(" + strconv.Itoa(int(c)) + ")"
}

// ParseCurve returns the Curve named s, one of the SNS JSON names
// "linear", "arithmetic", "exponential" and "geometric"; case is
// ignored. For any other s, including "", it returns CurveLinear and a
// *[FieldError] for the field BackoffFunction.
func ParseCurve(s string) (Curve, error) {
	for i, name := range curveNames {
		if strings.EqualFold(s, name) {
			return Curve(i), nil
		}
	}
	return CurveLinear, &FieldError{
		Field: "BackoffFunction",
		Value: strconv.Quote(s),
		Want:  "linear, arithmetic, exponential or geometric",
	}
}

// MarshalText returns the SNS name of c, so that a Curve is written to
// JSON as SNS writes it. It returns a *[FieldError] if c is none of the
// four.
func (c Curve) MarshalText() ([]byte, error) {
	if !c.valid() {
		return nil, &FieldError{Field: "BackoffFunction", Value: c.String(), Want: "one of the four Curve constants"}
	}
	return []byte(curveNames[c]), nil
}

// UnmarshalText sets c to the Curve that [ParseCurve] finds in text, and
// returns ParseCurve's error, leaving c unchanged, if there is none.
func (c *Curve) UnmarshalText(text []byte) error {
	v, err := ParseCurve(string(text))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// valid reports whether c is one of the four named curves.
func (c Curve) valid() bool {
	return c >= CurveLinear && c <= CurveGeometric
}

// at returns the delay of retry i of a backoff phase of k retries that
// runs from lo to hi, for 1 <= i <= k and 0 < lo <= hi. An unknown curve
// counts as CurveLinear. The result always lies in [lo, hi].
func (c Curve) at(i, k int, lo, hi time.Duration) time.Duration {
	switch {
	case i <= 1 || lo >= hi:
		return lo
	case i >= k:
		return hi
	}
	l, h := float64(lo), float64(hi)
	a, b := float64(i-1), float64(k-1)
	var v float64
	switch c {
	case CurveArithmetic:
		v = l + (h-l)*a*a/(b*b)
	case CurveExponential:
		v = l * math.Pow(h/l, a/b)
	case CurveGeometric:
		v = h + l - l*math.Pow(h/l, (b-a)/b)
	default: // CurveLinear
		// Multiplying before dividing keeps whole-second steps exact.
		v = l + (h-l)*a/b
	}
	return max(fromFloat(v, hi), lo)
}
