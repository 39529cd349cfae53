//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// netnsEnv marks the test process that runs inside its own network namespace.
const netnsEnv = "MAGNUM_GITOPS_E2E_NETNS"

// inPrivateNetwork reports whether this process runs in the network namespace reexecInNetns
// made: only then may the Cluster API harness start, because CAPD's in-memory backend
// listens on fixed ports of every address (19000, 20000 and up) that another run on the
// machine could hold.
func inPrivateNetwork() bool { return os.Getenv(netnsEnv) == "1" }

// reexecInNetns runs this test binary again in a new network namespace, where only a
// loopback interface exists, and returns its exit code; ok is false when it cannot (not
// root, or E2E_NETNS=0), and the tests then run here, the Cluster API ones skipped or
// failed as any missing prerequisite is.
func reexecInNetns() (code int, ok bool) {
	if inPrivateNetwork() || os.Getenv("E2E_NETNS") == "0" || os.Geteuid() != 0 {
		return 0, false
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1, true
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return ee.ExitCode(), true
		}
		fmt.Fprintf(os.Stderr, "e2e: running the tests in a network namespace: %v\n", err)
		return 1, true
	}
	return 0, true
}

// loopbackUp brings up lo in a new network namespace, where it starts down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading the flags of lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}
