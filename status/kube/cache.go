package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/magnum"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// CacheOptions scopes an informer cache to the objects the reader needs, by label: the
// Flux HelmReleases magnum-gitops writes, what the openstack-cluster chart renders (it
// labels everything capi.stackhpc.com/managed-by), and the Machines CAPI creates for
// clusters (cluster.x-k8s.io/cluster-name). Other tenants' objects never reach memory.
func CacheOptions() cache.Options {
	has := func(key string) labels.Selector {
		req, err := labels.NewRequirement(key, selection.Exists, nil)
		if err != nil {
			panic(err)
		}
		return labels.NewSelector().Add(*req)
	}
	by := map[client.Object]cache.ByObject{}
	for _, gvk := range status.Kinds {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		switch {
		case gvk.Group == status.FluxHelmGroup:
			by[u] = cache.ByObject{Label: labels.SelectorFromSet(labels.Set{magnum.LabelManagedBy: magnum.ManagedBy})}
		case gvk.Group == status.FluxKustomizeGroup:
			continue // few, and named by configuration
		case gvk.Kind == "Machine":
			by[u] = cache.ByObject{Label: has(magnum.LabelClusterName)}
		default:
			by[u] = cache.ByObject{Label: has(magnum.LabelChartManagedBy)}
		}
	}
	return cache.Options{ByObject: by}
}

// Source lists through a controller-runtime client, usually a cache's: a cache answers from
// its informers, so a sweep costs one LIST and one WATCH per kind, however many clusters.
type Source struct{ Reader client.Reader }

// List implements status.Source.
func (s Source) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := s.Reader.List(ctx, l); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// RESTConfig reaches the management cluster of a kubeconfig as kubectl would: the file
// given, else $KUBECONFIG, ~/.kube/config, then in-cluster. Its client may send KubeAPIQPS
// requests a second (bursts of KubeAPIBurst), as Flux's controllers do by default:
// client-go's own default of 5 made `migrate` over 1,000 clusters, one request each, wait
// 200 s on its rate limiter alone (BenchmarkMigrateDryRun).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = KubeAPIQPS, KubeAPIBurst
	return cfg, nil
}

// KubeAPIQPS and KubeAPIBurst bound the requests of a client RESTConfig makes: the
// defaults of Flux's --kube-api-qps and --kube-api-burst.
const (
	KubeAPIQPS   = 50
	KubeAPIBurst = 300
)

// StartCache starts an informer cache on the management cluster of a kubeconfig (empty:
// $KUBECONFIG, ~/.kube/config, then in-cluster) and waits up to timeout for it to sync. It
// stops with ctx.
func StartCache(ctx context.Context, kubeconfig string, timeout time.Duration) (cache.Cache, *rest.Config, error) {
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	c, err := cache.New(cfg, CacheOptions())
	if err != nil {
		return nil, nil, err
	}
	go c.Start(ctx) //nolint:errcheck // stopped with ctx
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !c.WaitForCacheSync(wctx) {
		return nil, nil, fmt.Errorf("management cluster: the cache did not sync within %s", timeout)
	}
	return c, cfg, nil
}
