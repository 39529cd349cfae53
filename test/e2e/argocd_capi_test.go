//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestE2EArgoClusterAPI drives one cluster's life through serve → Git → real Argo CD →
// the real Cluster API controllers, with the chart patched the Argo way: the site's
// post-renderers of fixtures/postrenderers/capd-inmemory.yaml become the kustomize patches
// of the cluster's Application, whose kustomize source inflates the chart, and put its
// cluster on CAPD's in-memory backend. As TestE2EClusterAPI does for Flux, serve's status
// is held to what Cluster API did: CREATE_COMPLETE only once the Cluster is Available and
// every machine is up, UPDATE_COMPLETE only once the MachineDeployment has its new
// replicas, DELETE_COMPLETE only once the Application (its resources finalizer) and every
// CAPI object are gone, and the cluster's files leave the branch (serve's second delete
// phase). Run by make e2e-argocd-capi (ARGOCD_TESTS=1).
func TestE2EArgoClusterAPI(t *testing.T) {
	if os.Getenv("ARGOCD_TESTS") == "" {
		t.Skip("the Argo CD end-to-end test runs under make e2e-argocd-capi (ARGOCD_TESTS=1)")
	}
	b := findBinaries(t)
	h := newHarness(t, b, false, withClusterAPI(3*time.Second), withArgoCD())
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	a, _, _ := twoClusters(t)
	uuid := getPath(a.event, "cluster", "uuid").(string)
	chartDir := path.Join(a.dir(), generator.ChartDir)

	type step struct {
		name                         string
		push, synced, capi, complete time.Duration
		reasons                      []string
	}
	var steps []step
	run := func(name, eventFile, want string, done func() (bool, string)) {
		t.Helper()
		t0 := time.Now()
		ans := h.postEvent(eventFile)
		if ans.Outcome != "committed" {
			t.Fatalf("%s: outcome %q (%s)", name, ans.Outcome, ans.Message)
		}
		s := step{name: name, push: time.Since(t0)}
		h.checkBeforeArgoSynced(uuid, ans.Revision, want)
		s.synced = h.waitArgoSynced(ans.Revision, 3*time.Minute).Sub(t0)
		s.capi, s.complete, s.reasons = h.waitCAPIAndStatus(uuid, a.namespace, a.release, want, done, t0, nil)
		t.Logf("%s: pushed %s, parent synced %s, CAPI done %s, Magnum %s %s; on the way: %q", name,
			s.push.Round(time.Millisecond), s.synced.Round(time.Millisecond), s.capi.Round(time.Millisecond),
			want, s.complete.Round(time.Millisecond), s.reasons)
		steps = append(steps, s)
	}

	// 1. Create prod-a: the Application's source is its chart directory, with the site's
	// patches; CREATE_COMPLETE only once the in-memory Cluster is Available with 3
	// control-plane machines and 3 workers.
	run("create", writeEvent(t, t.TempDir(), "create.yaml", withMagnumCAs(t, a.event)), "CREATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 3}))
	if len(steps[0].reasons) == 0 {
		t.Errorf("create: serve never reported CREATE_IN_PROGRESS while CAPI worked")
	}
	app, ok := h.application(a.release)
	if !ok {
		t.Fatalf("no Application %s", a.release)
	}
	src, _, _ := unstructured.NestedMap(app.Object, "spec", "source")
	patches, _, _ := unstructured.NestedSlice(app.Object, "spec", "source", "kustomize", "patches")
	if src["repoURL"] != h.gitURL || src["targetRevision"] != "main" || src["path"] != chartDir || len(patches) != 5 {
		t.Errorf("Application %s: source %v at %v, %v with %d patches; want %s at main, %s with the 5 CAPD patches",
			a.release, src["repoURL"], src["targetRevision"], src["path"], len(patches), h.gitURL, chartDir)
	}
	if files := h.gitFiles(chartDir); !slices.Equal(files, []string{path.Join(chartDir, generator.KustomizationFile)}) {
		t.Errorf("the chart directory in Git holds %v, want its kustomization.yaml alone", files)
	}
	// The patches made the chart's OpenStackCluster a DevCluster, its Cluster's reference
	// follows, and nothing of OpenStack is left.
	if _, ok := h.get(gvkDevCluster, a.namespace, a.release); !ok {
		t.Errorf("no DevCluster %s: the Application's kustomize patches did not reach the chart's objects", a.release)
	}
	if cl, ok := h.get(gvkClusterV2, a.namespace, a.release); ok {
		if kind, _, _ := unstructured.NestedString(cl.Object, "spec", "infrastructureRef", "kind"); kind != "DevCluster" {
			t.Errorf("Cluster %s refers to a %s, want a DevCluster", a.release, kind)
		}
	}
	h.checkHealth(uuid, "HEALTHY")

	// 2. Resize default-worker 3 → 5: the values change in the chart directory alone, the
	// Application only by its chart digest; the MachineDeployment really scales.
	digest := app.GetAnnotations()[generator.ChartDigestAnnotation]
	run("resize", filepath.Join(events, "02-prod-a-resize-workers.yaml"), "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5}))
	if md, ok := h.get(gvkMDV2, a.namespace, a.release+"-default-worker"); !ok {
		t.Errorf("no MachineDeployment default-worker after the resize")
	} else if n, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas"); n != 5 {
		t.Errorf("MachineDeployment default-worker has %d replicas after the resize, want 5", n)
	}
	if app, ok := h.application(a.release); !ok || app.GetAnnotations()[generator.ChartDigestAnnotation] == digest {
		t.Errorf("the Application's %s did not change with the values", generator.ChartDigestAnnotation)
	}

	// 3. Delete: the parent prunes the Application, whose resources finalizer deletes the
	// chart's objects; CAPI deletes in order; serve sees the Cluster gone and only then
	// removes the Secrets, then the directory.
	del := deleteOf(readEvent(t, filepath.Join(events, "02-prod-a-resize-workers.yaml")), "evt-e2e-argo-capi-delete")
	gone := h.capiGone(a)
	run("delete", writeEvent(t, t.TempDir(), "delete.yaml", del), "DELETE_COMPLETE", func() (bool, string) {
		if app, ok := h.application(a.release); ok {
			return false, fmt.Sprintf("Application %s still there (finalizers %v)", a.release, app.GetFinalizers())
		}
		return gone()
	})
	h.waitFor("the cluster's directory to leave Git", 3*time.Minute, func() (bool, string) {
		files := h.gitFiles(a.dir())
		return len(files) == 0, fmt.Sprintf("%d files left: %v", len(files), files)
	})
	h.waitFor("nothing of the cluster left in the API server", 3*time.Minute, h.namespaceEmpty(a.namespace))
	h.waitArgoSynced(h.headRevision(), 3*time.Minute)
	if s := h.serveStatusOf(uuid); s.Status != "DELETE_COMPLETE" {
		t.Errorf("after Argo CD synced the commit that removed the directory, serve reports %s (%s), want DELETE_COMPLETE", s.Status, s.StatusReason)
	}

	h.logUsage("after the whole life of one cluster under Argo CD")
	for _, s := range steps {
		t.Logf("figures: %-7s push %6s  parent synced %7s  CAPI done %8s  Magnum complete %8s", s.name,
			s.push.Round(time.Millisecond), s.synced.Round(time.Millisecond), s.capi.Round(time.Second), s.complete.Round(time.Second))
	}
}

// checkBeforeArgoSynced reads serve's answer right after a push, when Argo CD has usually
// not synced the commit yet: reporting want while the parent Application has not synced
// the revision fails the test.
func (h *harness) checkBeforeArgoSynced(uuid, revision, want string) {
	h.t.Helper()
	s := h.serveStatusOf(uuid)
	app, ok := h.application(argoParentName)
	if ok {
		if synced, _ := argoSyncedAt(app, revision); synced {
			return
		}
	}
	if s.Status == want {
		h.t.Fatalf("serve reported %s (%s) before Argo CD synced %s", want, s.StatusReason, revision)
	}
	if !strings.HasSuffix(s.Status, "_IN_PROGRESS") && s.Status != "unavailable" {
		h.t.Logf("before Argo CD synced %.12s serve reports %s (%s)", revision, s.Status, s.StatusReason)
	}
}
