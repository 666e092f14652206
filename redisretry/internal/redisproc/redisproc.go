// Package redisproc runs redis-server processes for the redisretry tests
// and the demofleet demo: each on a free 127.0.0.1 port, ready once it
// answers PING, dying with the process that started it, and killed, as a
// crash would, by [Server.Kill], which waits until it has exited; or
// stopped and continued, as a stalled host would be, by [Server.Pause]
// and [Server.Resume].
//
// It does not install Redis: redis-server must be on PATH, and [Start]
// returns [ErrNotFound] when it is not. It knows nothing of testing.T;
// the tests wrap it in their own cleanups and t.Fatal calls.
package redisproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrytransport/retrytransport/internal/childproc"
)

// StartTimeout bounds how long [Start] and [Server.Restart] wait for a
// started redis-server to answer PING.
const StartTimeout = 5 * time.Second

// startTries is how many ports Start tries: a port found free may be
// taken before redis-server binds it.
const startTries = 3

// pingTimeout bounds each PING that waits for a started server.
const pingTimeout = time.Second

// ErrNotFound is returned by [Start] when no redis-server is on PATH.
var ErrNotFound = errors.New("redisproc: redis-server not found on PATH")

// Server is a redis-server process started by [Start]. It listens on
// 127.0.0.1, and runs until [Server.Kill], which its starter must call,
// or until the starter exits (on Linux, its parent-death signal kills
// it). Its methods are safe for concurrent use.
type Server struct {
	Addr string // "127.0.0.1:Port", the address it listens on
	Port int    // the TCP port it listens on, the same after a Restart

	path string   // redis-server's path
	args []string // the command line after path

	mu      sync.Mutex
	proc    *childproc.Process // the process last started; guarded by mu
	running bool               // proc has not been killed; guarded by mu
}

// Start looks up redis-server on PATH, picks a free loopback port, starts
// redis-server with the command line args returns for that port, and
// returns once the server answers PING. args may write files the command
// line names; [Standalone] gives the usual command line. The caller must
// call [Server.Kill] once done.
//
// When redis-server exits at start because its port was taken between
// the moment it was found free and the bind, Start tries again on another
// port, up to three ports in all. It gives up when ctx ends or, for each
// port, after [StartTimeout] without an answer to PING.
//
// Start returns [ErrNotFound] when redis-server is not on PATH, the error
// args returns, or an error that includes the server's output when it
// exited at start; when ctx ends first, it returns an error that wraps
// ctx's.
func Start(ctx context.Context, args func(port int) ([]string, error)) (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotFound
	}
	var last error
	for range startTries {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		a, err := args(port)
		if err != nil {
			return nil, err
		}
		s := &Server{
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Port: port,
			path: path,
			args: a,
		}
		if last = s.Restart(ctx); last == nil {
			return s, nil
		}
		// redis-server tells a taken port only in its log (anet's bind
		// error, for the port and for a cluster bus port alike).
		if !strings.Contains(s.Output(), "Address already in use") {
			return nil, last
		}
	}
	return nil, fmt.Errorf("redisproc: redis-server found no free port in %d tries: %w", startTries, last)
}

// Standalone returns the command line of a standalone redis-server on
// 127.0.0.1:port that keeps nothing on disk (no RDB snapshots, no AOF),
// followed by extra.
func Standalone(port int, extra ...string) []string {
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no"}
	return append(args, extra...)
}

// start starts redis-server with s's command line and waits until it
// answers PING; on failure, nothing it started is left running. The
// caller holds s.mu.
func (s *Server) start(ctx context.Context) error {
	s.proc = nil
	p, err := childproc.Start("redis-server on "+s.Addr, exec.Command(s.path, s.args...))
	if err != nil {
		return fmt.Errorf("redisproc: start %w", err)
	}
	s.proc, s.running = p, true
	// Bound each PING: if something else took the port, the dial may
	// reach it, and it may never answer.
	if err := p.WaitReady(ctx, StartTimeout, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, pingTimeout)
		defer cancel()
		return Ping(ctx, s.Addr)
	}); err != nil {
		s.kill()
		return fmt.Errorf("redisproc: %w", err)
	}
	return nil
}

// Kill kills s with SIGKILL, as a crash would, and returns once the
// process has exited and been reaped. It may be called more than once,
// also after s exited on its own.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

// kill is Kill; the caller holds s.mu.
func (s *Server) kill() {
	if !s.running {
		return
	}
	s.proc.Kill()
	s.running = false
}

// Pause stops s with SIGSTOP, as a stalled host would: the kernel still
// accepts connections on its port, but nothing is read or answered until
// [Server.Resume]. It returns an error if s is not running, or on a
// system without SIGSTOP. Kill and Restart work on a paused server.
func (s *Server) Pause() error { return s.signal(sigStop) }

// Resume continues s, paused by [Server.Pause], with SIGCONT.
func (s *Server) Resume() error { return s.signal(sigCont) }

// signal sends sig to s's process.
func (s *Server) signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return fmt.Errorf("redisproc: redis-server on %s is not running", s.Addr)
	}
	if err := s.proc.Signal(sig); err != nil {
		return fmt.Errorf("redisproc: %w", err)
	}
	return nil
}

// Restart kills s if it is running and starts it again on the same port
// with the same command line, without the data it had, then waits for it
// to answer PING as [Start] does. It does not try another port: it fails
// when the port was taken meanwhile, and then s stays killed.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
	return s.start(ctx)
}

// Output returns the first 4 KiB of what the process last started
// wrote to its standard output and error.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ""
	}
	return s.proc.Output()
}

// Ping sends one PING to the Redis at addr and reads the +PONG. It returns
// the dial, write or read error, or an error naming any other answer;
// ctx's deadline, if any, bounds the whole exchange.
func Ping(ctx context.Context, addr string) error {
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
		return fmt.Errorf("redisproc: PING answered %q", line)
	}
	return nil
}

// FreePort returns a 127.0.0.1 TCP port that nothing listened on a moment
// ago; something else may take it before the caller binds it.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisproc: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
