//go:build unix

package redisproc

import "syscall"

// The signals that stop and continue a process.
var (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)
