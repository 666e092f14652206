package main

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestHangServer checks that the hanging server answers before its hang,
// takes a request in the hang and never answers it, answers again from
// its recovery on, and records the hung request with its arrival time.
func TestHangServer(t *testing.T) {
	srv := newHangServer(time.Millisecond)
	defer srv.close()
	hangAt := time.Now().Add(100 * time.Millisecond)
	recoverAt := hangAt.Add(300 * time.Millisecond)
	srv.hang(hangAt, recoverAt)

	if ok, _ := getWithin(srv.URL, time.Second); !ok {
		t.Errorf("GET before the hang failed; want 200")
	}
	time.Sleep(time.Until(hangAt))
	sent := time.Now()
	if ok, took := getWithin(srv.URL, 150*time.Millisecond); ok || took < 150*time.Millisecond {
		t.Errorf("GET in the hang: succeeded %t after %v; want no answer within its 150ms", ok, took)
	}
	time.Sleep(time.Until(recoverAt))
	if ok, took := getWithin(srv.URL, time.Second); !ok || took > 100*time.Millisecond {
		t.Errorf("GET after the recovery: succeeded %t after %v; want 200 at once", ok, took)
	}
	hung := srv.hungRequests()
	if len(hung) != 1 || hung[0].at.Before(sent.Add(-time.Millisecond)) || !hung[0].at.Before(recoverAt) || hung[0].client != -1 {
		t.Errorf("hungRequests() = %v; want the one request sent at %v, from no fleet client", hung, sent)
	}
}

// TestHangServerNeverAnswersAHungRequest checks that a request taken in
// the hang gets no answer after the recovery either, and that close lets
// go of it at once, without an answer.
func TestHangServerNeverAnswersAHungRequest(t *testing.T) {
	srv := newHangServer(time.Millisecond)
	now := time.Now()
	srv.hang(now, now.Add(50*time.Millisecond))
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("GET taken in the hang ended before the server closed (%v); want no answer", err)
	case <-time.After(200 * time.Millisecond): // well past the recovery
	}
	closed := time.Now()
	srv.close()
	if took := time.Since(closed); took > time.Second {
		t.Errorf("close with a hung request took %v; want it at once", took)
	}
	if err := <-errc; err == nil {
		t.Errorf("GET taken in the hang got an answer when the server closed; want an error")
	}
}
