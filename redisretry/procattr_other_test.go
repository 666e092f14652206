//go:build !linux

package redisretry_test

import "syscall"

// childAttr is nil where no parent-death signal exists: the cleanups
// stop redis-server.
func childAttr() *syscall.SysProcAttr { return nil }
