package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/retrytransport/retrytransport/internal/childproc"
)

// redisServer is a redis-server child process on a free 127.0.0.1 port,
// with persistence off, for the fleet-on-Redis tables.
type redisServer struct {
	addr string // host:port
	proc *childproc.Process
}

// redisStartTimeout bounds the wait for a started redis-server to answer
// PING.
const redisStartTimeout = 10 * time.Second

// startRedis starts redis-server from PATH on a free loopback port and
// waits until it answers PING. A port another process takes between the
// probe and the server's bind makes it try again, on a new port.
func startRedis() (*redisServer, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("the fleet-redis scenario needs redis-server on PATH (Debian: apt-get install redis-server): %w", err)
	}
	var lastErr error
	for range 3 {
		s, err := startRedisAt(path)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// startRedisAt runs the redis-server at path once, on a free port.
func startRedisAt(path string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p, err := childproc.Start("redis-server on "+addr, exec.Command(path,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no",
		"--protected-mode", "yes", "--logfile", "", "--loglevel", "warning"))
	if err != nil {
		return nil, fmt.Errorf("starting %w", err)
	}
	if err := p.WaitReady(context.Background(), redisStartTimeout, func(context.Context) error { return ping(addr) }); err != nil {
		return nil, err
	}
	return &redisServer{addr: addr, proc: p}, nil
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends one PING to the server at addr on a new connection and
// checks the answer.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return errors.New("redis-server answered PING with " + strconv.Quote(line))
	}
	return nil
}

// stop kills the server and waits for it to exit.
func (s *redisServer) stop() { s.proc.Kill() }
