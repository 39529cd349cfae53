package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/httpapi"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
	"github.com/magnum-gitops/magnum-gitops/status"
)

const token = "test-token-3f1c9a"

// harness is a running service on a real Git smart-HTTP remote.
type harness struct {
	t       *testing.T
	git     *gitserver.Server
	repo    string
	remote  string // the repository's URL
	url     string
	logs    *leakcheck.Buffer
	objects string
	cancel  context.CancelFunc
	done    chan error
}

func start(t *testing.T, mutate func(*service.Options)) *harness {
	t.Helper()
	h := &harness{t: t, git: gitserver.Start(t), logs: leakcheck.Log(t, "the service's log")}
	h.repo = "clusters.git"
	h.remote = h.git.Init(h.repo)
	h.objects = filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(h.objects, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.run(mutate)
	t.Cleanup(h.stop)
	return h
}

// restart stops the service and starts another process's worth of it on the same remote
// and management cluster: a fresh clone, nothing kept in memory.
func (h *harness) restart(mutate func(*service.Options)) {
	h.t.Helper()
	h.stop()
	h.run(mutate)
}

func (h *harness) run(mutate func(*service.Options)) {
	t := h.t
	t.Helper()
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: h.remote,
		Author: gitrepo.Signature{Name: "magnum-gitops", Email: "magnum-gitops@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	ready := make(chan string, 1)
	o := service.Options{
		Pipeline: &reconciler.Pipeline{Config: &cfg, Secrets: encrypting(t)},
		Sink:     &reconciler.GitSink{Repo: repo}, Listen: "127.0.0.1:0",
		Tokens: httpapi.Tokens{[]byte(token)}, Status: objectsFile(h.objects), DeleteInterval: 50 * time.Millisecond,
		Log: slog.New(slog.NewJSONHandler(h.logs, nil)), Ready: ready,
	}
	if mutate != nil {
		mutate(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- service.Run(ctx, o) }()
	select {
	case addr := <-ready:
		h.url = "http://" + addr
	case err := <-h.done:
		t.Fatalf("service stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("service did not start")
	}
}

func (h *harness) stop() {
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		h.t.Error("service did not stop")
	}
}

// post sends an event and decodes the answer.
func (h *harness) post(body []byte, header ...string) (int, map[string]any) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		h.t.Fatalf("answer %d is not JSON: %s", resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

func (h *harness) get(path string) (int, map[string]any) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (h *harness) commits() []string {
	out := strings.TrimSpace(h.git.Git(h.git.Dir(h.repo), "rev-list", "--all"))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := fixtures.Events.ReadFile("events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// objectsFile is a status.Source over a YAML file that the test rewrites.
type objectsFile string

func (f objectsFile) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	fh, err := os.Open(string(f))
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	objs, err := status.LoadObjects(fh)
	if err != nil {
		return nil, err
	}
	return status.StaticSource(objs).List(ctx, gvk)
}

// TestEventsInOrderMatchApply: the fixture events posted in order produce the same
// repository as applying them one by one, each answered with its commit.
func TestEventsInOrderMatchApply(t *testing.T) {
	t.Parallel()
	// No management cluster: the delete's second phase must not run here.
	h := start(t, func(o *service.Options) { o.Status = nil })
	names, _ := fixtures.EventNames()
	var answered []string
	for _, n := range names {
		code, ans := h.post(fixture(t, n))
		if code != http.StatusOK {
			t.Fatalf("%s: %d %v", n, code, ans)
		}
		if rev, _ := ans["revision"].(string); rev != "" {
			answered = append(answered, rev)
		}
	}
	got := h.commits()
	if len(got) != len(answered) {
		t.Errorf("%d commits, %d answered with a revision", len(got), len(answered))
	}
	// The same events through apply's path (GitSink, one at a time) into another repo.
	url := h.git.Init("apply.git")
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: url, Author: gitrepo.Signature{Name: "a", Email: "a@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	p := &reconciler.Pipeline{Config: &cfg, Secrets: encrypting(t)}
	sink := &reconciler.GitSink{Repo: repo}
	for _, n := range names {
		ev, err := reconciler.Decode(fixture(t, n))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sink.Apply(context.Background(), p, ev); err != nil {
			t.Fatal(err)
		}
	}
	sameFiles(t, h.git, h.repo, "apply.git")
	if n := strings.TrimSpace(h.git.Git(h.git.Dir(h.repo), "rev-list", "--count", "main")); n != strings.TrimSpace(h.git.Git(h.git.Dir("apply.git"), "rev-list", "--count", "main")) {
		t.Errorf("serve made %s commits, apply a different number", n)
	}
	// No secret marker of the fixtures in any commit message (the log is checked when the
	// test ends, by the harness).
	messages := h.git.Git(h.git.Dir(h.repo), "log", "--format=%B", "main")
	leakcheck.Check(t, "the commit messages", []byte(messages))
	h.git.Fsck(h.repo)
}

// clusterEvent makes a resize event for cluster i with n workers.
func clusterEvent(t *testing.T, i, n int) []byte {
	t.Helper()
	ev, err := v1alpha1.DecodeEvent(fixture(t, "02-prod-a-resize-workers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = fmt.Sprintf("evt-%02d-%02d", i, n)
	ev.Cluster.UUID = fmt.Sprintf("3e9b7c52-1d4a-4f8e-9b6c-%012d", i)
	ev.Cluster.Name = fmt.Sprintf("c%02d", i)
	ev.Cluster.StackID = fmt.Sprintf("c%02d-stack", i)
	ev.Cluster.NodeCount = &n
	ev.NodeGroups[1].NodeCount = n
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConcurrentClusters: 50 clusters × 10 events posted concurrently (each cluster's in
// order): every event answered with its commit, each cluster's commits in its order, the
// history linear and fsck-clean.
func TestConcurrentClusters(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	const clusters, events = 50, 10
	var wg sync.WaitGroup
	revs := make([][]string, clusters)
	for i := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= events; n++ {
				code, ans := h.post(clusterEvent(t, i, n))
				if code != http.StatusOK || ans["revision"] == "" {
					t.Errorf("cluster %d event %d: %d %v", i, n, code, ans)
					return
				}
				revs[i] = append(revs[i], ans["revision"].(string))
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	dir := h.git.Dir(h.repo)
	if merges := strings.TrimSpace(h.git.Git(dir, "rev-list", "--merges", "main")); merges != "" {
		t.Errorf("merge commits in the history: %s", merges)
	}
	if n := strings.TrimSpace(h.git.Git(dir, "rev-list", "--count", "main")); n != fmt.Sprint(clusters*events) {
		t.Errorf("%s commits, want %d", n, clusters*events)
	}
	for i := range clusters {
		// Each answered commit is an ancestor of the next of the same cluster.
		for k := 1; k < len(revs[i]); k++ {
			h.git.Git(dir, "merge-base", "--is-ancestor", revs[i][k-1], revs[i][k])
		}
		hr := h.git.Git(dir, "show", fmt.Sprintf("main:clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/c%02d-stack/helmrelease.yaml", i))
		if !strings.Contains(hr, fmt.Sprintf("machineCount: %d\n", events)) {
			t.Errorf("cluster %d does not end with %d workers", i, events)
		}
	}
	h.git.Fsck(h.repo)
}

// TestBadRequests: each refusal has its status code and a clear message, and commits
// nothing; no secret value reaches a log line.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	good := fixture(t, "01-prod-a-create.yaml")
	do := func(method, ctype, auth string, body []byte) (int, string) {
		req, _ := http.NewRequest(method, h.url+"/v1/events", bytes.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, ctype, auth string
		body              []byte
		code              int
		want              string
	}{
		{"no token", "application/yaml", "", good, 401, "unauthorized"},
		{"wrong token", "application/yaml", "Bearer nope", good, 401, "unauthorized"},
		{"basic auth", "application/yaml", "Basic " + token, good, 401, "unauthorized"},
		{"content type", "text/plain", "Bearer " + token, good, 400, "Content-Type must be one of"},
		{"too large", "application/yaml", "Bearer " + token, bytes.Repeat([]byte("#"), 2<<20), 413, "too_large"},
		{"bad yaml", "application/yaml", "Bearer " + token, []byte("apiVersion: [\n"), 400, "not valid YAML or JSON"},
		{"unknown field", "application/json", "Bearer " + token, []byte(`{"apiVersion":"magnum-gitops.io/v1alpha1","kind":"ClusterEvent","operation":"create_cluster","clutser":{}}`), 400, `"field": "clutser"`},
		{"bad field", "application/yaml", "Bearer " + token, bytes.Replace(good, []byte("kube_version: v1.33.7"), []byte("kube_version: ''"), 1), 400, "resolved.image.kube_version"},
	} {
		code, body := do(http.MethodPost, tc.ctype, tc.auth, tc.body)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, body, tc.code, tc.want)
		}
	}
	if c := h.commits(); len(c) != 0 {
		t.Errorf("bad requests committed %d commits", len(c))
	}
	// The same id again: the same answer, no second commit; the same id with another body: 409.
	code, first := h.post(good)
	if code != 200 {
		t.Fatalf("%d %v", code, first)
	}
	code, again := h.post(good)
	if code != 200 || again["revision"] != first["revision"] {
		t.Errorf("retry: %d %v, want the first answer %v", code, again, first)
	}
	changed := bytes.Replace(good, []byte("node_count: 3"), []byte("node_count: 4"), 1)
	if code, ans := h.post(changed); code != http.StatusConflict || !strings.Contains(fmt.Sprint(ans), "idempotency_conflict") {
		t.Errorf("same id, other body: %d %v, want 409", code, ans)
	}
	if c := h.commits(); len(c) != 1 {
		t.Errorf("%d commits, want 1", len(c))
	}
	ev, _ := v1alpha1.DecodeEvent(good)
	logs := h.logs.String()
	for _, secret := range []string{ev.Secrets.ApplicationCredential.Secret.Reveal(), strings.Split(ev.Secrets.Certificates.CA.Key.Reveal(), "\n")[1]} {
		if strings.Contains(logs, secret) {
			t.Errorf("a secret value is in the logs (%.8s…)", secret)
		}
	}
	if !strings.Contains(logs, `"event_id":"evt-01-create-cluster"`) || !strings.Contains(logs, `"outcome":"committed"`) {
		t.Errorf("no event log line:\n%s", logs)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestResyncAtStart: a service started with settings that render a cluster differently
// commits the cluster's resync through its reconciler, one commit marked Magnum-Resync,
// and counts it as no event; a restart with the same settings commits nothing more.
func TestResyncAtStart(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	if code, ans := h.post(clusterEvent(t, 0, 1)); code != http.StatusOK {
		t.Fatalf("create: %d %v", code, ans)
	}
	upgrade := func(o *service.Options) {
		cfg := *o.Pipeline.Config
		cfg.Flux.Timeout.Duration += 2 * time.Minute
		o.Pipeline.Config = &cfg
	}
	dir := h.git.Dir(h.repo)
	for _, want := range []int{1, 1} { // resync commits after the upgrade, then none after a restart
		h.restart(upgrade)
		deadline := time.Now().Add(30 * time.Second)
		for {
			values, err := scrape(h.url)
			if err == nil && values["magnum_gitops_resync_duration_seconds_count"] > 0 {
				var events float64
				for name, v := range values {
					if strings.HasPrefix(name, "magnum_gitops_events_total{") {
						events += v
					}
				}
				if events != 0 {
					t.Errorf("the resync counted as %v events", events)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no resync at start")
			}
			time.Sleep(50 * time.Millisecond)
		}
		resyncs := strings.Fields(h.git.Git(dir, "log", "--format=%H", "--grep", "^"+reconciler.TrailerResync+": true", "main"))
		if len(resyncs) != want {
			t.Fatalf("%d resync commits, want %d:\n%s", len(resyncs), want, h.git.Git(dir, "log", "--format=%h %s", "main"))
		}
	}
}
