package bench

import "syscall"

// childAttr makes the kernel kill the server if this process dies first.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
