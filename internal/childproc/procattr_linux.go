package childproc

import "syscall"

// SysProcAttr returns the attributes that make a child process die with
// the program that started it: on Linux, SIGKILL as its parent-death
// signal, so that a server goes even when a timeout, a signal or a crash
// ends its parent before it can stop the server. (Linux sends the signal
// when the thread that started the child ends; Go keeps its threads until
// the program exits.) [Start] sets them; a command run to completion
// without Start may set them too.
func SysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
