package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

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
	tokenFile := filepath.Join(dir, "token")
	config := filepath.Join(dir, "config.yaml")
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	for f, b := range map[string]string{kubeconfig: string(kc), tokenFile: "kill9-token",
		config: fmt.Sprintf("git:\n  url: %s\n  author: {name: magnum-gitops, email: m@example.org}\nserve:\n  token_files: [%s]\n", url, tokenFile)} {
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := func() *serveProcess {
		return startServeWith(t, []string{"serve", "--config", config, "--listen", freeAddr(t), "--kubeconfig", kubeconfig})
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
