package redisretry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/retrytransport/retrytransport/redisretry/internal/redisproc"
)

// redisServer is a redis-server process of the tests: on a loopback port,
// without persistence, killed when the test ends. It can be killed and
// started again on the same port, to play an outage.
type redisServer struct {
	*redisproc.Server
}

// errNoRedis is the tests' failure when redis-server is not on PATH.
var errNoRedis = errors.New("redis-server is not on PATH: the redisretry tests need a real Redis " +
	"(apt-get install redis-server; .ci/run installs it)")

// startRedis starts a standalone redis-server for t on a free loopback
// port and kills it when t ends. redis-server must be on PATH (CI installs
// it): without it the test fails, it does not skip.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	return startServer(t, "redis-server", standalone)
}

// startServer starts a redis-server for t with the command line args
// returns for a free loopback port (see redisproc.Start), and kills it
// when t ends; what names the server in the failure if it cannot start.
func startServer(t testing.TB, what string, args func(port int) ([]string, error)) *redisServer {
	t.Helper()
	s, err := newServer(t.Context(), args)
	if err != nil {
		t.Fatalf("start %s: %v", what, err)
	}
	t.Cleanup(s.Kill)
	return s
}

// newServer starts a redis-server with the command line args returns for
// a free loopback port; the caller must kill it.
func newServer(ctx context.Context, args func(port int) ([]string, error)) (*redisServer, error) {
	s, err := redisproc.Start(ctx, args)
	if errors.Is(err, redisproc.ErrNotFound) {
		return nil, errNoRedis
	}
	if err != nil {
		return nil, err
	}
	return &redisServer{s}, nil
}

// standalone is the command line of the tests' standalone servers, with
// the DEBUG command (for DEBUG SLEEP) enabled.
func standalone(port int) ([]string, error) {
	return redisproc.Standalone(port, "--enable-debug-command", "local"), nil
}

// restart starts the killed server again on the same port, empty.
func (s *redisServer) restart(t testing.TB) {
	t.Helper()
	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// client returns a new client of s, closed when t ends. opt's Addr is set
// to s's; nil means the defaults.
func (s *redisServer) client(t testing.TB, opt *redis.Options) *redis.Client {
	t.Helper()
	if opt == nil {
		opt = &redis.Options{}
	}
	o := *opt
	o.Addr = s.Addr
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// exampleRedis is the server the examples use, started by TestMain.
var exampleRedis *redisServer

// redisAddr is exampleRedis's address, as the examples read it.
var redisAddr string

// keys returns the keys in the Redis at addr that match pattern.
func keys(t testing.TB, c *redis.Client, pattern string) []string {
	t.Helper()
	ks, err := c.Keys(context.Background(), pattern).Result()
	if err != nil {
		t.Fatalf("KEYS %s: %v", pattern, err)
	}
	return ks
}
