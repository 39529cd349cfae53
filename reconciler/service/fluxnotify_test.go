package service_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
)

// gitRepository creates a Flux GitRepository in flux-system on the test API server (no
// source-controller runs: the test reads what the service wrote on it).
func gitRepository(t *testing.T, ctx context.Context, name string) *unstructured.Unstructured {
	t.Helper()
	if err := env.EnsureNamespace(ctx, "flux-system"); err != nil {
		t.Fatal(err)
	}
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	g.SetKind("GitRepository")
	g.SetNamespace("flux-system")
	g.SetName(name)
	_ = unstructured.SetNestedField(g.Object, map[string]any{"interval": "1m", "url": "https://git.example.org/cloud/magnum-clusters.git",
		"ref": map[string]any{"branch": "main"}}, "spec")
	if err := env.Client.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	return g
}

// requestedAt reads the GitRepository's reconcile request annotation and generation.
func requestedAt(t *testing.T, ctx context.Context, g *unstructured.Unstructured) (time.Time, int64) {
	t.Helper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(g.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(g), cur); err != nil {
		t.Fatal(err)
	}
	v := cur.GetAnnotations()[service.ReconcileRequestAnnotation]
	if v == "" {
		return time.Time{}, cur.GetGeneration()
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("%s = %q is not RFC 3339 as Flux expects: %v", service.ReconcileRequestAnnotation, v, err)
	}
	return at, cur.GetGeneration()
}

// TestReconcileRequestAfterPush: with serve.reconcile_request set, every pushed commit is
// followed by a new reconcile.fluxcd.io/requestedAt on the GitRepository (what Flux's CLI
// and Receivers set), written as a metadata-only patch that leaves the generation alone.
func TestReconcileRequestAfterPush(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := gitRepository(t, ctx, "reconcile-request")
	h := start(t, func(o *service.Options) {
		o.Management[0].Kube = env.Client
		o.Management[0].ReconcileRequest = service.ReconcileRequest{Namespace: "flux-system", Name: "reconcile-request"}
	})
	if at, _ := requestedAt(t, ctx, g); !at.IsZero() {
		t.Fatalf("requested at %s before any push", at)
	}
	var last time.Time
	for _, f := range []string{"01-prod-a-create.yaml", "02-prod-a-resize-workers.yaml"} {
		before := time.Now().Truncate(time.Millisecond)
		code, ans := h.post(fixture(t, f))
		if code != http.StatusOK || ans["outcome"] != "committed" {
			t.Fatalf("%s: %d %v", f, code, ans)
		}
		var at time.Time
		var gen int64
		waitUntil(t, ctx, func() bool {
			at, gen = requestedAt(t, ctx, g)
			return at.After(last) && !at.Before(before)
		})
		if gen != 1 {
			t.Errorf("the request changed the GitRepository's generation to %d: it must touch metadata only", gen)
		}
		last = at
	}
	// A retried event is answered from the ledger with the commit it was first answered
	// with: nothing is pushed, and nothing requested.
	if code, ans := h.post(fixture(t, "02-prod-a-resize-workers.yaml")); code != http.StatusOK {
		t.Fatalf("the same event again: %d %v", code, ans)
	}
	time.Sleep(500 * time.Millisecond)
	if at, _ := requestedAt(t, ctx, g); !at.Equal(last) {
		t.Errorf("a reconcile was requested (%s) without a push", at)
	}
}

// TestReconcileRequestArgo: in Argo mode serve.reconcile_request names the Application that
// syncs the repository, and every pushed commit is followed by Argo CD's refresh request
// on it (argocd.argoproj.io/refresh: normal, which the application controller removes once
// it compared), written as a metadata-only patch.
func TestReconcileRequestArgo(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.EnsureNamespace(ctx, "argocd"); err != nil {
		t.Fatal(err)
	}
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace("argocd")
	app.SetName("magnum-clusters")
	_ = unstructured.SetNestedField(app.Object, map[string]any{"project": "default",
		"destination": map[string]any{"server": "https://kubernetes.default.svc"},
		"source":      map[string]any{"repoURL": "https://git.example.org/cloud/magnum-clusters.git", "path": "clusters/magnum", "targetRevision": "main"}}, "spec")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	h := start(t, func(o *service.Options) {
		cfg := generator.DefaultConfig()
		cfg.Format = generator.FormatArgo
		o.Pipeline.Config = generator.MustSite(cfg)
		o.Management[0].Kube = env.Client
		o.Management[0].ReconcileRequest = service.ReconcileRequest{Namespace: "argocd", Name: "magnum-clusters"}
	})
	refresh := func() (string, int64) {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(app.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), cur); err != nil {
			t.Fatal(err)
		}
		return cur.GetAnnotations()[service.ArgoRefreshAnnotation], cur.GetGeneration()
	}
	if v, _ := refresh(); v != "" {
		t.Fatalf("refresh %q requested before any push", v)
	}
	for _, f := range []string{"01-prod-a-create.yaml", "02-prod-a-resize-workers.yaml"} {
		code, ans := h.post(fixture(t, f))
		if code != http.StatusOK || ans["outcome"] != "committed" {
			t.Fatalf("%s: %d %v", f, code, ans)
		}
		var v string
		var gen int64
		waitUntil(t, ctx, func() bool {
			v, gen = refresh()
			return v != ""
		})
		if v != "normal" || gen != 1 {
			t.Errorf("after %s: %s=%q at generation %d, want normal at 1 (metadata only)", f, service.ArgoRefreshAnnotation, v, gen)
		}
		// What the application controller does once it compared.
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(app.GroupVersionKind())
		cur.SetNamespace("argocd")
		cur.SetName("magnum-clusters")
		if err := env.Client.Patch(ctx, cur, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+service.ArgoRefreshAnnotation+`":null}}}`))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReconcileRequestFailureDoesNotFailEvents: a GitRepository that cannot be annotated
// (absent here; forbidden in a real cluster) is logged, and events are still answered
// with their commit: Flux then picks them up at its interval.
func TestReconcileRequestFailureDoesNotFailEvents(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := start(t, func(o *service.Options) {
		o.Management[0].Kube = env.Client
		o.Management[0].ReconcileRequest = service.ReconcileRequest{Namespace: "flux-system", Name: "no-such-gitrepository"}
	})
	code, ans := h.post(fixture(t, "01-prod-a-create.yaml"))
	if code != http.StatusOK || ans["outcome"] != "committed" {
		t.Fatalf("%d %v", code, ans)
	}
	waitUntil(t, ctx, func() bool {
		return strings.Contains(h.logs.String(), "requesting a Flux reconcile of the GitRepository") &&
			strings.Contains(h.logs.String(), "flux-system/no-such-gitrepository")
	})
}

// TestReconcileRequestPerNamespace: in the per-namespace layout a push asks the changed
// namespace's own GitRepository to fetch, and the root one only when the push changed what
// the root applies (the namespace's Flux objects, a chart source): an update of one
// cluster rebuilds its namespace alone.
func TestReconcileRequestPerNamespace(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns = "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c" // the fixtures' project
	root := gitRepository(t, ctx, "per-namespace-root")
	own := gitRepository(t, ctx, ns)
	h := start(t, func(o *service.Options) {
		o.Management[0].Kube = env.Client
		o.Management[0].ReconcileRequest = service.ReconcileRequest{Namespace: "flux-system", Name: "per-namespace-root"}
		f := &o.Pipeline.Config.Flux
		f.Layout, f.Git.URL = generator.LayoutPerNamespace, "https://git.example.org/cloud/magnum-clusters.git"
	})
	// The create writes the namespace's GitRepository and Kustomization: both fetch.
	before := time.Now().Truncate(time.Millisecond)
	if code, ans := h.post(fixture(t, "01-prod-a-create.yaml")); code != http.StatusOK || ans["outcome"] != "committed" {
		t.Fatalf("create: %d %v", code, ans)
	}
	var rootAt, ownAt time.Time
	waitUntil(t, ctx, func() bool {
		rootAt, _ = requestedAt(t, ctx, root)
		ownAt, _ = requestedAt(t, ctx, own)
		return !rootAt.Before(before) && !ownAt.Before(before)
	})
	// A resize changes the cluster's directory only.
	if code, ans := h.post(fixture(t, "02-prod-a-resize-workers.yaml")); code != http.StatusOK || ans["outcome"] != "committed" {
		t.Fatalf("resize: %d %v", code, ans)
	}
	waitUntil(t, ctx, func() bool {
		at, _ := requestedAt(t, ctx, own)
		return at.After(ownAt)
	})
	time.Sleep(300 * time.Millisecond) // the root's patch, were it made, would be in the same batch
	if at, _ := requestedAt(t, ctx, root); !at.Equal(rootAt) {
		t.Errorf("the root GitRepository was asked to fetch (%s) for a change inside one namespace", at)
	}
}

// TestReconcileRequestArgoPerNamespace: in Argo mode with the per-namespace layout a push
// refreshes the changed namespace's parent Application, and the root Application only when
// the push changed what the root applies (the namespace's parent Application).
func TestReconcileRequestArgoPerNamespace(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns = "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c" // the fixtures' project
	if err := env.EnsureNamespace(ctx, "argocd-pn"); err != nil {
		t.Fatal(err)
	}
	application := func(name, path string) *unstructured.Unstructured {
		app := &unstructured.Unstructured{}
		app.SetAPIVersion("argoproj.io/v1alpha1")
		app.SetKind("Application")
		app.SetNamespace("argocd-pn")
		app.SetName(name)
		_ = unstructured.SetNestedField(app.Object, map[string]any{"project": "default",
			"destination": map[string]any{"server": "https://kubernetes.default.svc"},
			"source":      map[string]any{"repoURL": "https://git.example.org/cloud/magnum-clusters.git", "path": path, "targetRevision": "main"}}, "spec")
		if err := env.Client.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
		return app
	}
	root, own := application("magnum-clusters", "clusters/magnum/flux"), application(ns, "clusters/magnum/"+ns)
	refreshed := func(app *unstructured.Unstructured) bool {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(app.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), cur); err != nil {
			t.Fatal(err)
		}
		return cur.GetAnnotations()[service.ArgoRefreshAnnotation] == "normal"
	}
	compared := func(app *unstructured.Unstructured) { // what the application controller does
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(app.GroupVersionKind())
		cur.SetNamespace(app.GetNamespace())
		cur.SetName(app.GetName())
		if err := env.Client.Patch(ctx, cur, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+service.ArgoRefreshAnnotation+`":null}}}`))); err != nil {
			t.Fatal(err)
		}
	}
	h := start(t, func(o *service.Options) {
		cfg := generator.DefaultConfig()
		cfg.Format = generator.FormatArgo
		cfg.Argo.Namespace, cfg.Argo.RepoURL, cfg.Argo.TargetRevision = "argocd-pn", "https://git.example.org/cloud/magnum-clusters.git", "main"
		cfg.Flux.Layout = generator.LayoutPerNamespace
		o.Pipeline.Config = generator.MustSite(cfg)
		o.Management[0].Kube = env.Client
		o.Management[0].ReconcileRequest = service.ReconcileRequest{Namespace: "argocd-pn", Name: "magnum-clusters"}
	})
	// The create writes the namespace's parent Application: both are refreshed.
	if code, ans := h.post(fixture(t, "01-prod-a-create.yaml")); code != http.StatusOK || ans["outcome"] != "committed" {
		t.Fatalf("create: %d %v", code, ans)
	}
	waitUntil(t, ctx, func() bool { return refreshed(root) && refreshed(own) })
	compared(root)
	compared(own)
	// A resize changes the cluster's directory only.
	if code, ans := h.post(fixture(t, "02-prod-a-resize-workers.yaml")); code != http.StatusOK || ans["outcome"] != "committed" {
		t.Fatalf("resize: %d %v", code, ans)
	}
	waitUntil(t, ctx, func() bool { return refreshed(own) })
	time.Sleep(300 * time.Millisecond) // the root's patch, were it made, would be in the same batch
	if refreshed(root) {
		t.Errorf("the root Application was refreshed for a change inside one namespace")
	}
}

// TestReconcileRequestForUnappliedAtStart: a replica stopped between its push and its
// reconcile request (here: one started without a request configured) leaves a commit Flux
// has not fetched; the service started again asks Flux to fetch it, though it pushes
// nothing, and asks nothing once the Kustomization has applied the cluster's commit.
func TestReconcileRequestForUnappliedAtStart(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := gitRepository(t, ctx, "unapplied-at-start")
	h := start(t, nil) // no reconcile request: the push asks nothing
	code, ans := h.post(fixture(t, "01-prod-a-create.yaml"))
	if code != http.StatusOK || ans["outcome"] != "committed" {
		t.Fatalf("%d %v", code, ans)
	}
	commit, _ := ans["revision"].(string)
	if len(commit) != 40 {
		t.Fatalf("answer %v names no commit", ans)
	}
	withRequest := func(o *service.Options) {
		o.Management[0].Kube = env.Client
		o.Management[0].ReconcileRequest = service.ReconcileRequest{Namespace: "flux-system", Name: "unapplied-at-start"}
	}

	// Flux applied an older revision (nothing, here): the restarted service asks.
	h.restart(withRequest)
	var first time.Time
	waitUntil(t, ctx, func() bool {
		first, _ = requestedAt(t, ctx, g)
		return !first.IsZero()
	})

	// Flux has applied the commit: a restart asks nothing more.
	kustomization := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n" +
		"metadata: {name: magnum-clusters, namespace: flux-system}\n" +
		"status: {lastAppliedRevision: main@sha1:" + commit + "}\n"
	if err := os.WriteFile(h.objects, []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	h.restart(withRequest)
	time.Sleep(500 * time.Millisecond)
	if at, _ := requestedAt(t, ctx, g); !at.Equal(first) {
		t.Errorf("a reconcile was requested (%s) for a commit Flux has applied", at)
	}
	if !strings.Contains(h.logs.String(), "asking Flux to fetch commits it has not applied") {
		t.Error("the first restart did not say it asked Flux to fetch")
	}
}
