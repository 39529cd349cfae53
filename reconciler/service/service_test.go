package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
		Pipeline: &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: encrypting(t)},
		Sink:     &reconciler.GitSink{Repo: repo}, Listen: "127.0.0.1:0",
		Tokens: httpapi.Tokens{[]byte(token)}, Management: []service.ManagementCluster{{Status: objectsFile(h.objects)}}, DeleteInterval: 50 * time.Millisecond,
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
	h := start(t, func(o *service.Options) { o.Management = nil })
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
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: encrypting(t)}
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
		resyncs := strings.Fields(h.git.Git(dir, "log", "--format=%H", "--grep", "^Magnum-Resync: true", "main"))
		if len(resyncs) != want {
			t.Fatalf("%d resync commits, want %d:\n%s", len(resyncs), want, h.git.Git(dir, "log", "--format=%h %s", "main"))
		}
	}
}

// TestResyncAtStartKeepsSettled: a service whose gate saves what it knows keeps, across a
// restart of the same build, the clusters its last resync found as rendered: the first
// resync of the next start renders none of them.
func TestResyncAtStartKeepsSettled(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "settled")
	kept := func(o *service.Options) { o.SettledFile, o.Build = file, "build-1" }
	h := start(t, kept)
	h.resyncsDone(1)
	if code, ans := h.post(clusterEvent(t, 0, 1)); code != http.StatusOK {
		t.Fatalf("create: %d %v", code, ans)
	}
	h.restart(kept) // its resync renders the cluster, finds it as rendered and saves that
	h.resyncsDone(2)
	h.restart(kept)
	if got, want := h.resyncsDone(3), []float64{0, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("clusters rendered by the resync of each start: %v, want %v", got, want)
	}
}

// resyncsDone waits until the service logged n resyncs done, and returns how many
// clusters each rendered.
func (h *harness) resyncsDone(n int) []float64 {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var rendered []float64
		for _, line := range strings.Split(h.logs.String(), "\n") {
			var l struct {
				Msg      string  `json:"msg"`
				Rendered float64 `json:"rendered"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "resync done" {
				rendered = append(rendered, l.Rendered)
			}
		}
		if len(rendered) >= n {
			return rendered
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%d resyncs done; want %d", len(rendered), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// holder is a Resolver that holds the reconcile of one event (by id) until released: while
// it holds, every event posted waits, each cluster's in the order the handlers submitted
// them, and all of them form the next group.
type holder struct {
	id       string
	entered  chan struct{}
	release  chan struct{}
	once     sync.Once
	released sync.Once
}

func newHolder(id string) *holder {
	return &holder{id: id, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *holder) Resolve(ctx context.Context, ev *v1alpha1.ClusterEvent) error {
	if ev.ID != g.id {
		return nil
	}
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *holder) open() { g.released.Do(func() { close(g.release) }) }

// TestClusterOrderWithinGroup: several events of each of a few clusters, arriving in a
// known order, are reconciled in one group and pushed at once; each cluster's commits
// follow the arrival order in the first-parent history, every answer is 200 with the
// commit that carries its event, and each record holds the cluster's last event.
//
// How the arrival order is made known: a first "gate" event is posted alone, and a
// Resolver holds its reconcile. While it holds, the reconciler takes nothing more, so the
// events posted next wait, each cluster's in the order their handlers submitted them; when
// the gate opens, the reconciler takes them all as one group (MaxGroup is larger than
// their number and they are all there before MaxWait starts). The grouping is therefore
// deterministic. The order is made by posting one request at a time, 30ms apart,
// interleaving the clusters: consecutive events of one cluster are posted 90ms apart,
// while a handler needs about a millisecond from receiving a request to submitting it
// (read the body, decode). HTTP/1.1 gives no way to post without waiting for the answer on
// one connection, and nothing outside the reconciler sees a submission before its answer,
// so a time gap far larger than the handler's work is what sequences arrivals.
//
// The whole history follows the arrival order too: the group's plans are made side by
// side, and each cluster's next event reads the record its previous one wrote, so the
// chain takes one event of every cluster per round.
func TestClusterOrderWithinGroup(t *testing.T) {
	t.Parallel()
	const clusters, events = 3, 4
	g := newHolder("evt-99-01")
	h := start(t, func(o *service.Options) {
		o.Management = nil
		o.MaxGroup, o.MaxWait = 100, 200*time.Millisecond
		o.Pipeline.Resolvers = append(o.Pipeline.Resolvers, g)
	})
	t.Cleanup(g.open) // runs before the harness stops the service
	dir := h.git.Dir(h.repo)
	// One reflog entry per update of main: per push.
	h.git.Git(dir, "config", "core.logAllRefUpdates", "always")

	type answer struct {
		code int
		ans  map[string]any
	}
	var wg sync.WaitGroup
	gateAnswer := make(chan answer, 1)
	wg.Go(func() {
		code, ans := h.post(clusterEvent(t, 99, 1))
		gateAnswer <- answer{code, ans}
	})
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the gate event was not processed")
	}

	answers := make([][]answer, clusters)
	for i := range answers {
		answers[i] = make([]answer, events)
	}
	var arrival []string // event ids in the order posted
	for n := 1; n <= events; n++ {
		for i := range clusters {
			arrival = append(arrival, fmt.Sprintf("evt-%02d-%02d", i, n))
			body := clusterEvent(t, i, n)
			wg.Go(func() {
				code, ans := h.post(body)
				answers[i][n-1] = answer{code, ans}
			})
			time.Sleep(30 * time.Millisecond)
		}
	}
	g.open()
	wg.Wait()

	if a := <-gateAnswer; a.code != http.StatusOK {
		t.Fatalf("gate event: %d %v", a.code, a.ans)
	}
	// Every answer is 200 with the commit that carries its event.
	carries := map[string]string{} // commit → event id, from the history
	log := strings.TrimSpace(h.git.Git(dir, "log", "--first-parent", "--reverse", "--format=%H %(trailers:key=Magnum-Event-ID,valueonly,separator=)", "main"))
	var history []string // event ids, oldest first
	for _, line := range strings.Split(log, "\n") {
		commit, id, _ := strings.Cut(line, " ")
		carries[commit] = id
		history = append(history, id)
	}
	revs := map[string]bool{}
	for i := range clusters {
		for n := 1; n <= events; n++ {
			a, id := answers[i][n-1], fmt.Sprintf("evt-%02d-%02d", i, n)
			rev, _ := a.ans["revision"].(string)
			switch {
			case a.code != http.StatusOK:
				t.Errorf("%s: %d %v", id, a.code, a.ans)
			case rev == "":
				t.Errorf("%s: answered without a revision: %v", id, a.ans)
			case carries[rev] != id:
				t.Errorf("%s: answered with %s, which carries %q", id, rev, carries[rev])
			}
			revs[rev] = true
		}
	}
	if t.Failed() {
		return
	}
	// The history is the gate, then the group in arrival order: in particular each
	// cluster's events in the order they arrived.
	if diff := cmp.Diff(append([]string{"evt-99-01"}, arrival...), history); diff != "" {
		t.Errorf("first-parent history, oldest first, is not the arrival order (-arrival +history):\n%s", diff)
	}
	for i := range clusters {
		var got []string
		for _, id := range history {
			if strings.HasPrefix(id, fmt.Sprintf("evt-%02d-", i)) {
				got = append(got, id)
			}
		}
		want := []string{}
		for n := 1; n <= events; n++ {
			want = append(want, fmt.Sprintf("evt-%02d-%02d", i, n))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("cluster %d committed in another order than it arrived (-arrived +committed):\n%s", i, diff)
		}
		record := h.git.Git(dir, "show", fmt.Sprintf("main:clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/c%02d-stack/magnum-cluster.yaml", i))
		ev, err := v1alpha1.DecodeEvent([]byte(record))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("evt-%02d-%02d", i, events); ev.ID != want {
			t.Errorf("cluster %d's record holds event %q, want its last, %s", i, ev.ID, want)
		}
	}
	// The events really shared a group: main moved twice, by the gate's push and then by
	// one push whose new commits are exactly the answered ones.
	pushes := strings.Fields(h.git.Git(dir, "reflog", "show", "--format=%H", "main"))
	if len(pushes) != 2 {
		t.Fatalf("main was updated %d times, want 2 (the gate, then one push for the group): %v", len(pushes), pushes)
	}
	pushed := strings.Fields(h.git.Git(dir, "rev-list", "--reverse", pushes[1]+".."+pushes[0]))
	if len(pushed) != clusters*events || len(revs) != clusters*events {
		t.Errorf("the group's push carried %d commits, %d distinct answered; want %d", len(pushed), len(revs), clusters*events)
	}
	for _, c := range pushed {
		if !revs[c] {
			t.Errorf("the group's push carried %s (%s), which no answer names", c, carries[c])
		}
	}
	// The group size metric saw a group of more than 10 events (whether it counts per
	// group or per event), counted from the reports, which follow the answers.
	values, err := scrapeGroups(h.url, 1)
	if err != nil {
		t.Fatal(err)
	}
	if big := values[`magnum_gitops_group_size_bucket{le="+Inf"}`] - values[`magnum_gitops_group_size_bucket{le="10"}`]; big < 1 {
		t.Errorf("the group size metric saw no group of more than 10 events")
	}
	h.git.Fsck(h.repo)
}

// TestConflictAnswers409WithPaths: someone edits a cluster's HelmRelease directly in the
// repository (another worker count than the next event wants); the service's next event
// for that cluster, built on its last fetched head, finds on the push that the remote
// changed that path to other content than it wants, and answers 409 naming the path,
// without committing anything.
//
// gitrepo's conflict rule compares the remote head with the head the change was first
// built on, the service's last fetched one: an edit conflicts only when the service has
// not fetched since it. Here nothing fetches between the create's push and the resize (the
// service fetches on its own only after some seconds without a push); once it has
// fetched, the same edit is overwritten without a conflict.
func TestConflictAnswers409WithPaths(t *testing.T) {
	t.Parallel()
	h := start(t, func(o *service.Options) { o.Management = nil })
	code, created := h.post(fixture(t, "01-prod-a-create.yaml"))
	if code != http.StatusOK {
		t.Fatalf("create: %d %v", code, created)
	}
	const hrPath = "clusters/magnum/magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c/prod-a-2b7xq4mzkd5h/helmrelease.yaml"

	// An operator scales the workers to 7 by hand, in a clone of the remote.
	bare := h.git.Dir(h.repo)
	work := filepath.Join(t.TempDir(), "work")
	h.git.Git("", "clone", "-q", bare, work)
	file := filepath.Join(work, hrPath)
	hr, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The node group's entry (the control plane's machineCount is no list item).
	if strings.Count(string(hr), "- machineCount: 3\n") != 1 || !strings.Contains(string(hr), "name: default-worker\n") {
		t.Fatalf("the HelmRelease has no single node group of 3 machines:\n%s", hr)
	}
	edited := strings.Replace(string(hr), "- machineCount: 3\n", "- machineCount: 7\n", 1)
	if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	h.git.Git(work, "commit", "-q", "-am", "scale prod-a's workers to 7 by hand")
	h.git.Git(work, "push", "-q", "origin", "main")
	manual := strings.TrimSpace(h.git.Git(work, "rev-parse", "HEAD"))

	// The service has not fetched since its create: the resize to 5 workers is built on
	// the create, its push is refused, and on the new head the HelmRelease differs from
	// both the create's and the resize's.
	code, ans := h.post(fixture(t, "02-prod-a-resize-workers.yaml"))
	if code != http.StatusConflict {
		t.Fatalf("resize after a manual edit: %d %v, want 409", code, ans)
	}
	e, _ := ans["error"].(map[string]any)
	if e["code"] != "conflict" {
		t.Errorf("error code %v, want conflict: %v", e["code"], ans)
	}
	var paths []string
	if ps, ok := e["paths"].([]any); ok {
		for _, p := range ps {
			paths = append(paths, fmt.Sprint(p))
		}
	}
	if diff := cmp.Diff([]string{hrPath}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	msg, _ := e["message"].(string)
	if !strings.Contains(msg, "changed on the remote since the change was made") || !strings.Contains(msg, hrPath) {
		t.Errorf("message %q does not say which path changed on the remote", msg)
	}
	if head := strings.TrimSpace(h.git.Git(bare, "rev-parse", "main")); head != manual {
		t.Errorf("main is %s, want the manual commit %s: the service committed", head, manual)
	}
	if got := h.git.Git(bare, "show", "main:"+hrPath); got != edited {
		t.Errorf("the manual edit was overwritten:\n%s", got)
	}
	values, err := scrape(h.url)
	if err != nil {
		t.Fatal(err)
	}
	if got := values[`magnum_gitops_events_total{operation="resize_cluster",outcome="conflict"}`]; got != 1 {
		t.Errorf("resize conflicts counted %v, want 1", got)
	}
	if got := values["magnum_gitops_conflicts_total"]; got != 1 {
		t.Errorf("conflicts_total %v, want 1", got)
	}
	h.git.Fsck(h.repo)
}

// fresh is a client without kept-alive connections: the service closes idle ones when it
// starts draining, and a request must not meet a connection closed under it.
var fresh = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// send makes one request with the token; a connection error is returned, not fatal, so
// that it can be called off the test's goroutine.
func send(method, url, ctype string, body []byte) (int, http.Header, string, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := fresh.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), err
}

// TestGracefulShutdown: once the context ends, the service keeps its listener open for
// ShutdownDelay: /readyz answers 503 at once, a new event gets 503 "shutting down" (not a
// refused connection) and is counted, and an event in flight when the context ended still
// gets 200 with its commit. Run returns only after the delay and the event in flight.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	inFlight := fixture(t, "01-prod-a-create.yaml")
	entered, release := make(chan struct{}), make(chan struct{})
	var enterOnce, releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	h := start(t, func(o *service.Options) {
		o.ShutdownDelay = delay
		// The event in flight waits in its render until the test lets it go.
		o.Pipeline.Resolvers = append(o.Pipeline.Resolvers, resolverFunc(func(ctx context.Context, ev *v1alpha1.ClusterEvent) error {
			if ev.ID == "evt-01-create-cluster" {
				enterOnce.Do(func() { close(entered) })
				<-release
			}
			return nil
		}))
	})
	t.Cleanup(unblock) // registered after the harness's stop, so it runs first if the test fails early
	if code, _, body, err := send(http.MethodGet, h.url+"/readyz", "", nil); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz before shutdown: %d %s %v", code, body, err)
	}

	type answer struct {
		code int
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		code, _, body, err := send(http.MethodPost, h.url+"/v1/events", "application/yaml", inFlight)
		answered <- answer{code, body, err}
	}()
	select {
	case <-entered:
	case a := <-answered:
		t.Fatalf("the event was answered before it was held: %+v", a)
	case <-time.After(30 * time.Second):
		t.Fatal("the event never reached its render")
	}
	cancelled := time.Now()
	h.cancel()

	// /readyz fails at once (Kubernetes takes the endpoint out), over an open listener.
	for {
		code, _, body, err := send(http.MethodGet, h.url+"/readyz", "", nil)
		if err != nil {
			t.Fatalf("/readyz while draining: %v", err)
		}
		if code == http.StatusServiceUnavailable && strings.Contains(body, "shutting down") {
			break
		}
		if code != http.StatusOK || time.Since(cancelled) > time.Second {
			t.Fatalf("/readyz while draining: %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A new event is refused with a 503 its client retries elsewhere.
	code, header, body, err := send(http.MethodPost, h.url+"/v1/events", "application/yaml", fixture(t, "02-prod-a-resize-workers.yaml"))
	if err != nil {
		t.Fatalf("a new event while draining: %v", err)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") || header.Get("Retry-After") == "" {
		t.Fatalf("a new event while draining: %d %v %s, want 503 shutting down with Retry-After", code, header, body)
	}
	values, err := scrape(h.url)
	if err != nil {
		t.Fatalf("/metrics while draining: %v", err)
	}
	if got := values[`magnum_gitops_events_total{operation="unknown",outcome="retry"}`]; got != 1 {
		t.Errorf("refused while draining: counted %v, want 1", got)
	}
	if time.Since(cancelled) >= delay {
		t.Fatalf("the checks took longer than the delay (%s): the test proves nothing", delay)
	}

	// The event in flight finishes, with its commit.
	unblock()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the event in flight was never answered")
	}
	if a.err != nil || a.code != http.StatusOK {
		t.Fatalf("the event in flight: %d %s %v, want 200", a.code, a.body, a.err)
	}
	var sum struct {
		Revision string `json:"revision"`
	}
	if err := json.Unmarshal([]byte(a.body), &sum); err != nil || sum.Revision == "" {
		t.Fatalf("the event in flight has no commit: %s", a.body)
	}
	if !slices.Contains(h.commits(), sum.Revision) {
		t.Errorf("commit %s is not in the remote", sum.Revision)
	}

	select {
	case err := <-h.done:
		h.done <- err // the harness's cleanup waits for it too
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		if took := time.Since(cancelled); took < delay {
			t.Errorf("Run returned %s after the context ended, before the %s delay", took, delay)
		}
	case <-time.After(delay + 30*time.Second):
		t.Fatal("Run did not return")
	}
	if _, _, _, err := send(http.MethodGet, h.url+"/healthz", "", nil); err == nil {
		t.Error("the listener is still open after Run returned")
	}
}

// TestReadyzFromChecks: /readyz answers from the background check of the Git remote, so
// probes cost no fetch (which would take the repository's lock); the remote failing makes
// the service not ready within a few checks, and its recovery ready again.
func TestReadyzFromChecks(t *testing.T) {
	t.Parallel()
	remote := gitserver.Start(t)
	target, err := url.Parse(remote.URL)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy in front of the remote counts the fetches and can fail them.
	var fetches atomic.Int64
	var down atomic.Bool
	fwd := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, "service=git-upload-pack") {
			fetches.Add(1)
		}
		if down.Load() {
			http.Error(w, "the Git server is down", http.StatusServiceUnavailable)
			return
		}
		fwd.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	remote.Init("ready.git")
	const interval = 300 * time.Millisecond
	h := start(t, func(o *service.Options) {
		repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: proxy.URL + "/ready.git",
			Author: gitrepo.Signature{Name: "magnum-gitops", Email: "magnum-gitops@example.org"}})
		if err != nil {
			t.Fatal(err)
		}
		o.Sink, o.ReadyInterval = &reconciler.GitSink{Repo: repo}, interval
	})
	readyz := func() (int, string) {
		t.Helper()
		code, _, body, err := send(http.MethodGet, h.url+"/readyz", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return code, body
	}

	before := fetches.Load()
	probes := time.Now()
	const n = 50
	for range n {
		if code, body := readyz(); code != http.StatusOK {
			t.Fatalf("/readyz: %d %s", code, body)
		}
	}
	// At most the background checks of the time the probes took, not one per probe.
	if got, most := fetches.Load()-before, int64(time.Since(probes)/interval)+2; got > most {
		t.Errorf("%d probes made %d fetches, want at most %d", n, got, most)
	}

	waitFor := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(10*interval + 10*time.Second)
		for {
			code, body := readyz()
			if code == want && (want == http.StatusOK || strings.Contains(body, "git:")) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /readyz still answers %d %s", what, code, body)
			}
			time.Sleep(interval / 3)
		}
	}
	down.Store(true)
	waitFor(http.StatusServiceUnavailable, "the remote is down")
	down.Store(false)
	waitFor(http.StatusOK, "the remote is back")
	if !strings.Contains(h.logs.String(), "the remote does not answer") {
		t.Error("the outage was not logged")
	}
}

// resolverFunc adapts a function to reconciler.Resolver.
type resolverFunc func(ctx context.Context, ev *v1alpha1.ClusterEvent) error

func (f resolverFunc) Resolve(ctx context.Context, ev *v1alpha1.ClusterEvent) error {
	return f(ctx, ev)
}
