package main

import "syscall"

// childAttr makes a server child process (redis-server, nginx) die with
// this program, even when a signal or a crash ends it before it can stop
// the server.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
