//go:build e2e

package e2e

import (
	"cmp"
	"encoding/pem"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

var (
	gvkCluster           = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"}
	gvkMachineDeployment = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "MachineDeployment"}
	gvkKCP               = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta1", Kind: "KubeadmControlPlane"}
	gvkOpenStackCluster  = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "OpenStackCluster"}
	gvkOSMT              = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "OpenStackMachineTemplate"}
)

// clusterWant is what the API server must hold for one cluster after a step.
type clusterWant struct {
	event        map[string]any // the create event: names and secret material
	namespace    string
	release      string
	chartVersion string
	helmRevision int64 // Helm release version (1 after install, +1 per upgrade)
	kubeVersion  string
	controlPlane int64
	cpFlavor     string
	workers      map[string]workerWant // by node group name
	lbProvider   string
	allowedCIDRs []string
	// root is the directory of the cluster's management cluster (fluxPath when empty).
	root string
}

type workerWant struct {
	replicas int64
	flavor   string
}

// timing is one step's figures, measured from the end of the push.
type timing struct {
	mode, step       string
	push             time.Duration // magnum-gitops apply: render, encrypt, commit, push
	applied          time.Duration // push → Kustomization lastAppliedRevision
	ready            time.Duration // push → HelmRelease Ready (or uninstalled)
	revision, detail string
}

// TestE2ECreateResizeDelete creates two clusters (charts 0.27.0 and 0.24.1), resizes one,
// adds and deletes a node group, upgrades both (Kubernetes; and the chart for the second)
// and deletes the second through both phases, through magnum-gitops serve → Git → Flux →
// Helm, and checks each step in the API server. It runs requesting a reconcile right after each push (as a Flux
// Receiver would) and, with E2E_FULL=1, again relying on the GitRepository interval of
// deploy/flux (1m), which adds about a minute per step.
func TestE2ECreateResizeDelete(t *testing.T) {
	b := findBinaries(t)
	start := time.Now()
	var all []timing
	for _, mode := range []struct {
		name      string
		requested bool
	}{{"requested-reconcile", true}, {"interval", false}} {
		t.Run(mode.name, func(t *testing.T) {
			if !mode.requested && os.Getenv("E2E_FULL") == "" {
				// About one GitRepository interval (1m) per step: CI runs the requested mode only.
				t.Skip("set E2E_FULL=1 to also run the scenario relying on the GitRepository interval")
			}
			all = append(all, runCreateResizeDelete(t, b, mode.name, mode.requested)...)
		})
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-20s %-17s %9s %14s %14s  %s\n", "mode", "step", "push", "push→applied", "push→ready", "ready means")
	for _, tm := range all {
		fmt.Fprintf(&sb, "%-20s %-17s %8.2fs %13.2fs %13.2fs  %s\n", tm.mode, tm.step, tm.push.Seconds(),
			tm.applied.Seconds(), tm.ready.Seconds(), tm.detail)
	}
	// Medians over the steps that end with the HelmRelease Ready (a Helm install or upgrade).
	medians := map[string][2]time.Duration{}
	for _, mode := range []string{"requested-reconcile", "interval"} {
		var applied, ready []time.Duration
		for _, tm := range all {
			if tm.mode == mode && tm.detail == "HelmRelease Ready" {
				applied, ready = append(applied, tm.applied), append(ready, tm.ready)
			}
		}
		if len(ready) == 0 {
			continue
		}
		medians[mode] = [2]time.Duration{median(applied), median(ready)}
		fmt.Fprintf(&sb, "median over %d Helm steps, %s: push→applied %.2fs, push→HelmRelease Ready %.2fs\n", len(ready), mode,
			median(applied).Seconds(), median(ready).Seconds())
	}
	if r, i := medians["requested-reconcile"], medians["interval"]; r[1] > 0 && i[1] > 0 {
		fmt.Fprintf(&sb, "requested/interval: push→applied %.3f×, push→Ready %.3f×\n", r[0].Seconds()/i[0].Seconds(),
			r[1].Seconds()/i[1].Seconds())
	}
	t.Logf("commit → applied → HelmRelease figures (wall time %s):\n%s", time.Since(start).Round(time.Second), sb.String())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func runCreateResizeDelete(t *testing.T, b *binaries, mode string, requested bool) []timing {
	h := newHarness(t, b, requested)
	h.checkSettledKept()
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	dir := t.TempDir()

	a, o, ovn := twoClusters(t)
	ovnCreate := writeEvent(t, dir, "ovn-create.yaml", ovn)
	// Upgrade ovn to chart 0.27.0 and Kubernetes v1.34.3 (06's image), as a new template does.
	upgrade := readEvent(t, filepath.Join(events, "06-prod-a-upgrade.yaml"))
	ovnUpgrade := deepCopy(ovn).(map[string]any)
	delete(ovnUpgrade, "secrets")
	ovnUpgrade["id"] = "evt-e2e-ovn-upgrade"
	ovnUpgrade["operation"] = "upgrade_cluster"
	setPath(ovnUpgrade, "UPDATE_IN_PROGRESS", "cluster", "status")
	setPath(ovnUpgrade, "0.27.0", "cluster_template", "labels", "capi_helm_chart_version")
	setPath(ovnUpgrade, getPath(upgrade, "cluster_template", "image_id"), "cluster_template", "image_id")
	setPath(ovnUpgrade, deepCopy(getPath(upgrade, "resolved", "image")), "resolved", "image")
	ovnUpgradeFile := writeEvent(t, dir, "ovn-upgrade.yaml", ovnUpgrade)
	ovnDelete := deepCopy(ovnUpgrade).(map[string]any)
	ovnDelete["id"] = "evt-e2e-ovn-delete"
	ovnDelete["operation"] = "delete_cluster"
	setPath(ovnDelete, "DELETE_IN_PROGRESS", "cluster", "status")
	delete(ovnDelete, "secrets")
	ovnDeleteFile := writeEvent(t, dir, "ovn-delete.yaml", ovnDelete)

	var timings []timing
	step := func(name, event string, ready func() (bool, string), detail string) {
		t.Helper()
		t0 := time.Now()
		rev := h.commitEvent(event)
		pushed := time.Now()
		applied := h.waitApplied(rev, 3*time.Minute)
		h.checkReconcileRequest(t0)
		done := h.waitFor(detail, defaultWaitStep, ready)
		tm := timing{mode: mode, step: name, push: pushed.Sub(t0), applied: applied.Sub(pushed),
			ready: done.Sub(pushed), revision: rev, detail: detail}
		t.Logf("%s: commit %s pushed in %s, applied after %s, %s after %s", name, rev[:12],
			tm.push.Round(time.Millisecond), tm.applied.Round(time.Millisecond), detail, tm.ready.Round(time.Millisecond))
		timings = append(timings, tm)
	}

	// 1. Create prod-a (chart 0.27.0).
	step("create prod-a", filepath.Join(events, "01-prod-a-create.yaml"), h.releaseReady(a), "HelmRelease Ready")
	h.checkCluster(a)

	// 2. Create ovn (chart 0.24.1); prod-a is not touched.
	step("create ovn", ovnCreate, h.releaseReady(o), "HelmRelease Ready")
	h.checkCluster(o)
	h.checkCluster(a)
	// CAPI's controller puts its finalizer on every Cluster it manages: the delete below
	// then waits for "CAPI" (the test) as it would for the machines to go.
	h.addCAPIFinalizer(o)

	// 3. Resize prod-a's default-worker 3 → 5: one Helm upgrade, the MachineDeployment follows.
	a.helmRevision = 2
	a.workers = map[string]workerWant{"default-worker": {5, "m1.medium"}}
	step("resize prod-a", filepath.Join(events, "02-prod-a-resize-workers.yaml"), h.releaseReady(a), "HelmRelease Ready")
	h.checkCluster(a)
	h.checkCluster(o)

	// 4. Add node group GPU_a100 (2 × g1.a100) to prod-a: a second MachineDeployment.
	a.helmRevision = 3
	a.workers = map[string]workerWant{"default-worker": {5, "m1.medium"}, "gpu-a100": {2, "g1.a100"}}
	step("add nodegroup", filepath.Join(events, "03-prod-a-create-nodegroup.yaml"), h.releaseReady(a), "HelmRelease Ready")
	h.checkCluster(a)

	// 5. Delete it again: Helm removes its MachineDeployment.
	a.helmRevision = 4
	a.workers = map[string]workerWant{"default-worker": {5, "m1.medium"}}
	step("delete nodegroup", filepath.Join(events, "05-prod-a-delete-nodegroup.yaml"), h.releaseReady(a), "HelmRelease Ready")
	h.checkCluster(a)

	// 6. Upgrade prod-a to Kubernetes v1.34.3 (same chart): the control plane and the
	// workers follow.
	a.helmRevision = 5
	a.kubeVersion = "v1.34.3"
	step("upgrade prod-a", filepath.Join(events, "06-prod-a-upgrade.yaml"), h.releaseReady(a), "HelmRelease Ready")
	h.checkCluster(a)

	// 7. Upgrade ovn from chart 0.24.1 to 0.27.0 and to Kubernetes v1.34.3: one Helm
	// upgrade of the same release across chart versions.
	o.helmRevision = 2
	o.chartVersion = "0.27.0"
	o.kubeVersion = "v1.34.3"
	step("upgrade ovn", ovnUpgradeFile, h.releaseReady(o), "HelmRelease Ready")
	h.checkCluster(o)
	h.checkCluster(a)

	// 8. Delete ovn. Phase 1 (the event): the HelmRelease leaves Git, kustomize-controller
	// prunes it, helm-controller uninstalls and the Cluster is being deleted; the Secrets
	// stay, in Git and in the API server, while it exists (CAPO still needs them).
	step("delete ovn", ovnDeleteFile, h.clusterDeleting(o), "Cluster being deleted")
	h.checkSecretsKept(o)
	// serve's leader checks deletes every 10 s: a sweep must pass and leave them alone.
	time.Sleep(12 * time.Second)
	h.checkSecretsKept(o)
	// Phase 2: the test plays CAPI and lets the Cluster go; serve removes the directory
	// from Git and, once Flux applied that, deletes the Secrets (they carry the prune guard).
	timings = append(timings, h.deleteSecondPhase(t, mode, o))
	h.checkCluster(a)
	return timings
}

// twoClusters are the scenario's clusters in two projects: prod-a (fixture 01, chart
// 0.27.0) and ovn (fixture 18, chart 0.24.1 with the OVN load balancer and allowed CIDRs,
// given Secret material of its own), with ovn's create event.
func twoClusters(t *testing.T) (a, o clusterWant, ovn map[string]any) {
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	prodA := readEvent(t, filepath.Join(events, "01-prod-a-create.yaml"))
	ovn = readEvent(t, filepath.Join(events, "18-ovn-allowed-cidrs-chart-0.24.yaml"))
	ovn["secrets"] = deepCopy(prodA["secrets"])
	setPath(ovn, "e2e-ovn-appcred-NOT-REAL-1c9d", "secrets", "application_credential", "secret")
	setPath(ovn, "7a6b5c4d3e2f41a0b9c8d7e6f5a4b3c2", "secrets", "application_credential", "id")
	a = clusterWant{
		event: prodA, namespace: "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c", release: "prod-a-2b7xq4mzkd5h",
		chartVersion: "0.27.0", helmRevision: 1, kubeVersion: "v1.33.7", controlPlane: 3, cpFlavor: "m1.large",
		workers:    map[string]workerWant{"default-worker": {3, "m1.medium"}},
		lbProvider: "amphora",
	}
	o = clusterWant{
		event: ovn, namespace: "magnum-5b2e8c1d0a9f4e3b8c7d6a5b4c3d2e1f", release: "ovn-9qd6u4oh8vxc",
		chartVersion: "0.24.1", helmRevision: 1, kubeVersion: "v1.33.7", controlPlane: 3, cpFlavor: "m1.large",
		workers:      map[string]workerWant{"default-worker": {3, "m1.medium"}},
		lbProvider:   "ovn",
		allowedCIDRs: []string{"10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32"},
	}
	return a, o, ovn
}

// addCAPIFinalizer adds the finalizer CAPI's cluster controller sets on a Cluster.
func (h *harness) addCAPIFinalizer(w clusterWant) {
	h.t.Helper()
	cl, ok := h.get(gvkCluster, w.namespace, w.release)
	if !ok {
		h.t.Fatalf("Cluster %s/%s is missing", w.namespace, w.release)
	}
	p := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":["cluster.cluster.x-k8s.io"]}}`))
	if err := h.c.Patch(h.ctx, cl, p); err != nil {
		h.t.Fatalf("adding CAPI's finalizer to Cluster %s: %v", w.release, err)
	}
}

// clusterDeleting reports when the HelmRelease is uninstalling (or gone) and the Cluster,
// held by CAPI's finalizer, is being deleted.
func (h *harness) clusterDeleting(w clusterWant) func() (bool, string) {
	return func() (bool, string) {
		state := "HelmRelease gone"
		if hr, ok := h.get(gvkHelmRelease, w.namespace, w.release); ok {
			if hr.GetDeletionTimestamp() == nil {
				return false, "HelmRelease not being deleted"
			}
			state = "HelmRelease being deleted"
		}
		cl, ok := h.get(gvkCluster, w.namespace, w.release)
		if !ok {
			return false, state + "; the Cluster is gone already (it must wait for CAPI's finalizer)"
		}
		if cl.GetDeletionTimestamp() == nil {
			return false, state + "; Cluster not being deleted"
		}
		return true, ""
	}
}

// gitFiles lists the files under dir on main of the Git server.
func (h *harness) gitFiles(dir string) []string {
	out := strings.TrimSpace(h.git(h.gitDir, "ls-tree", "-r", "--name-only", "main", "--", dir))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func (w clusterWant) dir() string {
	return cmp.Or(w.root, fluxPath) + "/" + w.namespace + "/" + w.release
}

// checkSecretsKept asserts phase 1 of a delete: no HelmRelease in Git, the Secrets still
// in Git and decrypted in the API server.
func (h *harness) checkSecretsKept(w clusterWant) {
	t := h.t
	t.Helper()
	files := strings.Join(h.gitFiles(w.dir()), " ")
	if strings.Contains(files, "helmrelease.yaml") || !strings.Contains(files, "/secret-ca.") {
		t.Errorf("while the Cluster is being deleted, Git holds %s: want the Secrets and no HelmRelease", files)
	}
	if _, ok := h.get(gvkCluster, w.namespace, w.release); !ok {
		t.Errorf("Cluster %s is gone before CAPI released it", w.release)
	}
	h.checkSecrets(w)
}

// deleteSecondPhase plays CAPI (the Cluster's finalizer goes, and with it the Cluster and
// what the chart kept for CAPI to delete), then waits for serve's leader to commit the
// removal of the Secret files, for kustomize-controller to apply it (the directory's
// kustomization.yaml then lists nothing), for the Secrets to leave the API server, and
// for the rest of the directory to leave Git. kustomize-controller does not prune the
// Secrets itself (prune: disabled): serve deletes them once Flux applied the commit that
// removed them from Git.
func (h *harness) deleteSecondPhase(t *testing.T, mode string, w clusterWant) timing {
	t.Helper()
	released := time.Now()
	h.stripCAPIFinalizers(w.namespace)
	h.waitFor("the HelmRelease to be uninstalled", defaultWaitStep, h.releaseGone(w))
	h.checkDeleted(w)
	// CAPI deletes what the chart kept (helm.sh/resource-policy: keep) through the
	// ownerReferences its controllers set; none run here, so the test deletes them.
	for _, gvk := range []schema.GroupVersionKind{gvkKCP, gvkOpenStackCluster, gvkOSMT} {
		for _, o := range h.list(gvk, w.namespace) {
			if err := h.c.Delete(h.ctx, &o); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	var commit string
	h.waitFor("serve to remove the deleted cluster's Secret files from Git", 2*time.Minute, func() (bool, string) {
		var secrets []string
		for _, f := range h.gitFiles(w.dir()) {
			if strings.HasPrefix(path.Base(f), "secret-") {
				secrets = append(secrets, f)
			}
		}
		if len(secrets) > 0 {
			return false, fmt.Sprintf("%d Secret files left under %s", len(secrets), w.dir())
		}
		commit = h.headRevision()
		return true, ""
	})
	removed := time.Now()
	msg := h.git(h.gitDir, "log", "-1", "--format=%B", commit)
	if !strings.Contains(msg, "Magnum-Operation: delete_cluster_secrets") {
		t.Errorf("the second-phase commit %s says:\n%s", commit[:12], msg)
	}
	applied := h.waitAppliedBy(h.fluxFor(w.namespace), commit, 3*time.Minute)
	h.checkReconcileRequestOf(h.fluxFor(w.namespace), removed.Add(-time.Second))
	done := h.waitFor("the deleted cluster's Secrets to leave the API server", 2*time.Minute, func() (bool, string) {
		var left []string
		for _, suffix := range []string{"ca", "etcd", "proxy", "sa", "cloud-credentials"} {
			var s corev1.Secret
			err := h.c.Get(h.ctx, client.ObjectKey{Namespace: w.namespace, Name: w.release + "-" + suffix}, &s)
			if !apierrors.IsNotFound(err) {
				left = append(left, s.Name)
			}
		}
		return len(left) == 0, fmt.Sprintf("Secrets left: %v", left)
	})
	h.waitFor("serve to remove the rest of the deleted cluster's directory from Git", time.Minute, func() (bool, string) {
		f := h.gitFiles(w.dir())
		return len(f) == 0, fmt.Sprintf("left under %s: %v", w.dir(), f)
	})
	if msg := h.git(h.gitDir, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "Magnum-Operation: delete_cluster_complete") {
		t.Errorf("the commit that ends the delete says:\n%s", msg)
	}
	// kustomize-controller no longer tracks them either.
	k, _ := h.get(gvkKustomization, fluxNamespace, h.fluxFor(w.namespace))
	entries, _, _ := unstructured.NestedSlice(k.Object, "status", "inventory", "entries")
	for _, e := range entries {
		if id, _ := e.(map[string]any)["id"].(string); strings.HasPrefix(id, w.namespace+"_"+w.release) {
			t.Errorf("Kustomization inventory still lists %s", id)
		}
	}
	tm := timing{mode: mode, step: "delete ovn (2)", push: removed.Sub(released), applied: applied.Sub(removed),
		ready: done.Sub(removed), revision: commit, detail: "Secrets deleted (push = CAPI done → serve's commit)"}
	t.Logf("delete phase 2: serve committed %s %s after CAPI released the Cluster, applied after %s, Secrets gone after %s",
		commit[:12], tm.push.Round(time.Millisecond), tm.applied.Round(time.Millisecond), tm.ready.Round(time.Millisecond))
	return tm
}

// releaseReady reports when the cluster's HelmRelease is Ready at the expected Helm
// release version for its current generation.
func (h *harness) releaseReady(w clusterWant) func() (bool, string) {
	return func() (bool, string) {
		hr, ok := h.get(gvkHelmRelease, w.namespace, w.release)
		if !ok {
			return false, "no HelmRelease " + w.namespace + "/" + w.release
		}
		st, reason, msg, og := condition(hr, "Ready")
		version, status := latestSnapshot(hr)
		state := fmt.Sprintf("generation %d, Ready=%s (%s, observedGeneration %d): %s; latest release v%d %s",
			hr.GetGeneration(), st, reason, og, msg, version, status)
		if og == hr.GetGeneration() && st == "False" && (reason == "InstallFailed" || reason == "UpgradeFailed") {
			h.t.Fatalf("HelmRelease %s/%s failed: %s", w.namespace, w.release, state)
		}
		return st == "True" && og == hr.GetGeneration() && version == w.helmRevision && status == "deployed", state
	}
}

// releaseGone reports when the HelmRelease is gone (helm-controller removes its finalizer
// after helm uninstall) and so is the Helm release storage.
func (h *harness) releaseGone(w clusterWant) func() (bool, string) {
	return func() (bool, string) {
		h.stripCAPIFinalizers(w.namespace)
		if hr, ok := h.get(gvkHelmRelease, w.namespace, w.release); ok {
			st, reason, msg, _ := condition(hr, "Ready")
			return false, fmt.Sprintf("HelmRelease still there (deletionTimestamp %v, Ready=%s %s: %s)",
				hr.GetDeletionTimestamp(), st, reason, msg)
		}
		if n := len(h.helmStorage(w)); n > 0 {
			return false, fmt.Sprintf("%d Helm release Secrets left", n)
		}
		return true, ""
	}
}

// stripCAPIFinalizers removes finalizers from Cluster API objects being deleted: no CAPI
// controller runs here to release them. Flux's own finalizers are left alone.
func (h *harness) stripCAPIFinalizers(ns string) {
	for _, gvk := range []schema.GroupVersionKind{gvkCluster, gvkMachineDeployment, gvkKCP, gvkOpenStackCluster, gvkOSMT} {
		for _, o := range h.list(gvk, ns) {
			if o.GetDeletionTimestamp() == nil || len(o.GetFinalizers()) == 0 {
				continue
			}
			h.t.Logf("removing finalizers %v of %s %s/%s (no CAPI controller runs here)", o.GetFinalizers(), o.GetKind(),
				ns, o.GetName())
			p := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
			if err := h.c.Patch(h.ctx, &o, p); err != nil && !apierrors.IsNotFound(err) {
				h.t.Fatalf("removing finalizers: %v", err)
			}
		}
	}
}

// latestSnapshot is the newest entry of the HelmRelease's history.
func latestSnapshot(hr *unstructured.Unstructured) (version int64, status string) {
	hist, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
	if len(hist) == 0 {
		return 0, ""
	}
	m, _ := hist[0].(map[string]any)
	version, _ = toInt(m["version"])
	status, _ = m["status"].(string)
	return version, status
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

// helmStorage lists the Helm release Secrets of a release.
func (h *harness) helmStorage(w clusterWant) []corev1.Secret {
	var l corev1.SecretList
	if err := h.c.List(h.ctx, &l, client.InNamespace(w.namespace), client.MatchingLabels{"owner": "helm", "name": w.release}); err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// checkCluster asserts what Flux and Helm made of the cluster's directory.
func (h *harness) checkCluster(w clusterWant) {
	t := h.t
	t.Helper()
	// The HelmRelease: Ready, our release name and storage, the chart version asked for.
	hr, ok := h.get(gvkHelmRelease, w.namespace, w.release)
	if !ok {
		t.Fatalf("HelmRelease %s/%s is missing", w.namespace, w.release)
	}
	if st, reason, msg, _ := condition(hr, "Ready"); st != "True" {
		t.Errorf("HelmRelease %s: Ready=%s %s: %s", w.release, st, reason, msg)
	}
	hist, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
	if len(hist) == 0 {
		t.Fatalf("HelmRelease %s has no history", w.release)
	}
	snap := hist[0].(map[string]any)
	if snap["name"] != w.release || snap["namespace"] != w.namespace || snap["chartName"] != "openstack-cluster" ||
		snap["chartVersion"] != w.chartVersion {
		t.Errorf("HelmRelease %s latest release = %v/%v chart %v %v, want %s/%s openstack-cluster %s", w.release,
			snap["namespace"], snap["name"], snap["chartName"], snap["chartVersion"], w.namespace, w.release, w.chartVersion)
	}
	if v, _ := toInt(snap["version"]); v != w.helmRevision {
		t.Errorf("HelmRelease %s is at Helm release v%d, want v%d", w.release, v, w.helmRevision)
	}
	storage := h.helmStorage(w)
	deployed := ""
	for _, s := range storage {
		if s.Labels["status"] == "deployed" {
			deployed = s.Name
		}
	}
	if want := fmt.Sprintf("sh.helm.release.v1.%s.v%d", w.release, w.helmRevision); deployed != want {
		t.Errorf("deployed Helm release Secret = %q, want %q (%d release Secrets)", deployed, want, len(storage))
	}

	h.checkSecrets(w)

	// The Cluster API objects the chart installed.
	cl, ok := h.get(gvkCluster, w.namespace, w.release)
	if !ok {
		t.Fatalf("Cluster %s/%s is missing", w.namespace, w.release)
	}
	if got := cl.GetAnnotations()["meta.helm.sh/release-name"]; got != w.release {
		t.Errorf("Cluster %s is owned by Helm release %q", w.release, got)
	}
	cpName, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "name")
	infraName, _, _ := unstructured.NestedString(cl.Object, "spec", "infrastructureRef", "name")
	kcp, ok := h.get(gvkKCP, w.namespace, cpName)
	if !ok {
		t.Fatalf("KubeadmControlPlane %q of Cluster %s is missing", cpName, w.release)
	}
	replicas, _, _ := unstructured.NestedInt64(kcp.Object, "spec", "replicas")
	version, _, _ := unstructured.NestedString(kcp.Object, "spec", "version")
	cpTemplate, _, _ := unstructured.NestedString(kcp.Object, "spec", "machineTemplate", "infrastructureRef", "name")
	if replicas != w.controlPlane || version != w.kubeVersion {
		t.Errorf("KubeadmControlPlane %s: %d replicas of %s, want %d of %s", cpName, replicas, version, w.controlPlane, w.kubeVersion)
	}
	if f := h.flavor(w.namespace, cpTemplate); f != w.cpFlavor {
		t.Errorf("control plane flavor %q, want %q", f, w.cpFlavor)
	}
	got := map[string]workerWant{}
	for _, md := range h.list(gvkMachineDeployment, w.namespace) {
		if cn, _, _ := unstructured.NestedString(md.Object, "spec", "clusterName"); cn != w.release {
			continue
		}
		group := md.GetLabels()["capi.stackhpc.com/node-group"]
		r, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
		v, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version")
		tmpl, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "infrastructureRef", "name")
		if v != w.kubeVersion {
			t.Errorf("MachineDeployment %s: version %s, want %s", md.GetName(), v, w.kubeVersion)
		}
		got[group] = workerWant{r, h.flavor(w.namespace, tmpl)}
	}
	if fmt.Sprint(got) != fmt.Sprint(w.workers) {
		t.Errorf("MachineDeployments of %s (node group → replicas, flavor) = %v, want %v", w.release, got, w.workers)
	}
	osc, ok := h.get(gvkOpenStackCluster, w.namespace, infraName)
	if !ok {
		t.Fatalf("OpenStackCluster %q of Cluster %s is missing", infraName, w.release)
	}
	ext, _, _ := unstructured.NestedString(osc.Object, "spec", "externalNetwork", "id")
	wantExt, _ := getPath(w.event, "resolved", "networks", "public").(string)
	if ext != wantExt {
		t.Errorf("OpenStackCluster %s: external network %q, want %q", infraName, ext, wantExt)
	}
	provider, _, _ := unstructured.NestedString(osc.Object, "spec", "apiServerLoadBalancer", "provider")
	cidrs, _, _ := unstructured.NestedStringSlice(osc.Object, "spec", "apiServerLoadBalancer", "allowedCIDRs")
	if provider != w.lbProvider || strings.Join(cidrs, ",") != strings.Join(w.allowedCIDRs, ",") {
		t.Errorf("OpenStackCluster %s: load balancer %q allowed %v, want %q allowed %v", infraName, provider, cidrs,
			w.lbProvider, w.allowedCIDRs)
	}
	identity, _, _ := unstructured.NestedString(osc.Object, "spec", "identityRef", "name")
	if identity != w.release+"-cloud-credentials" {
		t.Errorf("OpenStackCluster %s: identityRef %q, want the Secret magnum-gitops wrote", infraName, identity)
	}
}

func (h *harness) flavor(ns, template string) string {
	o, ok := h.get(gvkOSMT, ns, template)
	if !ok {
		h.t.Errorf("OpenStackMachineTemplate %s/%s is missing", ns, template)
		return ""
	}
	f, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "flavor")
	return f
}

// checkSecrets asserts that kustomize-controller decrypted and applied every Secret with
// the material of the event: the CA certificates, the application credential and the CA
// bundle, byte for byte.
func (h *harness) checkSecrets(w clusterWant) {
	t := h.t
	t.Helper()
	// Secret suffix → the event's certificate it carries ("" for the derived service account key).
	certs := map[string]string{"ca": "ca", "etcd": "etcd", "proxy": "front_proxy", "sa": ""}
	for suffix, key := range certs {
		s := h.secret(w, suffix)
		if s == nil {
			continue
		}
		if s.Type != "cluster.x-k8s.io/secret" {
			t.Errorf("Secret %s: type %q", s.Name, s.Type)
		}
		for _, k := range []string{"tls.crt", "tls.key"} {
			blk, _ := pem.Decode(s.Data[k])
			if blk == nil {
				t.Errorf("Secret %s: %s is not PEM (not decrypted?): %.40q", s.Name, k, s.Data[k])
			}
		}
		if key == "" {
			continue
		}
		want, _ := getPath(w.event, "secrets", "certificates", key, "cert").(string)
		if strings.TrimSpace(string(s.Data["tls.crt"])) != strings.TrimSpace(want) {
			t.Errorf("Secret %s: tls.crt differs from the event's %s certificate", s.Name, key)
		}
	}
	s := h.secret(w, "cloud-credentials")
	if s == nil {
		return
	}
	clouds := string(s.Data["clouds.yaml"])
	id, _ := getPath(w.event, "secrets", "application_credential", "id").(string)
	secret, _ := getPath(w.event, "secrets", "application_credential", "secret").(string)
	if !strings.Contains(clouds, id) || !strings.Contains(clouds, secret) || !strings.Contains(clouds, "openstack:") {
		t.Errorf("Secret %s: clouds.yaml does not hold the event's application credential for cloud openstack", s.Name)
	}
	ca, _ := getPath(w.event, "secrets", "ca_bundle").(string)
	if strings.TrimSpace(string(s.Data["cacert"])) != strings.TrimSpace(ca) {
		t.Errorf("Secret %s: cacert differs from the event's ca_bundle", s.Name)
	}
}

// secret reads one of the cluster's Secrets, checks what every one of them carries, and
// returns nil (with an error reported) when it is missing.
func (h *harness) secret(w clusterWant, suffix string) *corev1.Secret {
	t := h.t
	t.Helper()
	var s corev1.Secret
	name := w.release + "-" + suffix
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: w.namespace, Name: name}, &s); err != nil {
		t.Errorf("Secret %s/%s: %v", w.namespace, name, err)
		return nil
	}
	for k, v := range s.Data {
		if strings.Contains(string(v), "ENC[AES256_GCM") {
			t.Errorf("Secret %s: %s is still SOPS-encrypted", name, k)
		}
	}
	if s.Annotations["kustomize.toolkit.fluxcd.io/prune"] != "disabled" {
		t.Errorf("Secret %s: annotations %v lack kustomize.toolkit.fluxcd.io/prune: disabled", name, s.Annotations)
	}
	if s.Labels["cluster.x-k8s.io/cluster-name"] != w.release || s.Labels["kustomize.toolkit.fluxcd.io/name"] != h.fluxFor(w.namespace) {
		t.Errorf("Secret %s: labels %v: want the cluster's and the Kustomization's", name, s.Labels)
	}
	if len(s.Data) == 0 {
		t.Errorf("Secret %s is empty", name)
	}
	return &s
}

// checkDeleted asserts the state after delete_cluster: the HelmRelease and its Helm
// release are gone, and with them every object Helm owned, except those the chart marks
// helm.sh/resource-policy: keep (the Cluster's own ownerReferences, set by the CAPI
// controllers that do not run here, delete those); the Secrets stay for CAPO.
func (h *harness) checkDeleted(w clusterWant) {
	t := h.t
	t.Helper()
	if _, ok := h.get(gvkHelmRelease, w.namespace, w.release); ok {
		t.Errorf("HelmRelease %s still exists", w.release)
	}
	if _, ok := h.get(gvkCluster, w.namespace, w.release); ok {
		t.Errorf("Cluster %s still exists after helm uninstall", w.release)
	}
	for _, md := range h.list(gvkMachineDeployment, w.namespace) {
		t.Errorf("MachineDeployment %s still exists after helm uninstall", md.GetName())
	}
	kept := 0
	for _, gvk := range []schema.GroupVersionKind{gvkKCP, gvkOpenStackCluster, gvkOSMT} {
		for _, o := range h.list(gvk, w.namespace) {
			if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
				t.Errorf("%s %s survived helm uninstall without helm.sh/resource-policy: keep", o.GetKind(), o.GetName())
			}
			kept++
		}
	}
	t.Logf("after uninstall, %d objects marked helm.sh/resource-policy: keep remain for CAPI to delete", kept)
	for _, suffix := range []string{"ca", "etcd", "proxy", "sa", "cloud-credentials"} {
		if h.secret(w, suffix) == nil {
			t.Errorf("Secret %s-%s was removed with the HelmRelease; it must stay until the CAPI Cluster is gone", w.release, suffix)
		}
	}
	h.checkSecrets(w)
}

// ---------------------------------------------------------------------------------------
// Events

func readEvent(t testing.TB, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func writeEvent(t testing.TB, dir, name string, ev map[string]any) string {
	t.Helper()
	data, err := yaml.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func getPath(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func setPath(m map[string]any, v any, path ...string) {
	cur := m
	for _, p := range path[:len(path)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = v
}

// deleteOf is the delete_cluster event the driver sends for the cluster of ev, under id:
// ev's cluster as Magnum holds it while deleting, without Secret material.
func deleteOf(ev map[string]any, id string) map[string]any {
	del := deepCopy(ev).(map[string]any)
	del["id"] = id
	del["operation"] = "delete_cluster"
	setPath(del, "DELETE_IN_PROGRESS", "cluster", "status")
	delete(del, "secrets")
	return del
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
