package main

import (
	"io"
	"net/http"
	"os"
	"testing"
)

// TestNginxServer starts the scenario's nginx, sends it more requests at
// once than its burst admits, and checks that the excess is answered 429
// with Retry-After: 1 and the AWS throttling code, the rest 200 "ok"; then
// that Close stops it cleanly and removes its directory.
func TestNginxServer(t *testing.T) {
	path, err := findNginx()
	if err != nil {
		t.Fatalf("findNginx() = %v; want a binary (make deps installs nginx-light)", err)
	}
	s, err := startNginx(path)
	if err != nil {
		t.Fatalf("startNginx(%s) = %v; want a server", path, err)
	}
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: base}

	// Sequential keep-alive GETs take well under a millisecond each on
	// loopback: 3 × the burst leaves the bucket's 5 ms drain far behind.
	const n = 3 * nginxBurst
	statuses := map[int]int{}
	for i := range n {
		resp, err := client.Get(s.url + "/")
		if err != nil {
			_ = s.Close()
			t.Fatalf("GET %d of %d: %v", i+1, n, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("GET %d of %d: reading the body: %v", i+1, n, err)
		}
		statuses[resp.StatusCode]++
		switch resp.StatusCode {
		case http.StatusOK:
			if string(body) != "ok" {
				t.Errorf("GET %d of %d: 200 with body %q; want \"ok\"", i+1, n, body)
			}
		case http.StatusTooManyRequests:
			for _, h := range []struct{ name, want string }{
				{"Retry-After", "1"},
				{"X-Amzn-ErrorType", "ThrottlingException"},
				{"Content-Type", "application/json"},
			} {
				if got := resp.Header.Get(h.name); got != h.want {
					t.Errorf("GET %d of %d: 429 with %s %q; want %q", i+1, n, h.name, got, h.want)
				}
			}
			if want := `{"__type":"ThrottlingException","message":"Rate exceeded"}`; string(body) != want {
				t.Errorf("GET %d of %d: 429 with body %q; want %q", i+1, n, body, want)
			}
		default:
			t.Errorf("GET %d of %d: status %d; want 200 or 429", i+1, n, resp.StatusCode)
		}
	}
	// From idle, limit_req admits burst+1 at once, plus one per 5 ms.
	if ok := statuses[http.StatusOK]; ok < nginxBurst+1 || statuses[http.StatusTooManyRequests] == 0 {
		t.Errorf("%d GETs at once: %d answered 200, %d 429; want at least %d 200s and some 429s",
			n, ok, statuses[http.StatusTooManyRequests], nginxBurst+1)
	}

	base.CloseIdleConnections()
	if err := s.Close(); err != nil {
		t.Errorf("Close() = %v; want nil", err)
	}
	if _, err := client.Get(s.url + "/ready"); err == nil {
		t.Errorf("GET %s/ready after Close succeeded; want an error", s.url)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("after Close, stat %s = %v; want it removed", s.dir, err)
	}
}
