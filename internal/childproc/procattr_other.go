//go:build !linux

package childproc

import "syscall"

// SysProcAttr returns nil where no parent-death signal exists: there the
// caller must end what it starts ([Process.Stop], [Process.Kill]).
func SysProcAttr() *syscall.SysProcAttr { return nil }
