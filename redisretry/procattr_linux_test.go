package redisretry_test

import "syscall"

// childAttr makes redis-server die with the test binary, even when a
// timeout or a signal ends it before its cleanups run.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
