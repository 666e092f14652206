package redisretry_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quietLogger discards go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// TestMain starts the redis-server that the examples use, runs the tests
// and fails them if any goroutine outlives them: the package must start
// none, and every test closes the Redis clients it opens.
func TestMain(m *testing.M) {
	// go-redis logs every failed dial to stderr; the outage tests make many.
	redis.SetLogger(quietLogger{})
	s, err := newServer(context.Background(), standalone)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redisretry tests:", err)
		os.Exit(1)
	}
	exampleRedis, redisAddr = s, s.Addr
	code := m.Run()
	s.Kill()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: errors on successful test run:", err)
			code = 1
		}
	}
	os.Exit(code)
}
