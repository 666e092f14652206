//go:build !linux

package main

import "syscall"

// childAttr is nil where no parent-death signal exists: the program stops
// redis-server itself.
func childAttr() *syscall.SysProcAttr { return nil }
