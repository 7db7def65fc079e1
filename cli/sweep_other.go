//go:build !unix

package cli

import "syscall"

// ownProcessGroup: without process groups a cell shares the sweep's console.
func ownProcessGroup() *syscall.SysProcAttr { return nil }
