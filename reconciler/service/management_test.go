package service_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
	"github.com/magnum-gitops/magnum-gitops/status/kube"
)

// mgmtCluster is one management cluster of TestTwoManagementClusters: a real API server,
// an informer cache on it, and the Kustomization the test plays Flux with.
type mgmtCluster struct {
	name string
	c    client.Client
	r    cache.Cache
}

func newMgmtCluster(t *testing.T, ctx context.Context, name string, e *testenv.Env, namespaces ...string) *mgmtCluster {
	t.Helper()
	for _, n := range append(namespaces, "flux-system") {
		if err := e.EnsureNamespace(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	r, err := cache.New(e.Config, kube.CacheOptions())
	if err != nil {
		t.Fatal(err)
	}
	go r.Start(ctx)
	if !r.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	return &mgmtCluster{name: name, c: e.Client, r: r}
}

func (m *mgmtCluster) kustomization() *unstructured.Unstructured {
	k := &unstructured.Unstructured{}
	k.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	k.SetKind("Kustomization")
	k.SetName(m.name)
	k.SetNamespace("flux-system")
	return k
}

// apply plays this management cluster's Flux: its Kustomization, created the first time,
// has applied commit. Until then the management cluster has no Kustomization at all.
func (m *mgmtCluster) apply(t *testing.T, ctx context.Context, commit string) {
	t.Helper()
	k := m.kustomization()
	err := m.c.Get(ctx, client.ObjectKeyFromObject(k), k)
	if apierrors.IsNotFound(err) {
		_ = unstructured.SetNestedField(k.Object, map[string]any{"interval": "10m", "path": "./clusters/" + m.name, "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": m.name}}, "spec")
		err = m.c.Create(ctx, k)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(k.Object, "main@sha1:"+commit, "status", "lastAppliedRevision")
	if err := m.c.Status().Update(ctx, k); err != nil {
		t.Fatal(err)
	}
}

// secrets creates a cluster's Secrets as Flux would have, with the prune guard.
func (m *mgmtCluster) secrets(t *testing.T, ctx context.Context, namespace string, names []string) {
	t.Helper()
	for _, name := range names {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Annotations: map[string]string{"kustomize.toolkit.fluxcd.io/prune": "disabled"}}, StringData: map[string]string{"k": "v"}}
		if err := m.c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// left counts which of a cluster's Secrets are still there.
func (m *mgmtCluster) left(ctx context.Context, namespace string, names []string) int {
	n := 0
	for _, name := range names {
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			n++
		}
	}
	return n
}

// TestTwoManagementClusters: one serve, one repository, two management clusters on two
// real kube-apiservers, one per region. Each cluster is committed under its management
// cluster's path, its status is read from that one's Flux, and its delete finishes there:
// the same-named Secrets on the other management cluster are left alone.
func TestTwoManagementClusters(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env2, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env2.Stop() })
	const (
		nsOne      = "magnum-fakeproject"
		stackIDOne = "cluster-example-a-111111111111"
		dirOne     = "clusters/region-one/" + nsOne + "/" + stackIDOne
		dirTwo     = "clusters/region-two/" + ns + "/" + stackID
	)
	one := newMgmtCluster(t, ctx, "region-one", env, ns, nsOne)
	two := newMgmtCluster(t, ctx, "region-two", env2, ns, nsOne)
	// The same names on both: a delete must take them from its own management cluster only.
	one.secrets(t, ctx, ns, secretNames)
	two.secrets(t, ctx, ns, secretNames)

	h := start(t, func(o *service.Options) {
		o.Pipeline.Config.ManagementClusters = []generator.ManagementCluster{
			{Name: "region-one", Path: "clusters/region-one", Regions: []string{"RegionOne"}},
			{Name: "region-two", Path: "clusters/region-two", Regions: []string{"RegionTwo"}},
		}
		o.Management = []service.ManagementCluster{
			{Name: "region-one", Status: kube.Source{Reader: one.r}, Kube: one.c, Kustomization: "flux-system/region-one"},
			{Name: "region-two", Status: kube.Source{Reader: two.r}, Kube: two.c, Kustomization: "flux-system/region-two"},
		}
	})
	regionTwo := bytes.ReplaceAll(fixture(t, "01-prod-a-create.yaml"), []byte("region_name: RegionOne"), []byte("region_name: RegionTwo"))
	for _, tc := range []struct {
		body []byte
		want string
	}{{fixture(t, "10-baseline-driver-defaults.yaml"), "region-one"}, {regionTwo, "region-two"}} {
		if code, ans := h.post(tc.body); code != http.StatusOK || ans["management_cluster"] != tc.want {
			t.Fatalf("%d %v; want management_cluster %s", code, ans, tc.want)
		}
	}
	files := func() string { return h.git.Git(h.git.Dir(h.repo), "ls-tree", "-r", "--name-only", "main") }
	if f := files(); !strings.Contains(f, dirOne+"/helmrelease.yaml") || !strings.Contains(f, dirTwo+"/helmrelease.yaml") {
		t.Fatalf("each cluster under its management cluster's path:\n%s", f)
	}

	// Only region-one's Flux has applied: the first cluster's answer says so, the
	// second's does not.
	head := strings.TrimSpace(h.git.Git(h.git.Dir(h.repo), "rev-parse", "main"))
	one.apply(t, ctx, head)
	applied := func(uuid string) string {
		_, ans := h.get("/v1/clusters/" + uuid + "/status")
		rev, _ := ans["revision"].(map[string]any)
		s, _ := rev["applied"].(string)
		return s
	}
	waitUntil(t, ctx, func() bool { return strings.Contains(applied("5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"), head) })
	if a := applied("3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"); a != "" {
		t.Errorf("the region-two cluster's status reads region-one's Flux: applied %q", a)
	}

	// The region-two cluster is deleted; no CAPI Cluster stands on region-two, whose Flux
	// applies every commit.
	del := bytes.ReplaceAll(fixture(t, "08-prod-a-delete.yaml"), []byte("region_name: RegionOne"), []byte("region_name: RegionTwo"))
	if code, ans := h.post(del); code != http.StatusOK {
		t.Fatalf("delete: %d %v", code, ans)
	}
	waitUntil(t, ctx, func() bool {
		two.apply(t, ctx, strings.TrimSpace(h.git.Git(h.git.Dir(h.repo), "rev-parse", "main")))
		return !strings.Contains(files(), dirTwo+"/")
	})
	waitUntil(t, ctx, func() bool { return two.left(ctx, ns, secretNames) == 0 })
	if n := one.left(ctx, ns, secretNames); n != len(secretNames) {
		t.Errorf("the delete took %d same-named Secrets from region-one", len(secretNames)-n)
	}
	if !strings.Contains(files(), dirOne+"/helmrelease.yaml") {
		t.Error("the region-one cluster left Git")
	}
}
