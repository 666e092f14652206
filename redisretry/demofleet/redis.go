package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/retrytransport/retrytransport/redisretry/internal/redisproc"
)

// errNoRedis is returned by startRedis when no redis-server is on PATH.
var errNoRedis = errors.New("demofleet: redis-server not found on PATH; install Redis (apt-get install redis-server, brew install redis) and try again")

// startRedis starts a redis-server from PATH on a free 127.0.0.1 port,
// without persistence, and returns once it answers PING (see
// redisproc.Start). The caller must call Kill, whatever happens next.
// When ctx ends first, the error matches ctx's.
func startRedis(ctx context.Context) (*redisproc.Server, error) {
	s, err := redisproc.Start(ctx, func(port int) ([]string, error) {
		return redisproc.Standalone(port), nil
	})
	switch {
	case errors.Is(err, redisproc.ErrNotFound):
		return nil, errNoRedis
	case err != nil:
		return nil, fmt.Errorf("demofleet: %w", err)
	}
	return s, nil
}
