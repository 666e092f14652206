package main

import (
	"math"
	"net/http"
	"slices"
	"testing"
	"time"
)

// getStatuses sends n GETs to url one after another and returns their
// statuses, failing the test if one gets no response or a 429 without
// the throttling code or with a Retry-After.
func getStatuses(t *testing.T, url string, n int) []int {
	t.Helper()
	var got []int
	for range n {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			if h := resp.Header.Get("X-Amzn-ErrorType"); h != "ThrottlingException" {
				t.Errorf("GET %s: 429 with X-Amzn-ErrorType %q; want ThrottlingException", url, h)
			}
			if ra := resp.Header.Get("Retry-After"); ra != "" {
				t.Errorf("GET %s: 429 with Retry-After %q; want none", url, ra)
			}
		}
		got = append(got, resp.StatusCode)
	}
	return got
}

// TestCapacityServer checks that the capacity server admits its burst,
// answers the rest 429 with the AWS throttling code and no Retry-After,
// and counts hits and 429s only from its start, apart before and after the
// split.
func TestCapacityServer(t *testing.T) {
	// A bucket that refills once in 1000 s: the burst is all there is.
	srv := newCapacityServer(capacity{rate: 0.001, burst: 3})
	defer srv.Close()
	getStatuses(t, srv.URL, 1) // before the start: admitted, not counted
	now := time.Now()
	srv.count(now, now.Add(time.Hour), now.Add(2*time.Hour))
	want := []int{200, 200, 429, 429}
	if got := getStatuses(t, srv.URL, 4); !slices.Equal(got, want) {
		t.Errorf("capacity server (burst 3, one hit before counting) statuses = %v; want %v", got, want)
	}
	if all, after := srv.share429(); all != 0.5 || !math.IsNaN(after) {
		t.Errorf("share429() before the split = %v, %v; want 0.5, NaN", all, after)
	}
	srv.count(now, now.Add(-time.Second), now.Add(time.Hour))
	getStatuses(t, srv.URL, 2)
	if all, after := srv.share429(); all != 4.0/6 || after != 1 {
		t.Errorf("share429() after 2 more 429s past the split = %v, %v; want %v, 1", all, after, 4.0/6)
	}
}

// TestThrottleFirstServer checks that the server admits everything until
// told to throttle, then answers exactly the next k hits 429 (throttling
// code, no Retry-After) and admits everything again, as often as told.
func TestThrottleFirstServer(t *testing.T) {
	srv := newThrottleFirstServer()
	defer srv.Close()
	if got, want := getStatuses(t, srv.URL, 2), []int{200, 200}; !slices.Equal(got, want) {
		t.Errorf("throttle-first server, not armed: statuses = %v; want %v", got, want)
	}
	for _, k := range []int{3, 1} {
		srv.throttleNext(k)
		want := []int{200, 200}
		for range k {
			want = append([]int{429}, want...)
		}
		if got := getStatuses(t, srv.URL, k+2); !slices.Equal(got, want) {
			t.Errorf("throttle-first server after throttleNext(%d): statuses = %v; want %v", k, got, want)
		}
	}
}
