//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestE2EPerNamespaceLayout runs flux.layout: per-namespace through the real controllers:
// deploy/flux/per-namespace's root applies the GitRepository and Kustomization magnum-gitops
// writes for each project namespace, each sparse-checked out to its namespace; serve asks
// the changed namespace's GitRepository to fetch after a push (and the root's only when the
// root's part changed), so a change to one project never rebuilds another; the status
// reader judges each cluster by its own namespace's Kustomization, accepting a later
// revision that includes the cluster's commit; and a delete runs both phases.
func TestE2EPerNamespaceLayout(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true, withPerNamespaceLayout())
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	a, o, ovn := twoClusters(t)
	ka, ko := h.fluxFor(a.namespace), h.fluxFor(o.namespace)

	// 1. Create prod-a: the root applies its namespace's Flux objects, which apply it.
	t0 := time.Now()
	rev1 := h.commitEvent(filepath.Join(events, "01-prod-a-create.yaml"))
	h.waitAppliedBy(ka, rev1, 3*time.Minute)
	// The namespace's GitRepository is new (it fetches when created): the root is asked.
	h.checkReconcileRequestOf(sourceName, t0)
	h.waitFor("prod-a's HelmRelease Ready", defaultWaitStep, h.releaseReady(a))
	h.checkCluster(a)
	if src, _ := h.get(gvkGitRepository, fluxNamespace, ka); src == nil || !sparseTo(src, "./"+fluxPath+"/"+a.namespace) {
		t.Errorf("GitRepository %s does not check out %s alone", ka, a.namespace)
	}

	// 2. Create ovn in another project: its own Kustomization applies it; prod-a's stays
	// at the revision it applied (its GitRepository was not asked, and polls every 10m).
	rev2 := h.commitEvent(writeEvent(t, t.TempDir(), "ovn-create.yaml", ovn))
	h.waitAppliedBy(ko, rev2, 3*time.Minute)
	h.waitFor("ovn's HelmRelease Ready", defaultWaitStep, h.releaseReady(o))
	h.checkCluster(o)
	h.addCAPIFinalizer(o)
	if got := h.appliedBy(ka); got != rev1 {
		t.Errorf("prod-a's Kustomization applied %s after a change to another project, want %s still", got, rev1)
	}
	rootAsked := h.requestedAt(sourceName)

	// 3. Resize prod-a: one namespace's directory changes; the root is not asked.
	rev3 := h.resizeProdA(&a, ka)
	if got := h.requestedAt(sourceName); got != rootAsked {
		t.Errorf("serve asked the root GitRepository to fetch (%s) for a change inside one project", got)
	}
	if got := h.appliedBy(ko); got != rev2 {
		t.Errorf("ovn's Kustomization applied %s after a change to another project, want %s still", got, rev2)
	}

	// 4. ovn's namespace fetches the head (as at its interval): it applies rev3, a later
	// commit than ovn's own, and serve counts ovn's commit as applied all the same.
	h.reconcileNow(gvkGitRepository, ko)
	h.waitAppliedBy(ko, rev3, 3*time.Minute)
	// serve reads the management cluster through a snapshot up to 2 s old.
	h.waitFor("serve to see ovn applied through "+rev3, 30*time.Second, func() (bool, string) {
		c := h.getCluster(ovnUUID(ovn))
		ok := c.Revision == rev2 && c.Applied != nil && *c.Applied && c.AppliedRevision == "main@sha1:"+rev3
		return ok, fmt.Sprintf("GET /v1/clusters/ovn = %+v, want revision %s applied through main@sha1:%s", c, rev2, rev3)
	})

	// 5. Delete ovn, both phases, through its namespace's Kustomization.
	h.deleteBothPhases(t, generator.LayoutPerNamespace, ovn, o, ko)
	h.checkCluster(a)
}

// TestE2EBranchPerNamespaceLayout runs flux.layout: branch-per-namespace through the real
// controllers: the root follows the branch serve publishes the Flux objects on, each
// project namespace's GitRepository the branch that holds its directory alone; a push
// moves only the branches of what it changed, so a change to one project leaves every
// other project's branch, and what its source fetches, as they were; serve judges a
// cluster by the published head its Kustomization applied; a delete runs both phases.
func TestE2EBranchPerNamespaceLayout(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true, withBranchPerNamespaceLayout())
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	a, o, ovn := twoClusters(t)
	ka, ko := h.fluxFor(a.namespace), h.fluxFor(o.namespace)

	// 1. Create prod-a: the root applies its namespace's Flux objects from the root's
	// branch; they apply prod-a from the namespace's branch, which holds it alone.
	rev1 := h.commitEvent(filepath.Join(events, "01-prod-a-create.yaml"))
	h.waitAppliedBy(ka, rev1, 3*time.Minute)
	h.waitFor("prod-a's HelmRelease Ready", defaultWaitStep, h.releaseReady(a))
	h.checkCluster(a)
	branch := generator.PublishedBranch(fluxPath + "/" + a.namespace)
	if src, _ := h.get(gvkGitRepository, fluxNamespace, ka); src == nil {
		t.Fatalf("GitRepository %s is missing", ka)
	} else if got, _, _ := unstructured.NestedString(src.Object, "spec", "ref", "branch"); got != branch || !sparseTo(src, "") {
		t.Errorf("GitRepository %s follows %q (sparse checkout %v), want %s alone", ka, got, src.Object["spec"], branch)
	}
	pa := h.publishedHead(a.namespace)
	for _, f := range strings.Fields(h.git(h.gitDir, "ls-tree", "-r", "--name-only", pa)) {
		if !strings.HasPrefix(f, fluxPath+"/"+a.namespace+"/") {
			t.Errorf("%s holds %s, outside its namespace", branch, f)
		}
	}

	// 2. Create ovn in another project: prod-a's branch does not move.
	rev2 := h.commitEvent(writeEvent(t, t.TempDir(), "ovn-create.yaml", ovn))
	h.waitAppliedBy(ko, rev2, 3*time.Minute)
	h.waitFor("ovn's HelmRelease Ready", defaultWaitStep, h.releaseReady(o))
	h.checkCluster(o)
	h.addCAPIFinalizer(o)
	if got := h.publishedHead(a.namespace); got != pa {
		t.Errorf("a change to another project moved %s from %s to %s", branch, pa[:12], got[:12])
	}
	po := h.publishedHead(o.namespace)

	// 3. Resize prod-a: its branch moves, ovn's does not; serve counts ovn's commit applied
	// through the head ovn's Kustomization applied, though main has moved past it.
	h.resizeProdA(&a, ka)
	if h.publishedHead(a.namespace) == pa || h.publishedHead(o.namespace) != po {
		t.Errorf("after prod-a's resize: %s moved %v, ovn's branch moved %v", branch, h.publishedHead(a.namespace) != pa, h.publishedHead(o.namespace) != po)
	}
	wantApplied := generator.PublishedBranch(fluxPath+"/"+o.namespace) + "@sha1:" + po
	h.waitFor("serve to see ovn applied through "+wantApplied, 30*time.Second, func() (bool, string) {
		c := h.getCluster(ovnUUID(ovn))
		ok := c.Revision == rev2 && c.Applied != nil && *c.Applied && c.AppliedRevision == wantApplied
		return ok, fmt.Sprintf("GET /v1/clusters/ovn = %+v, want revision %s applied through %s", c, rev2, wantApplied)
	})

	// 4. A merged review (a commit to main that serve did not make) reaches prod-a's branch
	// once serve has read it, without a resync.
	work := filepath.Join(t.TempDir(), "review")
	h.git("", "clone", "-q", h.gitDir, work)
	note := filepath.Join(fluxPath, a.namespace, "NOTES.md")
	if err := os.WriteFile(filepath.Join(work, note), []byte("Reviewed by the operators.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.git(work, "add", note)
	h.git(work, "-c", "user.name=Op", "-c", "user.email=op@example.org", "commit", "-q", "-m", "a merged review")
	h.git(work, "push", "-q", "origin", "HEAD:main")
	h.waitFor("serve to publish the merged review on "+branch, time.Minute, func() (bool, string) {
		_, err := exec.Command("git", "--git-dir", h.gitDir, "rev-parse", "-q", "--verify", "refs/heads/"+branch+":"+note).Output()
		return err == nil, branch + " lacks " + note
	})

	// 5. Delete ovn, both phases, through its namespace's branch.
	h.deleteBothPhases(t, generator.LayoutBranchPerNamespace, ovn, o, ko)
	h.checkCluster(a)
}

// deleteBothPhases deletes the cluster of event ev (want w) through the Kustomization k
// that applies its namespace: phase one keeps its Secrets while CAPI holds the Cluster,
// phase two (deleteSecondPhase) removes them.
func (h *harness) deleteBothPhases(t *testing.T, layout string, ev map[string]any, w clusterWant, k string) {
	t.Helper()
	del := deepCopy(ev).(map[string]any)
	del["id"], del["operation"] = "evt-e2e-"+layout+"-delete", "delete_cluster"
	delete(del, "secrets")
	setPath(del, "DELETE_IN_PROGRESS", "cluster", "status")
	rev := h.commitEvent(writeEvent(t, t.TempDir(), "delete.yaml", del))
	h.waitAppliedBy(k, rev, 3*time.Minute)
	h.waitFor("the Cluster being deleted", defaultWaitStep, h.clusterDeleting(w))
	h.checkSecretsKept(w)
	h.deleteSecondPhase(t, layout, w)
}

// resizeProdA resizes prod-a's workers to 5 (02-prod-a-resize-workers.yaml) and waits for
// the Kustomization ka to apply it (asked by serve) and for the upgraded release; it
// returns the commit.
func (h *harness) resizeProdA(a *clusterWant, ka string) string {
	h.t.Helper()
	a.helmRevision = 2
	a.workers = map[string]workerWant{"default-worker": {5, "m1.medium"}}
	pushed := time.Now()
	rev := h.commitEvent(filepath.Join(testenv.RepoRoot(), "fixtures", "events", "02-prod-a-resize-workers.yaml"))
	h.waitAppliedBy(ka, rev, 3*time.Minute)
	h.checkReconcileRequestOf(ka, pushed)
	h.waitFor("prod-a's HelmRelease Ready after the resize", defaultWaitStep, h.releaseReady(*a))
	h.checkCluster(*a)
	return rev
}

// sparseTo reports whether a GitRepository checks out exactly dir ("" for: it has no
// sparse checkout at all).
func sparseTo(g *unstructured.Unstructured, dir string) bool {
	dirs, _, _ := unstructured.NestedStringSlice(g.Object, "spec", "sparseCheckout")
	if dir == "" {
		return len(dirs) == 0
	}
	return len(dirs) == 1 && dirs[0] == dir
}

// appliedBy is the commit a Kustomization last applied.
func (h *harness) appliedBy(name string) string {
	k, ok := h.get(gvkKustomization, fluxNamespace, name)
	if !ok {
		h.t.Fatalf("Kustomization %s is missing", name)
	}
	rev, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
	return rev[len(rev)-min(len(rev), 40):]
}

// requestedAt is a GitRepository's reconcile request annotation.
func (h *harness) requestedAt(name string) string {
	g, ok := h.get(gvkGitRepository, fluxNamespace, name)
	if !ok {
		h.t.Fatalf("GitRepository %s is missing", name)
	}
	return g.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]
}

func ovnUUID(ev map[string]any) string { return getPath(ev, "cluster", "uuid").(string) }

// clusterAnswer is the part of GET /v1/clusters/{uuid} the tests read.
type clusterAnswer struct {
	Revision        string `json:"revision"`
	Applied         *bool  `json:"applied"`
	AppliedRevision string `json:"applied_revision"`
}

// getCluster asks serve what it knows of a cluster.
func (h *harness) getCluster(uuid string) clusterAnswer {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.serveURL+"/v1/clusters/"+uuid, nil)
	req.Header.Set("Authorization", "Bearer "+h.serveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var c clusterAnswer
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET /v1/clusters/%s: %s", uuid, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		h.t.Fatal(err)
	}
	return c
}
