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
// every machine is up; a resize the API server refuses ends UPDATE_FAILED with Argo CD's
// reason; a node group comes, changes and goes; UPDATE_COMPLETE only once the
// MachineDeployments have their replicas, or every machine runs the Kubernetes two minors
// on that a chained upgrade reaches in two commits;
// DELETE_COMPLETE only once the Application (its resources finalizer) and every CAPI
// object are gone, and the cluster's files leave the branch (serve's second delete phase).
// Run by make e2e-argocd-capi (ARGOCD_TESTS=1).
func TestE2EArgoClusterAPI(t *testing.T) {
	if os.Getenv("ARGOCD_TESTS") == "" {
		t.Skip("the Argo CD end-to-end test runs under make e2e-argocd-capi (ARGOCD_TESTS=1)")
	}
	b := findBinaries(t)
	h := newHarness(t, b, true, withClusterAPI(3*time.Second), withArgoCD())
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
	run := func(name, eventFile, want string, done func() (bool, string)) step {
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
		return s
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

	// 2. A site's admission policy caps node groups at 4 machines for real requests (a dry
	// run passes, so Argo CD's server-side diff sees the resize): the resize to 5 is
	// refused when Argo CD applies it; serve says so while Argo CD retries, and
	// UPDATE_FAILED with Argo CD's own message once it gives up (an automated sync is tried
	// again only when the source moves on).
	const policyMessage = "a node group may have at most 4 machines"
	release := h.admitAtMostMachines(4, policyMessage, false)
	h.argoRefused(uuid, a.release, filepath.Join(events, "02-prod-a-resize-workers.yaml"), policyMessage)
	if md, ok := h.get(gvkMDV2, a.namespace, a.release+"-default-worker"); !ok {
		t.Errorf("no MachineDeployment default-worker after the refused resize")
	} else if n, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas"); n != 3 {
		t.Errorf("MachineDeployment default-worker wants %d machines after the refused resize, want 3", n)
	}
	release()

	// 3. Add node group gpu-a100 (2 machines), with default-worker at 5 (the refused resize
	// again, now admitted): the values change in the chart directory alone, the Application
	// only by its chart digest, and a new commit is what makes Argo CD sync again.
	digest := app.GetAnnotations()[generator.ChartDigestAnnotation]
	run("nodegroup create", filepath.Join(events, "03-prod-a-create-nodegroup.yaml"), "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5, "gpu-a100": 2}))
	if app, ok := h.application(a.release); !ok || app.GetAnnotations()[generator.ChartDigestAnnotation] == digest {
		t.Errorf("the Application's %s did not change with the values", generator.ChartDigestAnnotation)
	}
	// Autoscaling bounds on gpu-a100 (min 1, max 4): annotations alone, no machine changes.
	machines := h.machineNames(a.namespace)
	run("nodegroup update", filepath.Join(events, "04-prod-a-update-nodegroup-autoscale.yaml"), "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5, "gpu-a100": 2}))
	if md, ok := h.get(gvkMDV2, a.namespace, a.release+"-gpu-a100"); !ok ||
		md.GetAnnotations()["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] != "4" {
		t.Errorf("nodegroup update: MachineDeployment gpu-a100 lacks the autoscaler's max size 4: %v", md.GetAnnotations())
	}
	if got := h.machineNames(a.namespace); !slices.Equal(got, machines) {
		t.Errorf("nodegroup update replaced machines: %v → %v", machines, got)
	}
	// Argo CD never prunes a MachineDeployment: Cluster API makes the Cluster its owner, and
	// Argo CD leaves objects with an owner out of what it manages (gitops-engine's managed
	// objects). serve deletes it once the Application is at the delete's commit
	// (status.Report.LeftOver), so the delete ends as with Flux, without a hand.
	run("nodegroup delete", filepath.Join(events, "05-prod-a-delete-nodegroup.yaml"), "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5}))
	if _, ok := h.get(gvkMDV2, a.namespace, a.release+"-gpu-a100"); ok {
		t.Errorf("nodegroup delete: MachineDeployment %s-gpu-a100 still there at UPDATE_COMPLETE", a.release)
	}
	h.checkHealth(uuid, "HEALTHY")

	// 4. Upgrade Kubernetes v1.33.7 → v1.35.0, two minors: a chain, as with Flux. serve
	// commits the step to v1.34.3, and the step to v1.35.0 only once Cluster API has rolled
	// out v1.34.3 (read behind the Application that carries the chain's target);
	// UPDATE_COMPLETE only once every machine runs v1.35.0.
	up := readEvent(t, filepath.Join(events, "06-prod-a-upgrade.yaml"))
	up["id"] = "evt-e2e-argo-capi-upgrade-chain"
	setPath(up, "ubuntu-2404-kube-v1.35.0", "cluster_template", "image_id")
	setPath(up, map[string]any{"id": "5c4d3e2f-0a1b-4c2d-8e3f-000000013500", "kube_version": "v1.35.0", "os_distro": "ubuntu"}, "resolved", "image")
	setPath(up, []any{
		map[string]any{"id": "5c4d3e2f-0a1b-4c2d-8e3f-000000013407", "kube_version": "v1.34.3", "os_distro": "ubuntu"},
	}, "resolved", "upgrade_images")
	before := h.machineNames(a.namespace)
	head := h.headRevision()
	chain := run("upgrade chain", writeEvent(t, t.TempDir(), "upgrade.yaml", up), "UPDATE_COMPLETE",
		h.capiRolledTo(a.namespace, a.release, "v1.35.0", 3, map[string]int64{"default-worker": 5}))
	if kept := intersect(before, h.machineNames(a.namespace)); len(kept) > 0 {
		t.Errorf("upgrade: machines %v were not replaced", kept)
	}
	if !slices.ContainsFunc(chain.reasons, func(r string) bool {
		return strings.Contains(r, "upgrading to Kubernetes 1.35.0 one minor version at a time")
	}) {
		t.Errorf("serve never gave the chain's progress in status_reason: %q", chain.reasons)
	}
	if log := h.git(h.gitDir, "log", "--format=%s", head+"..main"); !strings.Contains(log, "to Kubernetes 1.35.0") ||
		strings.Count(strings.TrimSpace(log), "\n") != 1 {
		t.Errorf("after the upgrade, want its commit (to 1.34.3) and serve's step commit to 1.35.0:\n%s", log)
	}

	// 5. Delete: the parent prunes the Application, whose resources finalizer deletes the
	// chart's objects; CAPI deletes in order; serve sees the Cluster gone and only then
	// removes the Secrets, then the directory.
	del := deleteOf(up, "evt-e2e-argo-capi-delete")
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
		t.Logf("figures: %-17s push %6s  parent synced %7s  CAPI done %8s  Magnum complete %8s", s.name,
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

// argoRefused posts the event in eventFile, which the API server refuses to apply, and
// waits for serve to report the operation UPDATE_IN_PROGRESS with Argo CD's message while
// Argo CD retries the automated sync (its default: 5 retries, backoff from 5 s doubling to
// 3 min, about 5.5 minutes), then UPDATE_FAILED with Argo CD's own reason for the failed
// sync (naming the cluster's Application release and carrying message) once it gives up.
// UPDATE_COMPLETE on the way fails the test.
func (h *harness) argoRefused(uuid, release, eventFile, message string) {
	h.t.Helper()
	t0 := time.Now()
	ans := h.postEvent(eventFile)
	if ans.Outcome != "committed" {
		h.t.Fatalf("refused update: outcome %q (%s)", ans.Outcome, ans.Message)
	}
	h.waitArgoSynced(ans.Revision, 3*time.Minute)
	var last serveStatus
	var retrying time.Duration
	h.waitFor("UPDATE_FAILED with Argo CD's reason", 9*time.Minute, func() (bool, string) {
		last = h.serveStatusOf(uuid)
		if last.Status == "UPDATE_COMPLETE" {
			h.t.Fatalf("UPDATE_COMPLETE while the API server refuses the update: %s", last.StatusReason)
		}
		if retrying == 0 && last.Status == "UPDATE_IN_PROGRESS" && strings.Contains(last.StatusReason, "Argo CD is syncing Application "+release) &&
			strings.Contains(last.StatusReason, message) {
			retrying = time.Since(t0)
		}
		// Argo CD's words: its failed operation, or the SyncError condition it leaves.
		return last.Status == "UPDATE_FAILED" && strings.Contains(last.StatusReason, "Application "+release) &&
			strings.Contains(last.StatusReason, message), last.Status + ": " + last.StatusReason
	})
	if retrying == 0 {
		h.t.Errorf("serve never reported Argo CD's retries with its message before UPDATE_FAILED")
	}
	h.t.Logf("refused: UPDATE_IN_PROGRESS with Argo CD's message %s after the post, UPDATE_FAILED %s after: %s",
		retrying.Round(time.Second), time.Since(t0).Round(time.Second), last.StatusReason)
}
