package redisproc

import "syscall"

// SysProcAttr returns the attributes that make a child process die with
// the process that started it: on Linux, SIGKILL as its parent-death
// signal, so that redis-server goes even when a timeout, a signal or a
// crash ends its parent before it can call [Server.Kill].
// (Linux sends the signal when the thread that started the child ends;
// Go keeps its threads until the program exits.)
func SysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
