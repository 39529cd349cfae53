package reconciler_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// TestReconcilerGroupTimeout: a remote that takes the connection and never answers holds a
// group only for GroupTimeout: its event is answered "retry", and the reconciler stops when
// asked instead of waiting on the remote.
func TestReconcilerGroupTimeout(t *testing.T) {
	t.Parallel()
	remote := gitserver.Start(t)
	remote.Init("stall.git")
	target, err := url.Parse(remote.URL)
	if err != nil {
		t.Fatal(err)
	}
	var stall atomic.Bool
	released := make(chan struct{})
	fwd := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stall.Load() {
			select { // accepted, never answered (until the test ends)
			case <-r.Context().Done():
			case <-released:
			}
			return
		}
		fwd.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	t.Cleanup(func() { close(released) }) // before Close, which waits for the handlers
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: proxy.URL + "/stall.git",
		Author: gitrepo.Signature{Name: "magnum-gitops", Email: "m@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	q := &reconciler.Reconciler{Pipeline: &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: reconciler.SecretPolicy{Plaintext: true}},
		Sink: &reconciler.GitSink{Repo: repo}, MaxWait: time.Millisecond, GroupTimeout: time.Second}
	q.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()

	stall.Store(true)
	answered := make(chan reconciler.Summary, 1)
	go func() { answered <- q.Submit(context.Background(), event(t, "01-prod-a-create.yaml")) }()
	select {
	case sum := <-answered:
		if sum.Kind() != reconciler.KindRetry || sum.Revision != "" {
			t.Errorf("answer from a stalled remote: %+v, want a retry and no revision", sum)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the group waited on the stalled remote past its timeout")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reconciler did not stop")
	}
}

// TestReconcilerReports: each group's Report names each commit a push carried, with the
// cluster's namespace and the paths it changed, and nothing when an event changed nothing.
func TestReconcilerReports(t *testing.T) {
	t.Parallel()
	p, sink, _ := committer(t)
	reports := make(chan reconciler.Report, 1)
	q := &reconciler.Reconciler{Pipeline: p, Sink: sink, MaxWait: time.Millisecond, Reports: reports}
	q.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for _, tc := range []struct {
		event  string
		pushed bool
	}{
		{"01-prod-a-create.yaml", true},
		{"01-prod-a-create.yaml", false}, // nothing to change: no push
		{"02-prod-a-resize-workers.yaml", true},
	} {
		sum := q.Submit(context.Background(), event(t, tc.event))
		if sum.Err() != nil {
			t.Fatalf("%s: %v", tc.event, sum.Err())
		}
		rep := <-reports // one group a Submit: they come one at a time
		var pushes []reconciler.Push
		for _, res := range rep.Results {
			pushes = append(pushes, res.Pushed...)
		}
		if rep.Events != 1 || rep.Pushes != len(pushes) {
			t.Errorf("%s: the group cost %d events, %d pushes; want 1 event and %d pushes", tc.event, rep.Events, rep.Pushes, len(pushes))
		}
		switch {
		case !tc.pushed && len(pushes) > 0:
			t.Errorf("%s changed nothing, and the report asks Flux to fetch %+v", tc.event, pushes)
		case tc.pushed && (len(pushes) != 1 || pushes[0].Namespace != sum.Namespace || !slices.Contains(pushes[0].Paths, sum.Paths[0])):
			t.Errorf("%s: the report asks Flux to fetch %+v; want %s and the paths %v", tc.event, pushes, sum.Namespace, sum.Paths)
		}
	}
}
