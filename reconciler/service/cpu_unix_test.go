//go:build unix

package service_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) used so far by this process and by its
// waited-for children: the remote's git processes.
func cpuTime() (self, children time.Duration) {
	return rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
