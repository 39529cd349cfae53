package keystone

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Bounds on the external processes; generous for two shared cores.
const (
	setupTimeout = 3 * time.Minute
	readyTimeout = 60 * time.Second
	stopGrace    = 5 * time.Second
)

// process is a server the harness started, in its own process group.
type process struct {
	name   string
	dir    string // the temporary directory, removed when the process stops
	cmd    *exec.Cmd
	exited chan struct{}
	logs   []string
}

// launch starts cmd in a new process group whose leader the kernel kills should the test
// binary die first (Pdeathsig), with stdout and stderr in dir/<name>.out.
func launch(name, dir string, cmd *exec.Cmd, logs ...string) (*process, error) {
	out, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, dir: dir, cmd: cmd, exited: make(chan struct{}),
		logs: append([]string{out.Name()}, logs...)}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitHTTP polls url until it answers one of the codes, the process exits, or
// readyTimeout passes. Each probe has its own timeout: a server can accept connections
// long before it answers them.
func (p *process) waitHTTP(url string, codes ...int) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			for _, c := range codes {
				if resp.StatusCode == c {
					return nil
				}
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before answering %s:\n%s", p.name, url, p.logTail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer %s within %s:\n%s", p.name, url, readyTimeout, p.logTail())
		}
	}
}

// stop sends SIGTERM to the process group, SIGKILL after stopGrace (wsgiref servers
// outlive SIGTERM for a moment), and removes the directory.
func (p *process) stop() error {
	if p == nil {
		return nil
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, pgid)
		}
	}
	// Children that left the group's leader behind (none expected) go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return os.RemoveAll(p.dir)
}

// logTail is the end of each log file.
func (p *process) logTail() string {
	var b strings.Builder
	for _, f := range p.logs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

// run runs one set-up command, returning its output's tail on failure. The error names
// the step, never the arguments, which may hold a password.
func run(ctx context.Context, step, dir string, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		return fmt.Errorf("%s: %w\n%s", step, err, out)
	}
	return nil
}

// freePort returns a port nobody listens on now. Another process could take it before the
// server binds it; the server then fails to start and the error says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// parallel runs the functions concurrently and joins their errors.
func parallel(fns ...func() error) error {
	errs := make(chan error, len(fns))
	for _, fn := range fns {
		go func() { errs <- fn() }()
	}
	var all []error
	for range fns {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
