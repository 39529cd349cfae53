package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status/kube"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/status"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

// countingTransport counts the requests an informer cache makes.
type countingTransport struct {
	next           http.RoundTripper
	lists, watches atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		if r.URL.Query().Get("watch") == "true" {
			c.watches.Add(1)
		} else {
			c.lists.Add(1)
		}
	}
	return c.next.RoundTrip(r)
}

// createWithStatus creates an object, then writes its status through the status
// subresource, as the controllers would.
func createWithStatus(t *testing.T, ctx context.Context, o *unstructured.Unstructured) {
	t.Helper()
	st, hasStatus := o.Object["status"]
	c := o.DeepCopy()
	delete(c.Object, "status")
	c.SetCreationTimestamp(metav1.Time{})
	c.SetResourceVersion("")
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	if !hasStatus {
		return
	}
	// metav1 conditions need a reason; fixture conditions in their normal state omit it.
	fillReasons(st, false)
	c.Object["status"] = st
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatalf("status of %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// fillReasons gives fixture conditions what the CRD schemas require: a reason for
// every condition, and a message (possibly empty) for metav1 conditions (under v1beta2).
func fillReasons(v any, metav1Conds bool) {
	switch t := v.(type) {
	case map[string]any:
		if _, isCond := t["lastTransitionTime"]; isCond {
			if r, _ := t["reason"].(string); r == "" {
				t["reason"] = t["type"]
			}
			if _, ok := t["message"]; !ok && metav1Conds {
				t["message"] = ""
			}
		}
		for k, e := range t {
			fillReasons(e, metav1Conds || k == "v1beta2")
		}
	case []any:
		for _, e := range t {
			fillReasons(e, metav1Conds)
		}
	}
}

func TestReaderAgainstAPIServer(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v, objs, opts := loadState(t, "27-all-ready-v1beta1.yaml")
	var err error
	if err != nil {
		t.Fatal(err)
	}
	want := status.Evaluate(v, status.Classify(objs, v.StackID, v.Namespace), opts)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v.Namespace}}); err != nil {
		t.Fatal(err)
	}
	// Real objects: what the chart renders for the same cluster, and the Flux HelmRelease
	// the generator writes, with the fixture's statuses.
	chartObjects := realObjects(t, v.Namespace)
	for _, o := range chartObjects {
		if strings.HasPrefix(o.GetAPIVersion(), "addons.stackhpc.com/") {
			// The addon provider marks every addon Deployed once installed.
			o.Object["status"] = map[string]any{"phase": "Deployed"}
		}
		if o.GetKind() == "Cluster" {
			// CAPI copies the endpoint from the OpenStackCluster.
			_ = unstructured.SetNestedMap(o.Object, map[string]any{"host": "203.0.113.10", "port": int64(6443)}, "spec", "controlPlaneEndpoint")
		}
		if f := findObject(objs, o.GetKind(), o.GetName()); f != nil {
			if st, ok := f.Object["status"]; ok {
				o.Object["status"] = st
			}
			if l := f.GetLabels(); l != nil {
				merged := o.GetLabels()
				if merged == nil {
					merged = map[string]string{}
				}
				for k, val := range l {
					merged[k] = val
				}
				o.SetLabels(merged)
			}
		}
		createWithStatus(t, ctx, o)
	}
	objs = chartObjects

	cfg := rest.CopyConfig(env.Config)
	counter := &countingTransport{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	c, err := cache.New(cfg, kube.CacheOptions())
	if err != nil {
		t.Fatal(err)
	}
	go c.Start(ctx)
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not start")
	}
	src := kube.Source{Reader: c}

	got := judge(t, ctx, src, v, opts)
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("from the API server:\n%s\nfrom the same objects offline:\n%s", g, w)
	}
	if got.Status != v1alpha1.CreateComplete || got.HealthStatus != v1alpha1.Healthy {
		t.Errorf("report = %+v", got)
	}
	lists := counter.lists.Load()
	if lists > int64(3*len(status.Kinds)) {
		t.Errorf("%d GET requests for one sweep, want O(kinds) (%d kinds)", lists, len(status.Kinds))
	}
	// Later sweeps are answered by the informers: no new list.
	for i := 0; i < 5; i++ {
		judge(t, ctx, src, v, opts)
	}
	if n := counter.lists.Load(); n != lists {
		t.Errorf("later sweeps made %d more list requests", n-lists)
	}

	// Delete: the HelmRelease goes (Flux uninstalls), then the Cluster; DELETE_COMPLETE
	// only when the Cluster is gone.
	v.Status = v1alpha1.DeleteInProgress
	for _, o := range objs {
		if o.GetKind() == "HelmRelease" && strings.HasPrefix(o.GetAPIVersion(), "helm.toolkit") {
			if err := env.Client.Delete(ctx, o.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, ctx, func() bool {
		r := judge(t, ctx, src, v, opts)
		return r.Status == v1alpha1.DeleteInProgress && !r.SecretsRemovable
	})
	for _, o := range objs {
		if o.GetKind() == "Cluster" {
			if err := env.Client.Delete(ctx, o.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, ctx, func() bool {
		r := judge(t, ctx, src, v, opts)
		return r.Status == v1alpha1.DeleteComplete && r.SecretsRemovable
	})
}

// realObjects renders generator fixture 01 (cluster prod-a, the same release and
// namespace as the status fixtures) with openstack-cluster 0.27.0, plus its HelmRelease.
func realObjects(t *testing.T, namespace string) []*unstructured.Unstructured {
	t.Helper()
	data, err := fixtures.Events.ReadFile("events/01-prod-a-create.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	res, err := generator.Render(ev, generator.MustSite(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if res.Namespace != namespace {
		t.Fatalf("namespace %s, want %s", res.Namespace, namespace)
	}
	ch, err := chartrender.LoadVersion("0.27.0")
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := chartrender.Render(ch, res.ReleaseName, res.Namespace, res.Values)
	if err != nil {
		t.Fatal(err)
	}
	hrDoc, err := generator.MarshalObject(res.Objects.HelmRelease)
	if err != nil {
		t.Fatal(err)
	}
	hr, err := chartrender.Parse(bytes.NewReader(hrDoc))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, o := range append(hr, rendered...) {
		switch o.GetKind() {
		case "HelmRelease", "Cluster", "KubeadmControlPlane", "MachineDeployment", "OpenStackCluster", "Manifests":
			o.SetNamespace(namespace)
			out = append(out, o)
		}
	}
	return out
}

func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("timed out")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// loadState reads one fixtures/status file: the Magnum view, the objects and the options.
func loadState(t *testing.T, name string) (status.View, []*unstructured.Unstructured, status.Options) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "status", name))
	if err != nil {
		t.Fatal(err)
	}
	var sf struct {
		Now     time.Time       `json:"now"`
		Magnum  json.RawMessage `json:"magnum"`
		Objects json.RawMessage `json:"objects"`
	}
	if err := yaml.Unmarshal(data, &sf); err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(sf.Magnum)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := status.LoadObjects(bytes.NewReader(sf.Objects))
	if err != nil {
		t.Fatal(err)
	}
	return status.ViewFromEvent(ev, "magnum"), objs, status.OptionsFor(ev, status.DefaultOptions(sf.Now))
}

// judge judges one cluster from a snapshot of src, as the service does.
func judge(t *testing.T, ctx context.Context, src status.Source, v status.View, opts status.Options) status.Report {
	t.Helper()
	snap, err := status.TakeSnapshot(ctx, src, status.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	return status.Evaluate(v, snap.Objects(v), opts)
}
