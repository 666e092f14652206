package childproc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrytransport/retrytransport/internal/childproc"
	"go.uber.org/goleak"
)

// childEnv, when set, makes the test binary act as a child process, in
// the mode it names, instead of running the tests.
const childEnv = "CHILDPROC_TEST_CHILD"

// TestMain runs the child modes, and otherwise fails the tests if a
// goroutine outlives them: every process started must be reaped.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode, os.Getenv("CHILDPROC_TEST_READY")))
	}
	goleak.VerifyTestMain(m)
}

// child runs one child mode and returns its exit status. "serve" creates
// the file ready and exits 0 on SIGTERM; "stubborn" creates it and
// ignores SIGTERM; "never" never creates it; "fail" writes a complaint
// and exits 3 at once.
func child(mode, ready string) int {
	switch mode {
	case "fail":
		fmt.Fprintln(os.Stderr, "unknown option --frob")
		return 3
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	if mode != "never" {
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			return 2
		}
	}
	if mode == "stubborn" {
		select {}
	}
	<-term
	return 0
}

// start starts the test binary in mode as a process named after the mode,
// and returns it with a check that it is ready.
func start(t *testing.T, mode string) (*childproc.Process, func(context.Context) error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("os.Executable: %v", err)
	}
	ready := t.TempDir() + "/ready"
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "CHILDPROC_TEST_READY="+ready)
	p, err := childproc.Start("child "+mode, cmd)
	if err != nil {
		t.Fatalf("Start(child %s) error: %v", mode, err)
	}
	t.Cleanup(p.Kill)
	return p, func(context.Context) error {
		_, err := os.Stat(ready)
		return err
	}
}

func TestWaitReadyThenStop(t *testing.T) {
	p, ready := start(t, "serve")
	if err := p.WaitReady(t.Context(), 10*time.Second, ready); err != nil {
		t.Fatalf("WaitReady(child serve) = %v; want nil", err)
	}
	if err := p.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("Signal(0) to a ready child = %v; want nil, it runs", err)
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("Stop(child serve) = %v; want nil, an exit with status 0 on SIGTERM", err)
	}
	if err := p.Signal(syscall.Signal(0)); err == nil {
		t.Error("Signal(0) after Stop = nil; want an error, the child has exited")
	}
	p.Kill() // a no-op once it has exited
}

func TestWaitReadyExitedAtStart(t *testing.T) {
	p, ready := start(t, "fail")
	err := p.WaitReady(t.Context(), 10*time.Second, ready)
	for _, want := range []string{"child fail exited at start", "exit status 3", "unknown option --frob"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WaitReady(child that exits at once) error = %v; want one that contains %q", err, want)
		}
	}
	if out := p.Output(); !strings.Contains(out, "unknown option --frob") {
		t.Errorf("Output() of a child that exited at start = %q; want its complaint", out)
	}
}

func TestWaitReadyTimeout(t *testing.T) {
	p, ready := start(t, "never")
	err := p.WaitReady(t.Context(), 50*time.Millisecond, ready)
	if err == nil || !strings.Contains(err.Error(), "child never not ready within 50ms") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WaitReady(child never ready, 50ms) error = %v; want one that says it was not ready within 50ms and wraps the check's error", err)
	}
	if err := p.Signal(syscall.Signal(0)); err == nil {
		t.Error("Signal(0) after WaitReady timed out = nil; want an error, the child killed")
	}
}

func TestWaitReadyCanceled(t *testing.T) {
	p, ready := start(t, "never")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.WaitReady(ctx, 10*time.Second, ready); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitReady(canceled context) error = %v; want %v", err, context.Canceled)
	}
	if err := p.Signal(syscall.Signal(0)); err == nil {
		t.Error("Signal(0) after WaitReady was canceled = nil; want an error, the child killed")
	}
}

// TestStopKillsAfterGrace checks that Stop does not wait past its grace for
// a child that ignores SIGTERM: it kills it and says so.
func TestStopKillsAfterGrace(t *testing.T) {
	p, ready := start(t, "stubborn")
	if err := p.WaitReady(t.Context(), 10*time.Second, ready); err != nil {
		t.Fatalf("WaitReady(child stubborn) = %v; want nil", err)
	}
	begin := time.Now()
	err := p.Stop(100 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "child stubborn did not stop within 100ms of SIGTERM; killed") {
		t.Errorf("Stop(100ms) of a child that ignores SIGTERM = %v; want an error that says it was killed", err)
	}
	if took := time.Since(begin); took < 100*time.Millisecond {
		t.Errorf("Stop(100ms) of a child that ignores SIGTERM returned after %v; want the grace waited first", took)
	}
	if err := p.Signal(syscall.Signal(0)); err == nil {
		t.Error("Signal(0) after Stop killed it = nil; want an error, the child reaped")
	}
}

func TestStartError(t *testing.T) {
	_, err := childproc.Start("nothing", exec.Command(t.TempDir()+"/no-such-binary"))
	if err == nil || !strings.HasPrefix(err.Error(), "nothing: ") {
		t.Errorf("Start(no such binary) error = %v; want one that begins with the name", err)
	}
}
