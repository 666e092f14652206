//go:build !linux

package redisproc

import "syscall"

// SysProcAttr returns nil where no parent-death signal exists: there the
// caller must kill what it starts ([Server.Kill]).
func SysProcAttr() *syscall.SysProcAttr { return nil }
