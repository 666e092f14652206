package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

const (
	faultWorkers = 8
	dropShare    = 0.2 // of requests whose connection the server drops
)

// faultRun is one contender's result for one method with connection faults.
type faultRun struct {
	failed     int
	perReq     float64 // server hits per logical request
	duplicates int64   // requests whose id the server had already processed
	drops      int64   // connections the server dropped
	conns      int64
}

// runFaults sends GETs and then 1 KiB POSTs (GetBody set) to a server that
// reads each request and then, for one request in five, closes the
// connection without a response. Replaying such a POST may execute it
// twice: the server counts a request whose id it has already read in full
// as a duplicate.
func runFaults(w io.Writer, cfg config, cs []contender) {
	gets := make([]faultRun, len(cs))
	posts := make([]faultRun, len(cs))
	for i, c := range cs {
		gets[i] = faults(cfg, c, http.MethodGet)
		posts[i] = faults(cfg, c, http.MethodPost)
	}
	t := &table{
		title: fmt.Sprintf("connection faults: %.0f %% of requests read, then their connection closed without a response (%d workers, %d GETs, then %d POSTs)",
			100*dropShare, faultWorkers, cfg.faultRequests, cfg.faultRequests),
		notes: []string{"\"POSTs replayed\" counts POSTs the server received again after reading them in full once. " +
			"net/http itself resends a GET whose reused connection closed before any response byte.", waitsNote},
		cols: []string{"contender", "GET failed", "GET hits/request", "GET conns", "POST failed", "POSTs replayed", "POST hits/request", "POST conns"},
	}
	for i, c := range cs {
		g, p := gets[i], posts[i]
		t.add(c.name, fmt.Sprint(g.failed), ratio(g.perReq), count(g.conns),
			fmt.Sprint(p.failed), count(p.duplicates), ratio(p.perReq), count(p.conns))
	}
	t.write(w)
	var goals []goal
	for i, c := range cs {
		if c.kind != kindOurs {
			continue
		}
		goals = append(goals,
			goal{posts[i].duplicates == 0, fmt.Sprintf("%s zero duplicated POSTs: %d", c.name, posts[i].duplicates)},
			faultConnGoal(c.name+" (GET)", gets[i], gets[0]),
			faultConnGoal(c.name+" (POST)", posts[i], posts[0]))
	}
	writeGoals(w, goals)
}

// faultConnGoal is connGoal, with the number of connections the server
// dropped: each drop forces a new connection, and a retried request may be
// dropped again.
func faultConnGoal(name string, r, bare faultRun) goal {
	g := connGoal(name, r.conns, bare.conns, faultWorkers)
	g.text += fmt.Sprintf(" (the server dropped %d of its connections, %d of bare's)", r.drops, bare.drops)
	return g
}

func faults(cfg config, c contender, method string) faultRun {
	var mu sync.Mutex
	seen := make(map[string]bool)      // ids whose body was read in full; guarded by mu
	rng := rand.New(rand.NewPCG(1, 2)) // the same drops for every contender; guarded by mu
	var dups, drops atomic.Int64
	srv := newServer(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return // the client went away mid-body: nothing was processed
		}
		id := r.Header.Get("X-Request-Id")
		mu.Lock()
		if seen[id] {
			dups.Add(1)
		}
		seen[id] = true
		drop := rng.Float64() < dropShare
		mu.Unlock()
		if drop {
			drops.Add(1)
			dropConn(w)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	defer srv.Close()
	base := newBase()
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: c.wrap(base)}

	payload := bytes.Repeat([]byte("x"), 1024)
	n := cfg.faultRequests
	outs := runCount(faultWorkers, n, func(ctx context.Context, i int) outcome {
		var body io.Reader
		if method == http.MethodPost {
			body = bytes.NewReader(payload) // sets GetBody
		}
		req, _ := http.NewRequest(method, srv.URL, body)
		req.Header.Set("X-Request-Id", strconv.Itoa(i))
		return send(ctx, client, req)
	})
	return faultRun{
		failed:     failures(outs),
		perReq:     float64(srv.hits.Load()) / float64(n),
		duplicates: dups.Load(),
		drops:      drops.Load(),
		conns:      srv.conns.Load(),
	}
}
