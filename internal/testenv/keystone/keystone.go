package keystone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

// ErrNotInstalled reports that Debian's python3-keystone (keystone-manage) is missing.
var ErrNotInstalled = errors.New("keystone: keystone-manage not found " +
	"(apt-get install -y --no-install-recommends python3-keystone)")

// Keystone is a running Keystone with one admin user (the bootstrap user, role admin on
// project admin in domain default) and one region.
type Keystone struct {
	// AuthURL is the versioned public identity endpoint, http://127.0.0.1:PORT/v3.
	AuthURL string
	// Region is the bootstrap region, holding the identity endpoints.
	Region string
	// AdminUser, AdminPassword and AdminProject are the bootstrap credentials, in DomainID.
	AdminUser     string
	AdminPassword string
	AdminProject  string
	DomainID      string

	proc *process

	adminMu sync.Mutex
	admin   *gophercloud.ProviderClient

	tokens tokenCache

	glanceOnce sync.Once
	glance     *Glance
	glanceErr  error
}

var shared struct {
	mu  sync.Mutex
	ks  *Keystone
	err error
}

// Start returns the Keystone shared by every test of this binary, starting it on first use
// (15–20 s). It skips the test when keystone-manage is missing, and fails it
// instead when CI is set. Call Main from TestMain so the process stops when the tests end;
// should a binary forget, the kernel still kills Keystone when the test binary exits.
func Start(t testing.TB) *Keystone {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.ks == nil && shared.err == nil {
		shared.ks, shared.err = start(context.Background())
	}
	if shared.err != nil {
		unavailable(t, shared.err)
	}
	return shared.ks
}

// StartPrivate starts a Keystone of the test's own, stopped (SIGTERM, then SIGKILL) when the
// test ends. Prefer Start: each instance costs 15–20 s.
func StartPrivate(t testing.TB) *Keystone {
	t.Helper()
	ks, err := start(context.Background())
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := ks.Stop(); err != nil {
			t.Errorf("stopping keystone: %v", err)
		}
	})
	return ks
}

// Main runs the tests and then stops the shared Keystone (and Glance): use it as
// `func TestMain(m *testing.M) { keystone.Main(m) }`.
func Main(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	ks := shared.ks
	shared.ks, shared.err = nil, errors.New("keystone: stopped")
	shared.mu.Unlock()
	if ks != nil {
		if err := ks.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// unavailable skips the test, or fails it under CI, where these tests must run.
func unavailable(t testing.TB, err error) {
	t.Helper()
	switch {
	case os.Getenv("CI") != "":
		t.Fatalf("CI is set and Keystone is unavailable: %v", err)
	case errors.Is(err, ErrNotInstalled):
		t.Skip(err)
	default:
		t.Fatal(err)
	}
}

// Stop stops Glance (if started) and Keystone: SIGTERM to each process group, SIGKILL to
// whatever is left after a grace period, then removes the temporary directory.
func (k *Keystone) Stop() error {
	var errs []error
	if k.glance != nil {
		errs = append(errs, k.glance.proc.stop())
	}
	errs = append(errs, k.proc.stop())
	return errors.Join(errs...)
}

// Pid is the process id of keystone-wsgi-public, for tests of the harness itself.
func (k *Keystone) Pid() int { return k.proc.cmd.Process.Pid }

// Log returns the tail of Keystone's log files, for failure messages.
func (k *Keystone) Log() string { return k.proc.logTail() }

// manageCandidates are where keystone-manage is looked for before PATH: Debian installs it
// in /usr/bin with a /usr/bin/python3 shebang, which matters, since another python3 on PATH
// lacks Debian's modules. A variable so the harness's own tests can hide it.
var manageCandidates = []string{"/usr/bin/keystone-manage"}

// keystoneManage finds keystone-manage.
func keystoneManage() (string, error) {
	for _, p := range manageCandidates {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("keystone-manage")
	if err != nil {
		return "", ErrNotInstalled
	}
	return p, nil
}
