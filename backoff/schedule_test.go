package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/backoff"
)

// near reports whether got is within 1µs of want: the backoff curves are
// computed in float64, and the hand-computed values below are rounded.
func near(got, want time.Duration) bool {
	d := got - want
	return -time.Microsecond <= d && d <= time.Microsecond
}

// ns returns n nanoseconds, to keep the long tables below readable.
func ns(n int64) time.Duration { return time.Duration(n) }

// chart returns the schedule of SNS's chart: 10 backoff retries from 5s to 260s.
func chart(c backoff.Curve) backoff.Schedule {
	return backoff.Schedule{MinDelay: 5 * time.Second, MaxDelay: 260 * time.Second, NumRetries: 10, BackoffFunction: c}
}

func TestScheduleChartCurves(t *testing.T) {
	// t = (i-1)/9, R = 52; values from the formulas of Curve, in exact
	// arithmetic, truncated to the nanosecond.
	tests := []struct {
		curve backoff.Curve
		want  []time.Duration
		total time.Duration
	}{
		{backoff.CurveLinear, []time.Duration{ // 5 + 255t
			ns(5e9), ns(33333333333), ns(61666666666), ns(90e9), ns(118333333333),
			ns(146666666666), ns(175e9), ns(203333333333), ns(231666666666), ns(260e9),
		}, 1325 * time.Second},
		{backoff.CurveArithmetic, []time.Duration{ // 5 + 255t²
			ns(5e9), ns(8148148148), ns(17592592592), ns(33333333333), ns(55370370370),
			ns(83703703703), ns(118333333333), ns(159259259259), ns(206481481481), ns(260e9),
		}, ns(947222222222)},
		{backoff.CurveExponential, []time.Duration{ // 5 * 52^t
			ns(5e9), ns(7755986464), ns(12031065209), ns(18662555784), ns(28949306012),
			ns(44906085121), ns(69658197678), ns(108053607674), ns(167612463723), ns(260e9),
		}, ns(722629267668)},
		{backoff.CurveGeometric, []time.Duration{ // 265 - 5 * 52^(1-t)
			ns(5e9), ns(97387536276), ns(156946392325), ns(195341802321), ns(220093914878),
			ns(236050693987), ns(246337444215), ns(252968934790), ns(257244013535), ns(260e9),
		}, ns(1927370732332)},
	}
	for _, tt := range tests {
		t.Run(tt.curve.String(), func(t *testing.T) {
			s := chart(tt.curve)
			for i, want := range tt.want {
				if got := s.Delay(i + 1); !near(got, want) {
					t.Errorf("Schedule{5s..260s, 10, %v}.Delay(%d) = %v; want %v", tt.curve, i+1, got, want)
				}
			}
			if got := s.Delay(11); got != 260*time.Second {
				t.Errorf("Schedule{5s..260s, 10, %v}.Delay(11) = %v; want 4m20s past the policy", tt.curve, got)
			}
			if got := s.Total(); got-tt.total < -10*time.Microsecond || got-tt.total > 10*time.Microsecond {
				t.Errorf("Schedule{5s..260s, 10, %v}.Total() = %v; want %v", tt.curve, got, tt.total)
			}
		})
	}
}

func TestScheduleCurvesEndsExact(t *testing.T) {
	for c := backoff.CurveLinear; c <= backoff.CurveGeometric; c++ {
		s := backoff.Schedule{MinDelay: 7 * time.Second, MaxDelay: 3599 * time.Second, NumRetries: 13, BackoffFunction: c}
		if got := s.Delay(1); got != 7*time.Second {
			t.Errorf("Schedule{7s..3599s, %v}.Delay(1) = %v; want 7s exactly", c, got)
		}
		if got := s.Delay(13); got != 3599*time.Second {
			t.Errorf("Schedule{7s..3599s, %v}.Delay(13) = %v; want 3599s exactly", c, got)
		}
		for retry := 2; retry <= 13; retry++ {
			if prev, got := s.Delay(retry-1), s.Delay(retry); got <= prev {
				t.Errorf("Schedule{7s..3599s, %v}: Delay(%d) = %v <= Delay(%d) = %v; want rising", c, retry, got, retry-1, prev)
			}
		}
	}
}

func TestScheduleCurvesAreDistinct(t *testing.T) {
	// Half-way through the chart's phase (retry 5 of 10), the curves lie
	// in this order: geometric above linear above arithmetic above
	// exponential.
	order := []backoff.Curve{backoff.CurveGeometric, backoff.CurveLinear, backoff.CurveArithmetic, backoff.CurveExponential}
	for i := 1; i < len(order); i++ {
		hi, lo := chart(order[i-1]).Delay(5), chart(order[i]).Delay(5)
		if hi <= lo {
			t.Errorf("Delay(5): %v gives %v, %v gives %v; want the first above the second", order[i-1], hi, order[i], lo)
		}
	}
}

func TestScheduleDefaults(t *testing.T) {
	var s backoff.Schedule
	for _, retry := range []int{math.MinInt, 0, 1, 2, 3, 4, math.MaxInt} {
		if got := s.Delay(retry); got != 20*time.Second {
			t.Errorf("Schedule{}.Delay(%d) = %v; want 20s", retry, got)
		}
	}
	if got := s.Total(); got != time.Minute {
		t.Errorf("Schedule{}.Total() = %v; want 1m0s", got)
	}
}

// row is a run of retries, from first to last inclusive, that all wait want.
type row struct {
	first, last int
	want        time.Duration
}

// checkRows checks s.Delay for the first, last and, when the run is long,
// middle retry of each row.
func checkRows(t *testing.T, name string, s backoff.Schedule, rows []row) {
	t.Helper()
	for _, r := range rows {
		for _, retry := range []int{r.first, r.first + (r.last-r.first)/2, r.last} {
			if got := s.Delay(retry); !near(got, r.want) {
				t.Errorf("%s.Delay(%d) = %v; want %v", name, retry, got, r.want)
			}
		}
	}
}

func TestScheduleAWSManagedPreset(t *testing.T) {
	s := backoff.Schedule{
		MinDelay: time.Second, MaxDelay: 20 * time.Second, NumRetries: 100015,
		NumNoDelayRetries: 3, NumMinDelayRetries: 2, NumMaxDelayRetries: 100000,
		BackoffFunction: backoff.CurveExponential,
	}
	checkRows(t, "AWS-managed", s, []row{
		{1, 3, 0},
		{4, 5, time.Second},
		// 20^((i-1)/9) s.
		{6, 6, time.Second}, {7, 7, ns(1394950793)}, {8, 8, ns(1945887717)},
		{9, 9, ns(2714417616)}, {10, 10, ns(3786479009)}, {11, 11, ns(5281951900)},
		{12, 12, ns(7368062997)}, {13, 13, ns(10278085328)}, {14, 14, ns(14337423288)},
		{15, 15, 20 * time.Second},
		{16, 100015, 20 * time.Second},
		{100016, math.MaxInt, 20 * time.Second}, // past the policy
	})
	// 2*1s + 68.107259...s + 100000*20s: about 23.1 days.
	if got, want := s.Total(), ns(2000070107258652); got-want < -10*time.Microsecond || got-want > 10*time.Microsecond {
		t.Errorf("AWS-managed Total() = %v; want %v", got, want)
	}
}

func TestScheduleCustomerManagedPreset(t *testing.T) {
	s := backoff.Schedule{
		MinDelay: 10 * time.Second, MaxDelay: 600 * time.Second, NumRetries: 50,
		NumMinDelayRetries: 2, NumMaxDelayRetries: 38,
		BackoffFunction: backoff.CurveExponential,
	}
	checkRows(t, "customer-managed", s, []row{
		{1, 2, 10 * time.Second},
		// 10 * 60^((i-1)/9) s.
		{3, 3, 10 * time.Second}, {4, 4, ns(15760586001)}, {5, 5, ns(24839607111)},
		{6, 6, ns(39148676411)}, {7, 7, ns(61700608143)}, {8, 8, ns(97243774098)},
		{9, 9, ns(153261886478)}, {10, 10, ns(241549714259)}, {11, 11, ns(380696504522)},
		{12, 12, 600 * time.Second},
		{13, 50, 600 * time.Second},
		{51, 1000, 600 * time.Second},
	})
	// 2*10s + 1624.201357s + 38*600s: about 6.8 hours.
	if got, want := s.Total(), ns(24444201357027); got-want < -10*time.Microsecond || got-want > 10*time.Microsecond {
		t.Errorf("customer-managed Total() = %v; want %v", got, want)
	}
}

func TestScheduleExamplePolicy(t *testing.T) {
	// The SNS guide's example: 50 retries, 3 immediate, 2 at 1s, 10 backing off
	// exponentially from 1s to 60s, 35 at 60s.
	s := backoff.Schedule{
		MinDelay: time.Second, MaxDelay: 60 * time.Second, NumRetries: 50,
		NumNoDelayRetries: 3, NumMinDelayRetries: 2, NumMaxDelayRetries: 35,
		BackoffFunction: backoff.CurveExponential,
	}
	checkRows(t, "example", s, []row{
		{1, 3, 0},
		{4, 5, time.Second},
		// 60^((i-1)/9) s.
		{6, 6, time.Second}, {7, 7, ns(1576058600)}, {8, 8, ns(2483960711)},
		{9, 9, ns(3914867641)}, {10, 10, ns(6170060814)}, {11, 11, ns(9724377409)},
		{12, 12, ns(15326188647)}, {13, 13, ns(24154971425)}, {14, 14, ns(38069650452)},
		{15, 15, time.Minute},
		{16, 50, time.Minute},
	})
	// 2*1s + 162.420136s + 35*60s, within SNS's 3,600s for HTTP/S.
	if got, want := s.Total(), ns(2264420135703); got-want < -10*time.Microsecond || got-want > 10*time.Microsecond {
		t.Errorf("example Total() = %v; want %v", got, want)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("example Validate() = %v; want nil", err)
	}
}

func TestSchedulePhaseEdges(t *testing.T) {
	tests := []struct {
		name string
		s    backoff.Schedule
		rows []row
	}{
		{"one_backoff_retry_waits_min",
			backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Minute, NumRetries: 1, BackoffFunction: backoff.CurveExponential},
			[]row{{1, 1, time.Second}, {2, 3, time.Minute}}},
		{"two_backoff_retries",
			backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Minute, NumRetries: 2, BackoffFunction: backoff.CurveGeometric},
			[]row{{1, 1, time.Second}, {2, 3, time.Minute}}},
		// 2 + 2 + 2 > 3: no backoff phase, the three phases kept whole.
		{"phases_above_num_retries",
			backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Minute, NumNoDelayRetries: 2, NumMinDelayRetries: 2, NumMaxDelayRetries: 2},
			[]row{{1, 2, 0}, {3, 4, time.Second}, {5, 100, time.Minute}}},
		{"negative_counts_are_zero",
			backoff.Schedule{MinDelay: time.Second, MaxDelay: 3 * time.Second, NumRetries: 3, NumNoDelayRetries: -1, NumMinDelayRetries: -1, NumMaxDelayRetries: -1},
			[]row{{1, 1, time.Second}, {2, 2, 2 * time.Second}, {3, 4, 3 * time.Second}}},
		{"negative_num_retries_is_default",
			backoff.Schedule{MinDelay: time.Second, MaxDelay: 3 * time.Second, NumRetries: -5},
			[]row{{1, 1, time.Second}, {2, 2, 2 * time.Second}, {3, 4, 3 * time.Second}}},
		{"min_above_max_is_lowered",
			backoff.Schedule{MinDelay: time.Minute, MaxDelay: time.Second, NumRetries: 5, NumMinDelayRetries: 1},
			[]row{{1, 10, time.Second}}},
		{"min_above_default_max",
			backoff.Schedule{MinDelay: time.Minute},
			[]row{{1, 10, 20 * time.Second}}},
		{"negative_delays_are_default",
			backoff.Schedule{MinDelay: -1, MaxDelay: -1},
			[]row{{1, 10, 20 * time.Second}}},
		{"unknown_curve_is_linear",
			backoff.Schedule{MinDelay: time.Second, MaxDelay: 3 * time.Second, BackoffFunction: backoff.Curve(42)},
			[]row{{1, 1, time.Second}, {2, 2, 2 * time.Second}, {3, 3, 3 * time.Second}}},
		{"huge_immediate_phase",
			backoff.Schedule{NumNoDelayRetries: math.MaxInt},
			[]row{{1, math.MaxInt, 0}}},
		{"huge_phases",
			backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Minute, NumNoDelayRetries: math.MaxInt, NumMinDelayRetries: math.MaxInt, NumMaxDelayRetries: math.MaxInt},
			[]row{{1, math.MaxInt, 0}}},
		{"huge_backoff_phase",
			backoff.Schedule{MinDelay: time.Second, MaxDelay: 3 * time.Second, NumRetries: math.MaxInt},
			[]row{{1, 1, time.Second}, {math.MaxInt/2 + 1, math.MaxInt/2 + 1, 2 * time.Second}, {math.MaxInt, math.MaxInt, 3 * time.Second}}},
		{"retry_below_one_is_one",
			backoff.Schedule{NumNoDelayRetries: 1},
			[]row{{math.MinInt, math.MinInt, 0}, {-1, 1, 0}, {2, 3, 20 * time.Second}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRows(t, "Schedule", tt.s, tt.rows)
		})
	}
}

func TestScheduleTotal(t *testing.T) {
	tests := []struct {
		name string
		s    backoff.Schedule
		want time.Duration
	}{
		{"phases", backoff.Schedule{MinDelay: time.Second, MaxDelay: 3 * time.Second, NumRetries: 6, NumNoDelayRetries: 1, NumMinDelayRetries: 1, NumMaxDelayRetries: 1},
			1*time.Second + (1+2+3)*time.Second + 3*time.Second},
		{"phases_above_num_retries", backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Minute, NumNoDelayRetries: 2, NumMinDelayRetries: 2, NumMaxDelayRetries: 2},
			2*time.Second + 2*time.Minute},
		{"immediate_only", backoff.Schedule{NumRetries: 5, NumNoDelayRetries: 5}, 0},
		{"saturates", backoff.Schedule{MaxDelay: time.Hour, NumMaxDelayRetries: math.MaxInt}, math.MaxInt64},
		// Past 65,536 backoff retries the rest count at MaxDelay.
		{"huge_backoff_phase", backoff.Schedule{MinDelay: time.Nanosecond, MaxDelay: 2 * time.Nanosecond, NumRetries: math.MaxInt}, math.MaxInt64},
		{"long_backoff_phase_exact", backoff.Schedule{MinDelay: time.Second, MaxDelay: time.Second, NumRetries: 1 << 16}, (1 << 16) * time.Second},
		{"longer_backoff_phase_bound", backoff.Schedule{MinDelay: time.Second, MaxDelay: 2 * time.Second, NumRetries: 1<<16 + 10}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.s.Total()
			if tt.want < 0 { // an upper bound: between the exact sum and k*MaxDelay
				k := time.Duration(tt.s.NumRetries)
				if got < k*tt.s.MinDelay || got > k*tt.s.MaxDelay {
					t.Errorf("%+v.Total() = %v; want in [%v, %v]", tt.s, got, k*tt.s.MinDelay, k*tt.s.MaxDelay)
				}
				return
			}
			if got != tt.want {
				t.Errorf("%+v.Total() = %v; want %v", tt.s, got, tt.want)
			}
		})
	}
}

func TestScheduleJitter(t *testing.T) {
	customer := backoff.Schedule{
		MinDelay: 10 * time.Second, MaxDelay: 600 * time.Second, NumRetries: 50,
		NumMinDelayRetries: 2, NumMaxDelayRetries: 38,
		BackoffFunction: backoff.CurveExponential,
	}
	tests := []struct {
		name   string
		jitter float64
		r      float64
		retry  int
		want   time.Duration
	}{
		{"rand_zero_post_backoff", 1, 0, 13, 600 * time.Second},
		// 600 - 0.5 * (600 - 10).
		{"full_rand_half_post_backoff", 1, 0.5, 13, 305 * time.Second},
		{"full_rand_one_post_backoff", 1, 1, 13, 10 * time.Second},
		// 600 - 0.2 * 0.999999 * 590.
		{"fifth_just_under_one_post_backoff", 0.2, justUnderOne, 50, 482000118 * time.Microsecond},
		// 15.760586001 - 0.5 * 5.760586001.
		{"full_rand_half_backoff", 1, 0.5, 4, ns(12880293000)},
		{"pre_backoff_untouched", 1, 0.5, 1, 10 * time.Second},
		{"first_backoff_untouched", 1, 0.5, 3, 10 * time.Second},
		{"jitter_above_one_is_one", 7, 0.5, 13, 305 * time.Second},
		{"negative_jitter_is_none", -1, 0.5, 13, 600 * time.Second},
		{"nan_jitter_is_none", math.NaN(), 0.5, 13, 600 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := customer
			s.Jitter, s.Rand = tt.jitter, fixed(tt.r)
			if got := s.Delay(tt.retry); !near(got, tt.want) {
				t.Errorf("customer-managed Schedule{Jitter: %v, Rand: %v}.Delay(%d) = %v; want %v",
					tt.jitter, tt.r, tt.retry, got, tt.want)
			}
		})
	}
}

func TestScheduleJitterDrawsOnlyAboveMin(t *testing.T) {
	rand, calls := sequence(0.5)
	s := backoff.Schedule{
		MinDelay: time.Second, MaxDelay: time.Minute, NumRetries: 4,
		NumNoDelayRetries: 1, NumMinDelayRetries: 1, Jitter: 1, Rand: rand,
	}
	if got := s.Delay(1); got != 0 {
		t.Errorf("Schedule.Delay(1) = %v; want 0 for an immediate retry", got)
	}
	if got := s.Delay(2); got != time.Second {
		t.Errorf("Schedule.Delay(2) = %v; want 1s for a pre-backoff retry", got)
	}
	if *calls != 0 {
		t.Errorf("Schedule.Delay(1), Delay(2) called Rand %d times; want 0", *calls)
	}
	// The default SNS policy, MinDelay = MaxDelay = 20s, has no room to jitter.
	if got := (backoff.Schedule{Jitter: 1, Rand: rand}).Delay(2); got != 20*time.Second || *calls != 0 {
		t.Errorf("Schedule{Jitter: 1}.Delay(2) = %v after %d Rand calls; want 20s after none", got, *calls)
	}
}

func FuzzScheduleDelay(f *testing.F) {
	f.Add(1, int64(0), int64(0), 0, 0, 0, 0, 0, 0.0, 0.5)
	f.Add(6, int64(time.Second), int64(20*time.Second), 100015, 3, 2, 100000, 2, 0.0, 0.5)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, 9, math.NaN(), math.Inf(1))
	f.Add(math.MinInt, int64(-1), int64(-1), -1, -1, -1, -1, -1, -1.0, -1.0)
	f.Add(5, int64(1), int64(math.MaxInt64), 9, 0, 0, 0, 3, 1.0, justUnderOne)
	f.Fuzz(func(t *testing.T, retry int, minDelay, maxDelay int64, n, a, b, c, curve int, jitter, r float64) {
		s := backoff.Schedule{
			MinDelay: time.Duration(minDelay), MaxDelay: time.Duration(maxDelay), NumRetries: n,
			NumNoDelayRetries: a, NumMinDelayRetries: b, NumMaxDelayRetries: c,
			BackoffFunction: backoff.Curve(curve), Jitter: jitter, Rand: fixed(r),
		}
		lo, hi := s.MinDelay, s.MaxDelay
		if lo <= 0 {
			lo = 20 * time.Second
		}
		if hi <= 0 {
			hi = 20 * time.Second
		}
		lo = min(lo, hi)
		if got := s.Delay(retry); got != 0 && (got < lo || got > hi) {
			t.Fatalf("%+v.Delay(%d) = %d; want 0 or in [%d, %d]", s, retry, got, lo, hi)
		}
		if got := s.Total(); got < 0 {
			t.Fatalf("%+v.Total() = %d; want >= 0", s, got)
		}
	})
}
