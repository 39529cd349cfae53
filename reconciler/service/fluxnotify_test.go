package service_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
		o.Kube = env.Client
		o.ReconcileRequest = service.ReconcileRequest{Namespace: "flux-system", Name: "reconcile-request"}
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

// TestReconcileRequestFailureDoesNotFailEvents: a GitRepository that cannot be annotated
// (absent here; forbidden in a real cluster) is logged, and events are still answered
// with their commit: Flux then picks them up at its interval.
func TestReconcileRequestFailureDoesNotFailEvents(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := start(t, func(o *service.Options) {
		o.Kube = env.Client
		o.ReconcileRequest = service.ReconcileRequest{Namespace: "flux-system", Name: "no-such-gitrepository"}
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
