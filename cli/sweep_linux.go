package cli

import "syscall"

// ownProcessGroup starts a sweep's cell in a process group of its own, so that a
// terminal's Ctrl-C reaches the sweep alone, which passes one interrupt on to each cell
// (a second one would end a cell before its checkpoint). A cell whose sweep dies
// (killed, or its terminal closed) is interrupted too, rather than run on unseen: the
// thread that starts it stays locked until it ends (child), as the signal follows the
// starting thread.
func ownProcessGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
}
