//go:build e2e

package e2e

import (
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestE2EArgoClusterAPIAdoption: a cluster the Magnum driver made (helm install of the
// chart, the site's patches as a post-renderer, the driver's Secrets), running on the real
// Cluster API controllers, is adopted by Argo CD: migrate finds it identical to its release,
// serve commits it, Argo CD's Application (a kustomize source inflating the chart with the
// same patches) takes the driver's objects over by server-side apply, CREATE_COMPLETE
// follows, and no Machine or MachineSet is replaced (adoptDriverCluster, as with Flux), in
// the per-namespace layout. Run by make e2e-argocd-capi.
func TestE2EArgoClusterAPIAdoption(t *testing.T) {
	if os.Getenv("ARGOCD_TESTS") == "" {
		t.Skip("the Argo CD end-to-end tests run under make e2e-argocd-capi (ARGOCD_TESTS=1)")
	}
	b := findBinaries(t)
	// In the per-namespace layout: the root Application applies the namespace's parent
	// Application, which syncs the cluster; serve reads and refreshes the namespace's.
	h := newHarness(t, b, true, withClusterAPI(3*time.Second), withArgoCD(), withPerNamespaceLayout())
	h.adoptDriverCluster("Argo CD", 0, func(a clusterWant, rev string) {
		h.waitArgoSyncedIn(a.namespace, rev, 3*time.Minute)
		h.waitFor("Argo CD to sync the cluster's Application over the driver's objects", defaultWaitStep, func() (bool, string) {
			app, ok := h.application(a.release)
			if !ok {
				return false, "no Application " + a.release
			}
			sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
			health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
			op, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
			return sync == "Synced", "sync " + sync + ", health " + health + ": " + op
		})
	})
}
