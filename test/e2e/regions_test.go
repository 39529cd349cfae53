//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestE2ETwoManagementClusters: one serve and one Git repository feed two management
// clusters, one per region, each a kube-apiserver with its own source-, kustomize- and
// helm-controller whose Kustomization applies its own path (management_clusters). A
// cluster of each region is installed by its region's Flux alone; serve asks only the
// Flux whose path a commit changed to fetch; a cluster's status is read from its own
// management cluster's Kustomization; and a delete runs both phases on its own.
func TestE2ETwoManagementClusters(t *testing.T) {
	b := findBinaries(t)
	one := newHarness(t, b, true, withoutServe(), withFluxPath("clusters/region-one"))
	two := newHarness(t, b, true, withExternalGit(one.gitURL, one.gitPassword, one.gitDir),
		withAgeIdentity(one.ageIdentity), withoutServe(), withFluxPath("clusters/region-two"))
	one.useManagementClusters(map[string]*harness{"region-one": one, "region-two": two},
		map[string]string{"region-one": "RegionOne", "region-two": "RegionTwo"})
	one.startServe()
	two.serveURL, two.serveToken = one.serveURL, one.serveToken

	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	a, o, ovn := twoClusters(t)
	a.root, o.root = "clusters/region-one", "clusters/region-two"
	setPath(ovn, "RegionTwo", "resolved", "region_name")

	// 1. prod-a, in RegionOne: region-one's Flux installs it; region-two's is not asked.
	askedTwo := two.requestedAt(sourceName)
	t1 := time.Now()
	rev1 := one.commitEvent(filepath.Join(events, "01-prod-a-create.yaml"))
	one.waitApplied(rev1, 3*time.Minute)
	one.checkReconcileRequest(t1)
	one.waitFor("prod-a's HelmRelease Ready on region-one", defaultWaitStep, one.releaseReady(a))
	one.checkCluster(a)
	if got := two.requestedAt(sourceName); got != askedTwo {
		t.Errorf("serve asked region-two's Flux to fetch (%s) for a change to region-one's path", got)
	}

	// 2. ovn, in RegionTwo: region-two's Flux installs it; region-one's is not asked, and
	// region-one's Kustomization, suspended, can show nothing of it.
	one.suspendKustomization(true)
	askedOne := one.requestedAt(sourceName)
	t2 := time.Now()
	rev2 := one.commitEvent(writeEvent(t, t.TempDir(), "ovn-create.yaml", ovn))
	two.waitApplied(rev2, 3*time.Minute)
	two.checkReconcileRequest(t2)
	two.waitFor("ovn's HelmRelease Ready on region-two", defaultWaitStep, two.releaseReady(o))
	two.checkCluster(o)
	if got := one.requestedAt(sourceName); got != askedOne {
		t.Errorf("serve asked region-one's Flux to fetch (%s) for a change to region-two's path", got)
	}
	for _, c := range []struct {
		h    *harness
		w    clusterWant
		name string
	}{{one, o, "region-one"}, {two, a, "region-two"}} {
		if _, ok := c.h.get(gvkHelmRelease, c.w.namespace, c.w.release); ok {
			t.Errorf("%s holds the HelmRelease %s of the other region", c.name, c.w.release)
		}
	}
	// serve judges ovn by region-two's Kustomization: applied, although region-one's,
	// suspended, is still at an earlier commit.
	two.waitFor("serve to see ovn applied by region-two", 30*time.Second, func() (bool, string) {
		c := two.getCluster(ovnUUID(ovn))
		return c.Applied != nil && *c.Applied, "ovn's answer: " + c.AppliedRevision
	})
	one.suspendKustomization(false)

	// 3. ovn is deleted: both phases run on region-two; prod-a stays on region-one.
	two.addCAPIFinalizer(o)
	del := deepCopy(ovn).(map[string]any)
	del["id"], del["operation"] = "evt-e2e-regions-ovn-delete", "delete_cluster"
	delete(del, "secrets")
	setPath(del, "DELETE_IN_PROGRESS", "cluster", "status")
	rev3 := one.commitEvent(writeEvent(t, t.TempDir(), "ovn-delete.yaml", del))
	two.waitApplied(rev3, 3*time.Minute)
	two.waitFor("ovn's Cluster being deleted", defaultWaitStep, two.clusterDeleting(o))
	two.checkSecretsKept(o)
	two.deleteSecondPhase(t, "regions", o)
	one.waitApplied(one.headRevision(), 3*time.Minute)
	one.checkCluster(a)
}

// useManagementClusters rewrites the configuration serve starts with: one management
// cluster per harness, by name, each reached through its kubeconfig and selecting the
// clusters of its region.
func (h *harness) useManagementClusters(by map[string]*harness, regions map[string]string) {
	t := h.t
	data, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	var list []any
	for _, name := range []string{"region-one", "region-two"} {
		m := by[name]
		list = append(list, map[string]any{"name": name, "path": m.fluxPath, "regions": []string{regions[name]},
			"kubeconfig_file": m.kubeconfig, "kustomization": fluxNamespace + "/" + sourceName,
			"reconcile_request": map[string]any{"namespace": fluxNamespace, "name": sourceName}})
	}
	cfg["management_clusters"] = list
	if data, err = yaml.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.config, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
