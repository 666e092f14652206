package main

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
	"time"
)

// redisStartTimeout bounds how long startRedis waits for a started
// redis-server to answer PING.
const redisStartTimeout = 5 * time.Second

// errNoRedis is returned by startRedis when no redis-server is on PATH.
var errNoRedis = errors.New("demofleet: redis-server not found on PATH; install Redis (apt-get install redis-server, brew install redis) and try again")

// redisServer is a redis-server process that belongs to the demo: it
// listens on a free loopback port, keeps nothing on disk, and is killed by
// stop.
type redisServer struct {
	addr   string        // host:port it listens on
	cmd    *exec.Cmd     // the process
	exited chan struct{} // closed once the process has exited and been reaped
	out    *capped       // its standard output and error, for error messages
}

// startRedis starts a redis-server from PATH on a free 127.0.0.1 port,
// without persistence, and returns once it answers PING. The caller must
// call stop, which kills it, whatever happens next. A port taken between
// the moment it was found free and redis-server's bind is tried again, up
// to three times.
func startRedis(ctx context.Context) (*redisServer, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errNoRedis
	}
	for range 3 {
		s, err := launch(ctx, path)
		if err == nil || !strings.Contains(err.Error(), "Address already in use") {
			return s, err
		}
	}
	return nil, errors.New("demofleet: redis-server found no free port after 3 tries")
}

// launch starts one redis-server at path on a port that was free a moment
// ago and waits for it to answer PING.
func launch(ctx context.Context, path string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &redisServer{
		addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		exited: make(chan struct{}),
		out:    &capped{max: 4 << 10},
	}
	s.cmd = exec.Command(path,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no")
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = childAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("demofleet: start redis-server: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls s with PING until it answers, it exits, ctx ends or
// redisStartTimeout passes.
func (s *redisServer) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, redisStartTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ping(ctx, s.addr) == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("demofleet: redis-server exited at start: %s", strings.TrimSpace(s.out.String()))
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("demofleet: redis-server on %s did not answer PING within %v", s.addr, redisStartTimeout)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stop kills s and waits until it has exited. It may be called more than
// once.
func (s *redisServer) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// ping sends one PING to the Redis at addr and reads the +PONG.
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("demofleet: PING answered %q", line)
	}
	return nil
}

// freePort returns a loopback TCP port that nothing listened on a moment
// ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("demofleet: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// capped keeps the first max bytes written to it and drops the rest. It is
// safe for concurrent use.
type capped struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

// Write keeps what still fits and reports all of p as written.
func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p[:min(len(p), max(0, c.max-c.buf.Len()))])
	return len(p), nil
}

// String returns what was kept.
func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
