package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
)

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
