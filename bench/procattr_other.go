//go:build !linux

package main

import "syscall"

// childAttr is nil where no parent-death signal exists: the program stops
// its server child processes (redis-server, nginx) itself.
func childAttr() *syscall.SysProcAttr { return nil }
