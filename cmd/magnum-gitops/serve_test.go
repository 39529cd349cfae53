package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

var env *testenv.Env

// TestMain lets the tests run this binary as the magnum-gitops CLI in a subprocess, and
// starts a real API server for the tests that need one.
func TestMain(m *testing.M) {
	if os.Getenv("MAGNUM_GITOPS_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(testenv.Main(m, &env))
}

// serveProcess is `magnum-gitops serve` running as a subprocess.
type serveProcess struct {
	cmd  *exec.Cmd
	addr string
	logs *leakcheck.Buffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startServe(t *testing.T, config, addr string, extra ...string) *serveProcess {
	t.Helper()
	return startServeWith(t, append([]string{"serve", "--config", config, "--listen", addr, "--objects", os.DevNull, "--log-format", "json"}, extra...))
}

// startServeWith starts the CLI with arguments that include --listen ADDR, and waits for
// it to answer /healthz.
func startServeWith(t *testing.T, args []string) *serveProcess {
	t.Helper()
	var addr string
	for i, a := range args {
		if a == "--listen" {
			addr = args[i+1]
		}
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MAGNUM_GITOPS_RUN_MAIN=1")
	p := &serveProcess{cmd: cmd, addr: addr, logs: leakcheck.Log(t, "serve's log")}
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("serve did not start:\n%s", p.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeKill9: SIGKILL during a burst, restart, every client retries its unanswered
// event: each event's change is in Git exactly once, and nothing answered 200 is missing.
func TestServeKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("kill9-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	doc := fmt.Sprintf("git:\n  url: %s\n  author: {name: magnum-gitops, email: m@example.org}\nserve:\n  token_files: [%s]\n", url, tokenFile)
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	proc := startServe(t, config, addr)
	var mu sync.Mutex
	current := proc
	defer func() { _ = current.cmd.Process.Kill(); _, _ = current.cmd.Process.Wait() }()

	const clients, events = 8, 12
	var answered atomic.Int64
	revisions := map[string]string{} // event id → revision answered
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= events; n++ {
				body := resizeEvent(t, c, n)
				for attempt := 0; ; attempt++ {
					rev, ok := postEvent(addr, body)
					if ok {
						mu.Lock()
						revisions[fmt.Sprintf("evt-%02d-%02d", c, n)] = rev
						mu.Unlock()
						answered.Add(1)
						break
					}
					if attempt > 600 {
						t.Errorf("client %d event %d: never answered", c, n)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	for answered.Load() < clients*events/3 {
		time.Sleep(5 * time.Millisecond)
	}
	_ = proc.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = proc.cmd.Process.Wait()
	mu.Lock()
	current = startServe(t, config, addr)
	mu.Unlock()
	wg.Wait()

	repo := git.Dir("clusters.git")
	log := git.Git(repo, "log", "--format=%H %(trailers:key=Magnum-Event-ID,valueonly,separator=)", "main")
	count := map[string]int{}
	carried := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			count[f[1]]++
			carried[f[1]] = f[0]
		}
	}
	for c := range clients {
		for n := 1; n <= events; n++ {
			id := fmt.Sprintf("evt-%02d-%02d", c, n)
			if count[id] != 1 {
				t.Errorf("event %s is in %d commits, want exactly 1", id, count[id])
			}
			// Every answer names the commit that carries the event, a retry after the
			// restart included (the ledger is rebuilt from the commit trailers).
			if rev := revisions[id]; rev != carried[id] {
				t.Errorf("event %s answered with %q, carried by %s", id, rev, carried[id])
			}
		}
	}
	git.Fsck("clusters.git")
}

func resizeEvent(t *testing.T, c, n int) []byte {
	t.Helper()
	data, err := os.ReadFile("../../fixtures/events/02-prod-a-resize-workers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = fmt.Sprintf("evt-%02d-%02d", c, n)
	ev.Cluster.UUID = fmt.Sprintf("3e9b7c52-1d4a-4f8e-9b6c-%012d", c)
	ev.Cluster.Name = fmt.Sprintf("k%02d", c)
	ev.Cluster.StackID = fmt.Sprintf("k%02d-stack", c)
	ev.NodeGroups[1].NodeCount = n
	b, _ := json.Marshal(ev)
	return b
}

// postEvent posts an event; ok is false when it must be retried (no answer, or 5xx).
func postEvent(addr string, body []byte) (string, bool) {
	return postEventToken(addr, body, "kill9-token")
}

func postEventToken(addr string, body []byte, token string) (string, bool) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", false
	}
	var ans struct {
		Revision string `json:"revision"`
	}
	_ = json.Unmarshal(b, &ans)
	return ans.Revision, true
}
