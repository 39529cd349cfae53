package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// serveProcess is `magnum-gitops serve` running as a subprocess.
type serveProcess struct {
	cmd  *exec.Cmd
	addr string
	logs *leakcheck.Buffer
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
	// TMPDIR: serve's clone (no git.cache_dir) stays in the test's directory, also when
	// the test kills it.
	cmd.Env = append(os.Environ(), "MAGNUM_GITOPS_RUN_MAIN=1", "TMPDIR="+t.TempDir())
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

// serveConfig writes, into dir, a configuration that serves the repository at url with one
// API token, and returns its path.
func serveConfig(t *testing.T, dir, url, token string) string {
	t.Helper()
	tokenFile := filepath.Join(dir, "token")
	config := filepath.Join(dir, "config.yaml")
	for f, b := range map[string]string{tokenFile: token + "\n",
		config: fmt.Sprintf("git:\n  url: %s\n  author: {name: magnum-gitops, email: m@example.org}\nserve:\n  token_files: [%s]\n", url, tokenFile)} {
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return config
}

// TestServeKill9: SIGKILL during a burst, restart, every client retries its unanswered
// event: each event's change is in Git exactly once, and nothing answered 200 is missing.
func TestServeKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	config := serveConfig(t, t.TempDir(), url, "kill9-token")
	addr := testenv.FreeAddr(t)
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

// leading reads a replica's magnum_gitops_leader metric.
func leading(addr string) (bool, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(b), "\nmagnum_gitops_leader 1\n"), nil
}

// TestTwoReplicas: two serve processes on one remote and one API server: one leads at a
// time, both accept events, and the other takes over when the leader is killed.
func TestTwoReplicas(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "magnum-gitops"}}); err != nil {
		t.Fatal(err)
	}
	kc, err := env.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	git := gitserver.Start(t)
	config := serveConfig(t, dir, git.Init("clusters.git"), "kill9-token")
	start := func() *serveProcess {
		return startServeWith(t, []string{"serve", "--config", config, "--listen", testenv.FreeAddr(t), "--kubeconfig", kubeconfig})
	}
	a, b := start(), start()
	defer func() {
		for _, p := range []*serveProcess{a, b} {
			_ = p.cmd.Process.Kill()
			_, _ = p.cmd.Process.Wait()
		}
	}()
	waitLeader := func(want ...*serveProcess) *serveProcess {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			var leaders []*serveProcess
			for _, p := range want {
				if l, err := leading(p.addr); err == nil && l {
					leaders = append(leaders, p)
				}
			}
			if len(leaders) > 1 {
				t.Fatalf("%d replicas lead at once", len(leaders))
			}
			if len(leaders) == 1 {
				return leaders[0]
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("no leader:\n%s\n%s", a.logs, b.logs)
		return nil
	}
	leader := waitLeader(a, b)
	follower := a
	if leader == a {
		follower = b
	}
	// Both replicas accept events, and each learns the other's: GET answers on both.
	revisions := map[int]string{}
	for i, p := range []*serveProcess{leader, follower} {
		rev, ok := postEventToken(p.addr, resizeEvent(t, i, 3), "kill9-token")
		if !ok {
			t.Errorf("replica %d refused an event", i)
		}
		revisions[i] = rev
	}
	for i, p := range []*serveProcess{leader, follower} {
		other := 1 - i
		uuid := fmt.Sprintf("3e9b7c52-1d4a-4f8e-9b6c-%012d", other)
		deadline := time.Now().Add(30 * time.Second) // the replicas read new commits every 5 s
		for {
			code, body := getToken(t, p.addr, "/v1/clusters/"+uuid, "kill9-token")
			var c struct {
				EventID  string `json:"event_id"`
				Revision string `json:"revision"`
			}
			_ = json.Unmarshal([]byte(body), &c)
			if code == http.StatusOK && c.EventID == fmt.Sprintf("evt-%02d-03", other) && c.Revision == revisions[other] && c.Revision != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d does not know the cluster the other replica committed: %d %s", i, code, body)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	_ = leader.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = leader.cmd.Process.Wait()
	if next := waitLeader(follower); next != follower {
		t.Fatal("the follower did not take over")
	}
	git.Fsck("clusters.git")
}

// getToken GETs a path of a replica's API.
func getToken(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeStatusOptions: serve judges with the default options but for the section's
// machine-failure deadline, when it sets one.
func TestServeStatusOptions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		set  *generator.Duration
		want time.Duration
	}{
		{"unset", nil, 15 * time.Minute},
		{"45m", &generator.Duration{Duration: 45 * time.Minute}, 45 * time.Minute},
		{"0s: never", &generator.Duration{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := serveStatusOptions(&config.File{Serve: config.Serve{MachineFailureDeadline: tc.set}})(now)
			if o.MachineFailureDeadline != tc.want || !o.Now.Equal(now) || o.CreateTimeout != time.Hour {
				t.Errorf("options = %+v, want the defaults at %v with MachineFailureDeadline %v", o, now, tc.want)
			}
		})
	}
	// The driver's [capi_helm] k8s_control_plane_resource_conditions decides what a ready
	// control plane is, for serve as for the driver.
	var f config.File
	f.Magnum.CapiHelm.K8sControlPlaneResourceConditions = []string{"Ready", "MachinesReady"}
	if o := serveStatusOptions(&f)(now); !slices.Equal(o.ControlPlaneConditions, []string{"Ready", "MachinesReady"}) {
		t.Errorf("ControlPlaneConditions = %v, want the configured ones", o.ControlPlaneConditions)
	}
}

// TestServeRotatesTokens: the real serve reads its token files again when they change,
// as Kubernetes updates a mounted Secret, while events flow: with two files (the
// documented overlap) a client on either token is never refused; once the old token's file
// holds the new one too, the old token is refused; a file emptied by mistake keeps the
// last tokens and is counted, never letting an empty token in.
func TestServeRotatesTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	dir := t.TempDir()
	config := serveConfig(t, dir, url, "token-one")
	second := filepath.Join(dir, "token-2")
	rotate := func(path, token string) { // a new file renamed over the old, as the kubelet does
		t.Helper()
		if err := os.WriteFile(path+".new", []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	rotate(second, "token-two")
	cfg, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, "token")
	cfg = []byte(strings.Replace(string(cfg), "token_files: ["+first+"]", "token_files: ["+first+", "+second+"]", 1))
	if err := os.WriteFile(config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	proc := startServe(t, config, addr)
	defer func() { _ = proc.cmd.Process.Kill(); _, _ = proc.cmd.Process.Wait() }()

	n := 0
	post := func(token string) bool {
		n++
		_, ok := postEventToken(addr, resizeEvent(t, 1, n), token)
		return ok
	}
	// The overlap: both tokens accepted while clients move from one to the other.
	for _, tok := range []string{"token-one", "token-two", "token-one", "token-two"} {
		if !post(tok) {
			t.Fatalf("%s refused during the overlap", tok)
		}
	}
	// The old token's place takes the new one: token-one is refused within seconds, and
	// token-two is never refused meanwhile.
	rotate(first, "token-two")
	deadline := time.Now().Add(10 * time.Second)
	for post("token-one") {
		if !post("token-two") {
			t.Fatal("token-two refused while token-one was being retired")
		}
		if time.Now().After(deadline) {
			t.Fatal("token-one still accepted 10 s after its file changed")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// An emptied file: the last tokens stay, nothing lets an empty token in, and the
	// refusal is counted.
	rotate(second, "")
	time.Sleep(1500 * time.Millisecond)
	if !post("token-two") {
		t.Error("token-two refused after a token file was emptied: the last good tokens must stay")
	}
	if _, ok := postEventToken(addr, resizeEvent(t, 1, 99), ""); ok {
		t.Error("an empty token accepted")
	}
	counted := func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `magnum_gitops_reload_errors_total{what="token_files"} 1`)
	}
	for deadline := time.Now().Add(10 * time.Second); !counted(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the refused token file is not counted in magnum_gitops_reload_errors_total")
		}
	}
	if s := proc.logs.String(); !strings.Contains(s, "a changed file was refused") || strings.Contains(s, "token-two") {
		t.Errorf("serve's log does not tell the refusal, or quotes a token:\n%s", s)
	}
}
