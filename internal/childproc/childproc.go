// Package childproc runs a server as a child process for the tests, the
// benchmarks and the demos (redis-server, nginx): [Start] starts it with
// its output kept and, where the system has one, a parent-death signal;
// [Process.WaitReady] waits, bounded in time, until a check the caller
// gives says it serves; [Process.Stop] and [Process.Kill] end it and wait
// until it has exited.
//
// It knows nothing of what it runs: the command line, the configuration,
// the ports and the readiness check are the caller's. Its errors begin
// with the name the caller gave the process, so that the caller adds its
// own prefix.
package childproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// OutputMax is how many bytes of a process's standard output and error
// [Process.Output] keeps.
const OutputMax = 4 << 10

// pollInterval is the pause between two readiness checks.
const pollInterval = 5 * time.Millisecond

// Process is a child process started by [Start]. It runs until it exits,
// [Process.Stop] or [Process.Kill] ends it, or the program that started it
// exits (see [SysProcAttr]). Its methods are safe for concurrent use.
type Process struct {
	name   string
	cmd    *exec.Cmd
	out    *capped
	exited chan struct{} // closed once cmd has exited and been reaped
	err    error         // cmd's exit status; read after exited is closed
}

// Start starts cmd, which must not have been started, and returns it as a
// Process named name in errors ("redis-server on 127.0.0.1:6379"). It sets
// cmd's Stdout and Stderr, whose first [OutputMax] bytes
// [Process.Output] returns, and its SysProcAttr to [SysProcAttr]'s: on
// Linux, SIGKILL as the parent-death signal. The caller must end the
// process with [Process.Stop] or [Process.Kill].
func Start(name string, cmd *exec.Cmd) (*Process, error) {
	p := &Process{name: name, cmd: cmd, out: &capped{max: OutputMax}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = SysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// WaitReady calls ready until it returns nil, and then returns nil. The
// ctx that ready gets ends with ctx or after timeout; ready bounds each
// check of its own if one may hang. WaitReady gives up when the process
// exits, returning an error with its exit status and output; when timeout
// passes, returning an error that wraps ready's last; or when ctx ends,
// returning an error that wraps ctx's. It kills the process before it
// gives up, so that nothing is left running, and its output stays
// readable.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration, ready func(ctx context.Context) error) error {
	errTimeout := errors.New("timeout")
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited at start (%v): %s", p.name, p.err, strings.TrimSpace(p.Output()))
		case <-ctx.Done():
			p.Kill()
			if context.Cause(ctx) == errTimeout {
				return fmt.Errorf("%s not ready within %v: %w", p.name, timeout, err)
			}
			return fmt.Errorf("%s not ready: %w", p.name, ctx.Err())
		case <-tick.C:
		}
	}
}

// Stop ends the process with SIGTERM, or with SIGKILL if it has not exited
// within grace (at once where SIGTERM cannot be sent), and returns once it
// has exited. It returns nil if the process exited with status 0, by
// itself or on SIGTERM; otherwise an error with its exit status or saying
// it was killed.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return p.exitErr()
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err == nil {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.exited:
			return p.exitErr()
		case <-t.C:
		}
	}
	p.Kill()
	return fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.name, grace)
}

// exitErr describes a non-zero exit status; call it once the process has
// exited.
func (p *Process) exitErr() error {
	if p.err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", p.name, p.err)
}

// Kill kills the process with SIGKILL, as a crash would, and returns once
// it has exited and been reaped. It may be called more than once, and
// after the process exited by itself.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill() // fails only once the process has exited
	<-p.exited
}

// Signal sends sig to the process. It returns an error once the process
// has exited, or where the system cannot send sig.
func (p *Process) Signal(sig os.Signal) error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s is not running", p.name)
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	return nil
}

// Output returns the first [OutputMax] bytes of what the process wrote to
// its standard output and error so far.
func (p *Process) Output() string { return p.out.String() }
