//go:build unix

package cli

import "syscall"

// ownProcessGroup starts a sweep's cell in a process group of its own, so that a
// terminal's Ctrl-C reaches the sweep alone, which passes one interrupt on to each cell
// (a second one would end a cell before its checkpoint).
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
