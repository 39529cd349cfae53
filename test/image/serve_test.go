//go:build image

package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// Where the Deployment (deploy/service) mounts what the container reads and writes.
const (
	configPath     = "/etc/magnum-gitops/config.yaml"
	tokenPath      = "/etc/magnum-gitops/secrets/api-token"
	digestKeyPath  = "/etc/magnum-gitops/secrets/digest-key"
	kubeconfigPath = "/etc/magnum-gitops/secrets/kubeconfig"
	cacheDir       = "/var/cache/magnum-gitops"
	leaseNamespace = "magnum-gitops"
	leaseName      = "magnum-gitops"
	nonroot        = 65532
)

// site is one installation's files on the host, as a ConfigMap, a Secret and an emptyDir
// would hold them.
type site struct {
	config, token, digestKey, kubeconfig, cache string
	tokenValue, listen, opsListen               string
}

// newSite writes a configuration for serve in a container on the host's network: the
// test's Git server, listeners on free loopback ports, Secrets age-encrypted, the clone
// in the cache directory. Secrets are readable by the image's group only (the Deployment's
// fsGroup), the cache writable by its user alone.
func newSite(t *testing.T, gitURL string) *site {
	t.Helper()
	dir := t.TempDir()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	s := &site{
		config: filepath.Join(dir, "config.yaml"), token: filepath.Join(dir, "api-token"),
		digestKey: filepath.Join(dir, "digest-key"), kubeconfig: filepath.Join(dir, "kubeconfig"),
		cache: filepath.Join(dir, "cache"), tokenValue: randomHex(t), listen: testenv.FreeAddr(t), opsListen: testenv.FreeAddr(t),
	}
	cfg := map[string]any{
		"git": map[string]any{
			"url": gitURL, "branch": "main", "cache_dir": cacheDir,
			"author": map[string]any{"name": "magnum-gitops", "email": "magnum-gitops@example.org"},
		},
		"sops": map[string]any{"age_recipients": []string{id.Recipient().String()}, "digest_key_file": digestKeyPath},
		"serve": map[string]any{
			"listen": s.listen, "ops_listen": s.opsListen, "token_files": []string{tokenPath},
			"leader_election": map[string]any{"namespace": leaseNamespace, "name": leaseName},
		},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.config, data, 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{s.token: s.tokenValue + "\n", s.digestKey: randomHex(t) + "\n"}
	if env != nil {
		kc, err := env.KubeConfig()
		if err != nil {
			t.Fatal(err)
		}
		secrets[s.kubeconfig] = string(kc)
	}
	for f, v := range secrets {
		if err := os.WriteFile(f, []byte(v), 0o440); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f, 0, nonroot); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(s.cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(s.cache, nonroot, nonroot); err != nil {
		t.Fatal(err)
	}
	return s
}

// mounts are the site's files where the Deployment mounts them (the kubeconfig when there
// is an API server).
func (s *site) mounts() []mount {
	m := []mount{
		{host: s.config, container: configPath},
		{host: s.token, container: tokenPath},
		{host: s.digestKey, container: digestKeyPath},
		{host: s.cache, container: cacheDir, writable: true},
	}
	if _, err := os.Stat(s.kubeconfig); err == nil {
		m = append(m, mount{host: s.kubeconfig, container: kubeconfigPath})
	}
	return m
}

// serveArgs are the Deployment's container args, with the kubeconfig a Pod would not need.
func serveArgs() []string {
	return []string{"serve", "--config", configPath, "--kubeconfig", kubeconfigPath, "--log-format", "json", "--shutdown-delay", "1s"}
}

// TestImageServes runs serve from the image under a real OCI runtime as the Deployment
// runs it, and checks what the runtime gave it (user 65532, no capabilities, a read-only
// root) and what it does: it answers /healthz and /readyz, takes the Lease on the API
// server, commits an event to the Git server, and stops with status 0 on SIGTERM.
func TestImageServes(t *testing.T) {
	testenv.Require(t, env)
	rt := newRuntime(t)
	img := hostImage(t)
	ctx := context.Background()
	if err := env.EnsureNamespace(ctx, leaseNamespace); err != nil {
		t.Fatal(err)
	}
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	s := newSite(t, url)
	c := rt.start(t, img, serveArgs(), s.mounts())

	waitHTTP(t, c, "http://"+s.opsListen+"/healthz", time.Minute)
	checkConfined(t, c)
	// Ready: the Git remote answers and the status cache has synced from the API server.
	waitHTTP(t, c, "http://"+s.opsListen+"/readyz", 2*time.Minute)

	// The one replica leads: the Lease names it, and so does its metric.
	deadline := time.Now().Add(time.Minute)
	for {
		var lease coordinationv1.Lease
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: leaseNamespace, Name: leaseName}, &lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && leading(s.opsListen) {
			t.Logf("the Lease is held by %s", *lease.Spec.HolderIdentity)
			break
		}
		if time.Now().After(deadline) || !c.running() {
			t.Fatalf("serve did not take the Lease %s/%s (%v):\n%s", leaseNamespace, leaseName, err, c.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// An event, committed and pushed before the answer.
	eventFile := filepath.Join(testenv.RepoRoot(), "fixtures", "events", "01-prod-a-create.yaml")
	body, err := os.ReadFile(eventFile)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	outcome, revision := postEvent(t, s, body)
	if outcome != "committed" || len(revision) != 40 {
		t.Fatalf("POST /v1/events: outcome %q revision %q, want a commit:\n%s", outcome, revision, c.logs)
	}
	repo := git.Dir("clusters.git")
	if head := strings.TrimSpace(git.Git(repo, "rev-parse", "main")); head != revision {
		t.Errorf("the Git server's main is %s, serve answered %s", head, revision)
	}
	trailer := strings.TrimSpace(git.Git(repo, "log", "-1", "--format=%(trailers:key=Magnum-Event-ID,valueonly,separator=)", revision))
	if trailer != ev.ID {
		t.Errorf("the commit carries event %q, want %q", trailer, ev.ID)
	}

	// SIGTERM through the runtime: serve drains and exits 0.
	c.signal(t, "TERM")
	if code := c.wait(t, time.Minute); code != 0 {
		t.Fatalf("serve exited %d on SIGTERM, want 0:\n%s", code, c.logs)
	}
	git.Fsck("clusters.git")
}

// checkConfined reads, from the host, what the runtime gave the container's process: the
// image's user and group, no effective capability, and a read-only root filesystem.
func checkConfined(t *testing.T, c *container) {
	t.Helper()
	pid := c.pid(t)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Uid:":    fmt.Sprintf("%d\t%d\t%d\t%d", nonroot, nonroot, nonroot, nonroot),
		"Gid:":    fmt.Sprintf("%d\t%d\t%d\t%d", nonroot, nonroot, nonroot, nonroot),
		"CapEff:": "0000000000000000",
		"CapPrm:": "0000000000000000",
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "\t")
		if w, ok := want[k]; ok {
			if v != w {
				t.Errorf("the container's process has %s %q, want %q", k, v, w)
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		t.Errorf("/proc/%d/status lacks %v", pid, want)
	}
	mountinfo, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mountinfo), "\n") {
		// ID parent major:minor root mountpoint options ...
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			if !strings.Contains(","+f[5]+",", ",ro,") {
				t.Errorf("the root filesystem is mounted %s, want read-only", f[5])
			}
			return
		}
	}
	t.Errorf("no root filesystem in the container's mountinfo:\n%s", mountinfo)
}

// TestImageWithoutItsConfiguration: an image run without its configuration, or with a
// Secret missing, stops at once with status 2 and a message naming what is missing.
func TestImageWithoutItsConfiguration(t *testing.T) {
	rt := newRuntime(t)
	img := hostImage(t)
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	tests := []struct {
		name string
		args []string           // nil: the image's own command
		drop func(*site) string // the file a run leaves out; nil: every mount
		want []string
	}{
		{name: "no configuration, the image's command", want: []string{"--config", configPath, "no such file"}},
		{name: "no digest key", args: serveArgs(), drop: func(s *site) string { return s.digestKey },
			want: []string{"sops.digest_key_file", digestKeyPath, "no such file"}},
		{name: "no API token", args: serveArgs(), drop: func(s *site) string { return s.token },
			want: []string{"serve.token_files", tokenPath, "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mounts []mount
			if tt.drop != nil {
				s := newSite(t, url)
				left := tt.drop(s)
				for _, m := range s.mounts() {
					if m.host != left {
						mounts = append(mounts, m)
					}
				}
			}
			c := rt.start(t, img, tt.args, mounts)
			code := c.wait(t, time.Minute)
			out := c.logs.String()
			if code != 2 {
				t.Errorf("exit %d, want 2 (bad input):\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not name %q:\n%s", w, out)
				}
			}
		})
	}
}

// waitHTTP waits for url to answer 200, failing the test if the container ends first.
func waitHTTP(t *testing.T, c *container, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if !c.running() {
			t.Fatalf("the container ended before %s answered:\n%s", url, c.logs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within %s (%v):\n%s", url, timeout, err, c.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leading reads the replica's magnum_gitops_leader metric.
func leading(opsAddr string) bool {
	resp, err := http.Get("http://" + opsAddr + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(b), "\nmagnum_gitops_leader 1\n")
}

// postEvent sends an event as the driver shim does and returns serve's outcome and commit.
func postEvent(t *testing.T, s *site, body []byte) (outcome, revision string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.listen+"/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Authorization", "Bearer "+s.tokenValue)
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("POST /v1/events: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var ans struct {
		Outcome  string `json:"outcome"`
		Revision string `json:"revision"`
	}
	if err := json.Unmarshal(data, &ans); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/events: %s: %s", resp.Status, data)
	}
	return ans.Outcome, ans.Revision
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
