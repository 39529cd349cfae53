package status

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	for _, gvk := range Kinds {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		switch {
		case gvk.Group == fluxHelmGroup:
			by[u] = cache.ByObject{Label: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/managed-by": "magnum-gitops"})}
		case gvk.Group == fluxKustomizeGroup:
			continue // few, and named by configuration
		case gvk.Kind == "Machine":
			by[u] = cache.ByObject{Label: has(labelCAPICluster)}
		default:
			by[u] = cache.ByObject{Label: has("capi.stackhpc.com/managed-by")}
		}
	}
	return cache.Options{ByObject: by}
}
