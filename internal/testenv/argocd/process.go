package argocd

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// Bounds on the processes; generous for two shared cores.
const (
	// readyTimeout bounds a process's start: the controller builds its cache of every
	// resource type of the API server (testenv installs dozens of CRDs) before it answers.
	readyTimeout = 2 * time.Minute
	// stopGrace is how long a process group has between SIGTERM and SIGKILL.
	stopGrace = 10 * time.Second
	// logTail is how much of each log a failed test prints.
	logTail = 16 << 10
)

// process is a server the harness started, in its own process group: the repo-server runs
// git and helm as children, which must not outlive it.
type process struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed once the process has exited and err is set
	err    error
}

// freeAddr is a loopback address nobody listens on now; the process binds it a moment
// later (another could take it first, which shows as a start failure in the log).
func freeAddr(t testing.TB) string { return testenv.FreeAddr(t) }

// launch starts a process with stdout and stderr in <work>/logs/<name>.log, in a new
// process group whose leader the kernel kills should the test binary die first
// (Pdeathsig). The caller's own Argo CD, Redis, Helm, Git and kubeconfig variables are
// dropped from its environment, so only env says how it runs.
func (a *Argo) launch(name, path string, args, env []string) *process {
	t := a.t
	t.Helper()
	log := a.path("logs", name+".log")
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(baseEnv(), env...)
	cmd.Dir = a.mkdir(name)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	a.procs = append(a.procs, p)
	return p
}

// baseEnv is the test's environment without what would change how Argo CD, Redis, Helm,
// Git or sops behave (or point them at another cluster, or another age key); HOME, TMPDIR
// and the XDG directories go too, as each process gets its own.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "ARGOCD_"), strings.HasPrefix(name, "REDIS"),
			strings.HasPrefix(name, "HELM_"), strings.HasPrefix(name, "GIT_"),
			strings.HasPrefix(name, "XDG_"), strings.HasPrefix(name, "KUBE"),
			strings.HasPrefix(name, "SOPS_"),
			name == "HOME", name == "TMPDIR", name == "PATH":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// waitHTTP polls url until it answers 200, failing the test when the process exits first
// or readyTimeout passes. Each probe has its own timeout: a server can accept connections
// long before it answers them.
func (a *Argo) waitHTTP(p *process, url string) {
	t := a.t
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := c.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited before answering %s: %v\n%s", p.name, url, p.err, p.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %s within %s: %v\n%s", p.name, url, readyTimeout, err, p.tail())
		}
	}
}

// Stop stops every process now rather than when the test ends, so that a test can look
// at what they left behind (FilesContaining) once none can write any more. Later calls,
// and the one at the test's end, stop nothing.
func (a *Argo) Stop() {
	a.t.Helper()
	a.stopProcesses()
}

// stop prints every log if the test failed, then stops the processes.
func (a *Argo) stop() {
	if a.t.Failed() {
		a.t.Log(a.Logs())
	}
	a.stopProcesses()
}

// stopProcesses stops the processes once, the last started first (the controller before
// the repo-server it calls, the repo-server before its plugin, Redis last).
func (a *Argo) stopProcesses() {
	if a.stopped {
		return
	}
	a.stopped = true
	for i := len(a.procs) - 1; i >= 0; i-- {
		if err := a.procs[i].stop(); err != nil {
			a.t.Error(err)
		}
	}
}

// stop sends SIGTERM to the process group, SIGKILL after stopGrace, and SIGKILL to the
// group once more in case a child left the leader behind.
func (p *process) stop() error {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }()
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopGrace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, pgid)
	}
}

// Logs is the end of every process's log, for a failing test's message.
func (a *Argo) Logs() string {
	var b strings.Builder
	for _, p := range a.procs {
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.name, p.log, p.tail())
	}
	return b.String()
}

// tail is the last logTail bytes of the process's log.
func (p *process) tail() string {
	f, err := os.Open(p.log)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTail {
		_, _ = f.Seek(-logTail, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
