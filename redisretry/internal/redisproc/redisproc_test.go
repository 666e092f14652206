package redisproc_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retrytransport/retrytransport/redisretry/internal/redisproc"
	"go.uber.org/goleak"
)

// TestMain fails the tests if a goroutine outlives them: Kill must reap
// every process Start started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start starts a standalone redis-server for t and kills it when t ends.
func start(t *testing.T) *redisproc.Server {
	t.Helper()
	s, err := redisproc.Start(t.Context(), func(port int) ([]string, error) {
		return redisproc.Standalone(port), nil
	})
	if err != nil {
		t.Fatalf("Start(Standalone) error: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

func TestStandalone(t *testing.T) {
	got := redisproc.Standalone(6380, "--enable-debug-command", "local")
	want := []string{"--bind", "127.0.0.1", "--port", "6380", "--save", "", "--appendonly", "no",
		"--enable-debug-command", "local"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Standalone(6380, --enable-debug-command local) mismatch (-want +got):\n%s", diff)
	}
}

func TestKillRestartSamePort(t *testing.T) {
	s := start(t)
	if want := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)); s.Addr != want {
		t.Errorf("Start: Addr = %q; want %q", s.Addr, want)
	}
	if err := redisproc.Ping(t.Context(), s.Addr); err != nil {
		t.Fatalf("Ping(%s) after Start: %v", s.Addr, err)
	}
	if out := s.Output(); !strings.Contains(out, "Ready to accept connections") {
		t.Errorf("Output() after Start = %q; want it to contain %q", out, "Ready to accept connections")
	}
	s.Kill()
	s.Kill() // idempotent
	if err := redisproc.Ping(t.Context(), s.Addr); err == nil {
		t.Fatalf("Ping(%s) after Kill: nil error; want the dial to fail", s.Addr)
	}
	addr := s.Addr
	if err := s.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Addr != addr {
		t.Errorf("Restart: Addr = %q; want %q, the same port", s.Addr, addr)
	}
	if err := redisproc.Ping(t.Context(), s.Addr); err != nil {
		t.Errorf("Ping(%s) after Restart: %v", s.Addr, err)
	}
}

func TestStartTriesAnotherPortWhenTaken(t *testing.T) {
	var calls, taken int
	s, err := redisproc.Start(t.Context(), func(port int) ([]string, error) {
		calls++
		if calls == 1 { // take the port before redis-server binds it
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { _ = l.Close() })
			taken = port
		}
		return redisproc.Standalone(port), nil
	})
	if err != nil {
		t.Fatalf("Start(port taken once) error: %v", err)
	}
	defer s.Kill()
	if calls != 2 || s.Port == taken {
		t.Errorf("Start(port taken once): %d calls of args, Port = %d (taken %d); want 2 calls and another port", calls, s.Port, taken)
	}
}

func TestStartExitedAtStart(t *testing.T) {
	calls := 0
	_, err := redisproc.Start(t.Context(), func(port int) ([]string, error) {
		calls++
		return redisproc.Standalone(port, "--no-such-option", "1"), nil
	})
	if err == nil || !strings.Contains(err.Error(), "exited at start") || !strings.Contains(err.Error(), "no-such-option") {
		t.Errorf("Start(--no-such-option) error = %v; want one that says it exited at start, with its output", err)
	}
	if calls != 1 {
		t.Errorf("Start(--no-such-option): %d calls of args; want 1 (only a taken port is tried again)", calls)
	}
}

func TestStartArgsError(t *testing.T) {
	want := errors.New("no config")
	_, err := redisproc.Start(t.Context(), func(int) ([]string, error) { return nil, want })
	if !errors.Is(err, want) {
		t.Errorf("Start(args failing) error = %v; want %v", err, want)
	}
}

func TestStartNotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := redisproc.Start(t.Context(), func(port int) ([]string, error) { return redisproc.Standalone(port), nil })
	if !errors.Is(err, redisproc.ErrNotFound) {
		t.Errorf("Start(no redis-server on PATH) error = %v; want %v", err, redisproc.ErrNotFound)
	}
}

func TestStartCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := redisproc.Start(ctx, func(port int) ([]string, error) { return redisproc.Standalone(port), nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Start(canceled context) error = %v; want %v", err, context.Canceled)
	}
}

// TestPauseResume checks that a paused server accepts a connection but
// does not answer until it is resumed.
func TestPauseResume(t *testing.T) {
	s := start(t)
	if err := s.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := redisproc.Ping(ctx, s.Addr); err == nil {
		t.Fatal("Ping of a paused server answered; want no answer")
	}
	if err := s.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := redisproc.Ping(t.Context(), s.Addr); err != nil {
		t.Errorf("Ping after Resume: %v", err)
	}
	s.Kill()
	if err := s.Pause(); err == nil {
		t.Error("Pause of a killed server = nil; want an error")
	}
}
