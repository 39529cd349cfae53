//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

var (
	gvkAddonHelmRelease = schema.GroupVersionKind{Group: "addons.stackhpc.com", Version: "v1alpha1", Kind: "HelmRelease"}
	gvkAddonManifests   = schema.GroupVersionKind{Group: "addons.stackhpc.com", Version: "v1alpha1", Kind: "Manifests"}
)

// statusReport is the part of `magnum-gitops status -o json` the tests read.
type statusReport struct {
	Status       string `json:"status"`
	StatusReason string `json:"status_reason"`
	COEVersion   string `json:"coe_version"`
	NodeCount    int    `json:"node_count"`
	MasterCount  int    `json:"master_count"`
	HealthStatus string `json:"health_status"`
}

// magnumStatus runs `magnum-gitops status -o json` against the harness's API server, as
// the driver shim asks it: Magnum's view of the cluster (the event with the status Magnum
// holds, in progress since `since`) and the commit of the operation.
func (h *harness) magnumStatus(ev map[string]any, magnumStatus, revision string, since time.Time) statusReport {
	t := h.t
	t.Helper()
	view := deepCopy(ev).(map[string]any)
	setPath(view, magnumStatus, "cluster", "status")
	setPath(view, since.UTC().Format(time.RFC3339), "cluster", "updated_at")
	file := writeEvent(t, h.work, "magnum-view.yaml", view)
	args := []string{"status", "--kubeconfig", h.kubeconfig, "--config", h.config, "--magnum", file,
		"--kustomization", fluxNamespace + "/" + sourceName, "-o", "json"}
	if revision != "" {
		args = append(args, "--revision", revision)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(h.ctx, h.bin.magnum, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+h.work)
	if err := cmd.Run(); err != nil {
		t.Fatalf("magnum-gitops %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	var r statusReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("magnum-gitops status: %v\n%s", err, stdout.String())
	}
	return r
}

// waitStatus polls the status CLI until it reports want with a reason containing
// reason, and returns that report.
func (h *harness) waitStatus(ev map[string]any, magnumStatus, revision string, since time.Time, want, reason string) statusReport {
	h.t.Helper()
	var r statusReport
	h.waitFor(fmt.Sprintf("status %s (%q)", want, reason), 2*time.Minute, func() (bool, string) {
		r = h.magnumStatus(ev, magnumStatus, revision, since)
		return r.Status == want && strings.Contains(r.StatusReason, reason), fmt.Sprintf("%s: %s", r.Status, r.StatusReason)
	})
	h.t.Logf("status: %s %q (nodes %d+%d, %s, health %s)", r.Status, r.StatusReason, r.MasterCount, r.NodeCount,
		r.COEVersion, r.HealthStatus)
	return r
}

// suspendKustomization suspends or resumes the Kustomization, so the test can look at a
// commit Flux has not applied yet; resuming changes its spec, and kustomize-controller
// reconciles at once.
//
// Before suspending, it waits until the head of the branch is applied: a reconcile still
// under way when the suspend lands would fetch the newest artifact and apply the very
// commit a test holds back, as a lagging kustomize-controller on a loaded machine does.
func (h *harness) suspendKustomization(suspend bool) {
	h.t.Helper()
	if suspend {
		h.waitApplied(h.headRevision(), 3*time.Minute)
	}
	k := h.object(gvkKustomization, fluxNamespace, sourceName)
	p := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend))
	if err := h.c.Patch(h.ctx, k, p); err != nil {
		h.t.Fatalf("suspend=%t on the Kustomization: %v", suspend, err)
	}
}

// conditions builds a v1beta2 (metav1.Condition) list, which needs a reason and a message.
func conditions(at string, typeStatus ...string) []any {
	var out []any
	for i := 0; i+1 < len(typeStatus); i += 2 {
		out = append(out, map[string]any{"type": typeStatus[i], "status": typeStatus[i+1],
			"lastTransitionTime": at, "reason": "E2E", "message": ""})
	}
	return out
}

// conditionsV1beta1 builds a Cluster API v1beta1 list (CAPI's and CAPO's status.conditions),
// whose optional reason and message must not be empty when present.
func conditionsV1beta1(at string, typeStatus ...string) []any {
	var out []any
	for i := 0; i+1 < len(typeStatus); i += 2 {
		out = append(out, map[string]any{"type": typeStatus[i], "status": typeStatus[i+1], "lastTransitionTime": at})
	}
	return out
}

// patchStatus merges status into an object's status subresource, as its controller would.
func (h *harness) patchStatus(o *unstructured.Unstructured, status map[string]any) {
	h.t.Helper()
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.c.Status().Patch(h.ctx, o, client.RawPatch("application/merge-patch+json", body)); err != nil {
		h.t.Fatalf("status of %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// playCAPI reports the cluster's objects the way CAPI, CAPO and the addon provider do
// once the machines exist: the Cluster provisioned, the control plane and every
// MachineDeployment with all replicas (spec.replicas, or workers[group] when given: a
// scale still under way) up to date and ready at the KubeadmControlPlane's version, the
// OpenStackCluster ready, and every addon Deployed.
func (h *harness) playCAPI(w clusterWant, workers map[string]int64) {
	t := h.t
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	cl, ok := h.get(gvkCluster, w.namespace, w.release)
	if !ok {
		t.Fatalf("Cluster %s is missing", w.release)
	}
	h.patchStatus(cl, map[string]any{"phase": "Provisioned", "infrastructureReady": true, "controlPlaneReady": true,
		"conditions": conditionsV1beta1(now, "Ready", "True", "ControlPlaneReady", "True", "InfrastructureReady", "True"),
		"v1beta2": map[string]any{"conditions": conditions(now, "Available", "True", "Deleting", "False",
			"ScalingUp", "False", "RollingOut", "False")}})
	cpName, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "name")
	kcp, ok := h.get(gvkKCP, w.namespace, cpName)
	if !ok {
		t.Fatalf("KubeadmControlPlane %s is missing", cpName)
	}
	n, _, _ := unstructured.NestedInt64(kcp.Object, "spec", "replicas")
	version, _, _ := unstructured.NestedString(kcp.Object, "spec", "version")
	h.patchStatus(kcp, map[string]any{"replicas": n, "updatedReplicas": n, "readyReplicas": n, "unavailableReplicas": 0,
		"version": version, "ready": true, "initialized": true,
		"conditions": conditionsV1beta1(now, "Ready", "True", "MachinesReady", "True", "EtcdClusterHealthy", "True",
			"ControlPlaneComponentsHealthy", "True", "Available", "True", "CertificatesAvailable", "True"),
		"v1beta2": map[string]any{"readyReplicas": n, "upToDateReplicas": n, "availableReplicas": n,
			"conditions": conditions(now, "Available", "True", "ScalingUp", "False", "RollingOut", "False",
				"Remediating", "False", "Deleting", "False")}})
	for _, md := range h.list(gvkMachineDeployment, w.namespace) {
		if cn, _, _ := unstructured.NestedString(md.Object, "spec", "clusterName"); cn != w.release {
			continue
		}
		n, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
		if r, ok := workers[md.GetLabels()["capi.stackhpc.com/node-group"]]; ok {
			n = r
		}
		h.patchStatus(&md, map[string]any{"replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n,
			"phase": "Running", "conditions": conditionsV1beta1(now, "Ready", "True", "Available", "True"),
			"v1beta2": map[string]any{"readyReplicas": n, "upToDateReplicas": n, "availableReplicas": n,
				"conditions": conditions(now, "Available", "True", "RollingOut", "False", "ScalingUp", "False", "ScalingDown", "False")}})
	}
	infraName, _, _ := unstructured.NestedString(cl.Object, "spec", "infrastructureRef", "name")
	osc, ok := h.get(gvkOpenStackCluster, w.namespace, infraName)
	if !ok {
		t.Fatalf("OpenStackCluster %s is missing", infraName)
	}
	h.patchStatus(osc, map[string]any{"ready": true, "conditions": conditionsV1beta1(now, "Ready", "True")})
	if len(h.addons(w)) == 0 {
		t.Fatalf("the chart installed no addons for %s", w.release)
	}
	for _, a := range h.addons(w) {
		h.patchStatus(&a, map[string]any{"phase": "Deployed"})
	}
}

// addons are the cluster's addons.stackhpc.com objects the chart installed.
func (h *harness) addons(w clusterWant) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, gvk := range []schema.GroupVersionKind{gvkAddonHelmRelease, gvkAddonManifests} {
		for _, a := range h.list(gvk, w.namespace) {
			if cn, _, _ := unstructured.NestedString(a.Object, "spec", "clusterName"); cn == w.release {
				out = append(out, a)
			}
		}
	}
	return out
}

// TestE2EStatusLifecycle follows one cluster through create, resize and delete while the
// test reports CAPI's progress on the objects the chart installed, and reads Magnum's
// status back with `magnum-gitops status -o json` at each point: CREATE_IN_PROGRESS
// (first waiting for Flux to apply the commit, then for the Cluster) → CREATE_COMPLETE →
// UPDATE_IN_PROGRESS → UPDATE_FAILED while an addon fails → UPDATE_COMPLETE →
// DELETE_IN_PROGRESS → DELETE_COMPLETE.
func TestE2EStatusLifecycle(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true)
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	resize := readEvent(t, filepath.Join(events, "02-prod-a-resize-workers.yaml"))
	del := readEvent(t, filepath.Join(events, "08-prod-a-delete.yaml"))
	a, _, _ := twoClusters(t) // prod-a, created by fixture 01

	// Create. Flux held back first: the commit is in Git, not yet applied.
	since := time.Now()
	h.suspendKustomization(true)
	rev := h.commitEvent(filepath.Join(events, "01-prod-a-create.yaml"))
	h.waitStatus(a.event, "CREATE_IN_PROGRESS", rev, since, "CREATE_IN_PROGRESS", "waiting for Flux to apply revision "+rev[:12])
	h.suspendKustomization(false)
	h.waitApplied(rev, 3*time.Minute)
	h.waitFor("HelmRelease Ready", defaultWaitStep, h.releaseReady(a))
	// Helm installed the chart; no CAPI controller has reported anything yet.
	h.waitStatus(a.event, "CREATE_IN_PROGRESS", rev, since, "CREATE_IN_PROGRESS", "Cluster "+a.release)
	h.playCAPI(a, nil)
	r := h.waitStatus(a.event, "CREATE_IN_PROGRESS", rev, since, "CREATE_COMPLETE", "")
	if r.COEVersion != "v1.33.7" || r.MasterCount != 3 || r.NodeCount != 3 {
		t.Errorf("after create: coe_version %s, %d masters, %d nodes; want v1.33.7, 3, 3", r.COEVersion, r.MasterCount, r.NodeCount)
	}

	// Resize 3 → 5 workers.
	since = time.Now()
	h.suspendKustomization(true)
	rev = h.commitEvent(filepath.Join(events, "02-prod-a-resize-workers.yaml"))
	h.waitStatus(resize, "UPDATE_IN_PROGRESS", rev, since, "UPDATE_IN_PROGRESS", "waiting for Flux to apply revision "+rev[:12])
	h.suspendKustomization(false)
	h.waitApplied(rev, 3*time.Minute)
	a.helmRevision = 2
	h.waitFor("HelmRelease Ready", defaultWaitStep, h.releaseReady(a))
	// The MachineDeployment wants 5; CAPI has 3 so far.
	h.waitStatus(resize, "UPDATE_IN_PROGRESS", rev, since, "UPDATE_IN_PROGRESS", "MachineDeployment "+a.release+"-default-worker")
	// An addon fails: the update fails, naming it.
	addons := h.addons(a)
	failing := addons[0]
	h.patchStatus(&failing, map[string]any{"phase": "Failed", "failureMessage": "e2e: helm install of the addon timed out"})
	h.waitStatus(resize, "UPDATE_IN_PROGRESS", rev, since, "UPDATE_FAILED",
		"addon "+failing.GetName()+" failed: e2e: helm install of the addon timed out")
	// The addon provider retries and succeeds, the machines arrive: complete.
	h.playCAPI(a, nil)
	r = h.waitStatus(resize, "UPDATE_IN_PROGRESS", rev, since, "UPDATE_COMPLETE", "")
	if r.NodeCount != 5 {
		t.Errorf("after resize: %d nodes, want 5", r.NodeCount)
	}

	// Delete: CAPI holds the Cluster with its finalizer until the machines are gone.
	h.addCAPIFinalizer(a)
	since = time.Now()
	rev = h.commitEvent(filepath.Join(events, "08-prod-a-delete.yaml"))
	h.waitApplied(rev, 3*time.Minute)
	h.waitFor("the Cluster to be deleted", defaultWaitStep, h.clusterDeleting(a))
	h.waitStatus(del, "DELETE_IN_PROGRESS", rev, since, "DELETE_IN_PROGRESS", "Cluster "+a.release)
	cl, _ := h.get(gvkCluster, a.namespace, a.release)
	now := time.Now().UTC().Format(time.RFC3339)
	deleting := conditions(now, "Available", "False", "Deleting", "True")
	deleting[1].(map[string]any)["message"] = "Deleting 8 Machines"
	h.patchStatus(cl, map[string]any{"phase": "Deleting", "v1beta2": map[string]any{"conditions": deleting}})
	h.waitStatus(del, "DELETE_IN_PROGRESS", rev, since, "DELETE_IN_PROGRESS", "Deleting 8 Machines")
	h.stripCAPIFinalizers(a.namespace)
	h.waitFor("the HelmRelease to be uninstalled", defaultWaitStep, h.releaseGone(a))
	h.waitStatus(del, "DELETE_IN_PROGRESS", rev, since, "DELETE_COMPLETE", "")
}

// TestE2EHelmInstallFailure: a site values_overlay the chart rejects (autoscaling with a
// maximum below the minimum) makes helm-controller's install fail. The status names
// Helm's own message: in progress while Flux retries, CREATE_FAILED once the create
// timeout (the cluster's create_timeout, 60 minutes) has passed since Magnum started it.
func TestE2EHelmInstallFailure(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true, withValuesOverlay(map[string]any{
		"nodeGroupDefaults": map[string]any{"autoscale": true, "machineCountMin": 3, "machineCountMax": 1},
	}))
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	create := readEvent(t, filepath.Join(events, "01-prod-a-create.yaml"))
	ns, release := "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c", "prod-a-2b7xq4mzkd5h"
	rev := h.commitEvent(filepath.Join(events, "01-prod-a-create.yaml"))
	h.waitApplied(rev, 3*time.Minute)
	const helmSays = "maximum machine count < minimum machine count for node group 'default-worker'"
	h.waitFor("Helm install to fail", defaultWaitStep, func() (bool, string) {
		hr, ok := h.get(gvkHelmRelease, ns, release)
		if !ok {
			return false, "no HelmRelease"
		}
		st, reason, msg, _ := condition(hr, "Ready")
		return st == "False" && reason == "InstallFailed" && strings.Contains(msg, helmSays),
			fmt.Sprintf("Ready=%s %s: %s", st, reason, msg)
	})
	if _, ok := h.get(gvkCluster, ns, release); ok {
		t.Error("the Cluster exists although the chart did not render")
	}
	since := time.Now()
	r := h.waitStatus(create, "CREATE_IN_PROGRESS", rev, since, "CREATE_IN_PROGRESS", "Helm install failed for release ")
	h.recordState("install-failed", withUpdatedAt(create, since), ns, rev, serveStatus{Status: r.Status, StatusReason: r.StatusReason})
	r = h.waitStatus(create, "CREATE_IN_PROGRESS", rev, time.Now().Add(-61*time.Minute), "CREATE_FAILED", helmSays)
	if !strings.Contains(r.StatusReason, "not complete after 1h0m0s: HelmRelease "+release+": Helm install failed for release ") {
		t.Errorf("status_reason %q: want the timeout and Helm's failure", r.StatusReason)
	}
	// Nothing was half-installed: Helm recorded the failed release only.
	for _, s := range h.helmStorage(clusterWant{namespace: ns, release: release}) {
		if s.Labels["status"] != "failed" {
			t.Errorf("Helm release Secret %s has status %q, want failed", s.Name, s.Labels["status"])
		}
	}
}
