package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
)

// server is a loopback HTTP/1.1 server that counts what the scenarios
// report about every contender: the connections it accepted and the
// requests (attempts, not logical requests) it served. Each contender gets
// its own server in each scenario, so no count or server state is shared.
type server struct {
	*httptest.Server
	conns atomic.Int64 // connections opened (http.StateNew)
	hits  atomic.Int64 // requests that reached the handler
}

// newServer starts a server on 127.0.0.1 that runs h for every request.
func newServer(h http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	return s
}

// okHandler reads the request body and answers 200 "ok": a healthy server.
func okHandler(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = w.Write([]byte("ok"))
}

// dropConn closes the request's connection without writing a response,
// after the handler has read the body: to the client, the server may have
// acted on the request, which is what makes a replay of a POST a duplicate.
func dropConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("bench: loopback HTTP/1.1 server cannot hijack") // a harness bug
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		conn.Close()
	}
}
