//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestE2EArgoClusterAPIAdoption: a cluster the Magnum driver made (helm install of the
// chart, the site's patches as a post-renderer, the driver's Secrets), running on the real
// Cluster API controllers, is adopted by Argo CD: migrate finds it identical to its release,
// serve commits it, Argo CD's Application (a kustomize source inflating the chart with the
// same patches) takes the driver's objects over by server-side apply, CREATE_COMPLETE
// follows, and no Machine or MachineSet is replaced. Run by make e2e-argocd-capi.
func TestE2EArgoClusterAPIAdoption(t *testing.T) {
	if os.Getenv("ARGOCD_TESTS") == "" {
		t.Skip("the Argo CD end-to-end tests run under make e2e-argocd-capi (ARGOCD_TESTS=1)")
	}
	b := findBinaries(t)
	// In the per-namespace layout: the root Application applies the namespace's parent
	// Application, which syncs the cluster; serve reads and refreshes the namespace's.
	h := newHarness(t, b, true, withClusterAPI(3*time.Second), withArgoCD(), withPerNamespaceLayout())
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	eventFile := writeEvent(t, t.TempDir(), "create.yaml", withMagnumCAs(t, readEvent(t, filepath.Join(events, "01-prod-a-create.yaml"))))
	a := clusterWant{event: readEvent(t, eventFile), namespace: "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c",
		release: "prod-a-2b7xq4mzkd5h", chartVersion: "0.27.0"}
	uuid := getPath(a.event, "cluster", "uuid").(string)
	settled := h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 3})

	h.driverInstall(eventFile, a)
	h.waitFor("the driver's cluster to settle under Cluster API", defaultWaitStep, settled)
	uids, sets := h.machineIdentity(a.namespace, a.release)

	adoptEv := readEvent(t, eventFile)
	setPath(adoptEv, map[string]any{"driver": "k8s_capi_helm_v1"}, "adopted")
	setPath(adoptEv, "az-1", "cluster", "labels", "availability_zone")
	adoptFile := writeEvent(t, t.TempDir(), "adopt.yaml", adoptEv)
	h.migrateIdentical(adoptFile, uuid)

	t0 := time.Now()
	rev := h.commitEvent(adoptFile)
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
	_, magnum, _ := h.waitCAPIAndStatus(uuid, a.namespace, a.release, "CREATE_COMPLETE", settled, t0, nil)
	t.Logf("adopted by Argo CD: CREATE_COMPLETE %s after the commit", magnum.Round(time.Second))
	// Let a rollout that the takeover would have started show itself.
	time.Sleep(10 * time.Second)
	h.waitFor("the cluster to settle again", defaultWaitStep, settled)
	uidsAfter, setsAfter := h.machineIdentity(a.namespace, a.release)
	if !slices.Equal(uids, uidsAfter) || !slices.Equal(sets, setsAfter) {
		t.Errorf("machines replaced by the adoption:\nMachines before %v\n         after  %v\nMachineSets before %v\n            after  %v", uids, uidsAfter, sets, setsAfter)
	}
	t.Logf("%d Machines and MachineSets %v unchanged", len(uids), sets)
}
