package main

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRedisServer starts a redis-server, checks that it answers and that
// stop ends it.
func TestRedisServer(t *testing.T) {
	s, err := startRedis()
	if err != nil {
		t.Fatalf("startRedis() = %v; want a server", err)
	}
	if err := ping(s.addr); err != nil {
		s.stop()
		t.Fatalf("ping(%s) = %v; want nil", s.addr, err)
	}
	s.stop()
	if err := ping(s.addr); err == nil {
		t.Errorf("ping(%s) after stop = nil; want an error", s.addr)
	}
}

// TestRoundTrips checks that a client dialled through roundTrips counts a
// command and a pipeline as one round trip each, and leaves warm's out.
func TestRoundTrips(t *testing.T) {
	s, err := startRedis()
	if err != nil {
		t.Fatalf("startRedis() = %v; want a server", err)
	}
	defer s.stop()
	var rt roundTrips
	c := redis.NewClient(&redis.Options{Addr: s.addr, Dialer: rt.dial})
	defer c.Close()
	rt.warm(c, 2)

	if got, writes := rt.count(), rt.n.Load(); got != 0 || writes == 0 {
		t.Errorf("after warm(c, 2): count() = %d over %d writes; want 0 over some, the warm-up's left out", got, writes)
	}
	ctx := context.Background()
	start := rt.count()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "v", 0)
		p.Get(ctx, "k")
		p.Del(ctx, "k")
		return nil
	}); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if got := rt.count() - start; got != 2 {
		t.Errorf("round trips of a PING and a pipeline of 3 = %d; want 2", got)
	}
}
