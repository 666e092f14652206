package redisretry_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStart bounds how long a started redis-server has to answer PING.
const redisStart = 5 * time.Second

// redisServer is a redis-server process of the tests: on a loopback port,
// without persistence, killed when the test ends. It can be killed and
// started again on the same port, to play an outage.
type redisServer struct {
	path string
	port int
	addr string
	args []string // the command line after path; nil means a standalone server on port

	mu     sync.Mutex
	cmd    *exec.Cmd     // the running process; guarded by mu
	exited chan struct{} // closed when cmd has exited; guarded by mu
	out    *lockedBuffer // its output, for error messages
}

// startRedis starts a redis-server for t on a free loopback port and stops
// it when t ends. redis-server must be on PATH (CI installs it): without
// it the test fails, it does not skip.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	s, err := newRedisServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	return s
}

// newRedisServer starts a redis-server on a free loopback port; the caller
// must kill it.
func newRedisServer() (*redisServer, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not on PATH: the redisretry tests need a real Redis " +
			"(apt-get install redis-server; .ci/run installs it)")
	}
	var last error
	for range 3 { // a port found free may be taken before redis-server binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &redisServer{path: path, port: port, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		if last = s.start(); last == nil {
			return s, nil
		}
	}
	return nil, last
}

// start starts redis-server on s's port and waits until it answers PING.
func (s *redisServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out = &lockedBuffer{}
	args := s.args
	if args == nil {
		args = []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
			"--save", "", "--appendonly", "no", "--enable-debug-command", "local"}
	}
	s.cmd = exec.Command(s.path, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = childAttr()
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited, cmd := make(chan struct{}), s.cmd
	s.exited = exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(redisStart)
	for time.Now().Before(deadline) {
		if ping(s.addr) == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on port %d exited at start: %s", s.port, strings.TrimSpace(s.out.String()))
		case <-time.After(5 * time.Millisecond):
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server on %s did not answer PING within %v", s.addr, redisStart)
}

// kill kills the server, as a crash would, and waits until it has exited.
// It may be called more than once.
func (s *redisServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// restart starts the killed server again on the same port, empty.
func (s *redisServer) restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
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
	o.Addr = s.addr
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ping sends one PING to the Redis at addr and reads the PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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
