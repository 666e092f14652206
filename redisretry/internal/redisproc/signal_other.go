//go:build !unix

package redisproc

import "syscall"

// No stop or continue signal exists here: Pause and Resume return an
// error from os.Process.Signal.
var (
	sigStop syscall.Signal = -1
	sigCont syscall.Signal = -1
)
