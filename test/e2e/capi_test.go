//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// Cluster API objects read as the controllers store them (v1beta2), whatever version the
// chart wrote.
var (
	gvkClusterV2   = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	gvkMDV2        = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineDeployment"}
	gvkMachineV2   = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
	gvkMachineSet2 = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineSet"}
	gvkKCPV2       = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlane"}
	gvkDevCluster  = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DevCluster"}
	gvkDevMachine  = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DevMachine"}
	gvkDevMT       = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DevMachineTemplate"}
	gvkKubeadmCfg  = schema.GroupVersionKind{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmConfig"}
)

// capiStep is one operation's figures, from the end of the push.
type capiStep struct {
	name          string
	push, applied time.Duration // POST → pushed; → Kustomization applied
	capi, magnum  time.Duration // → CAPI reports it done; → serve reports *_COMPLETE
	reasons       []string      // the in-progress status_reasons serve gave on the way
}

// TestE2EClusterAPI drives one cluster's life through serve → Git → Flux → Helm → the real
// Cluster API controllers (core, kubeadm bootstrap and control plane, CAPD in memory), and
// holds serve's status answer to what CAPI really did: never *_COMPLETE before CAPI is
// done, *_COMPLETE once it is.
func TestE2EClusterAPI(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true, withClusterAPI(3*time.Second))
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	a, _, _ := twoClusters(t)
	uuid := getPath(a.event, "cluster", "uuid").(string)
	var steps []capiStep

	run := func(name, eventFile, want string, done func() (bool, string)) capiStep {
		t.Helper()
		view := readEvent(t, eventFile)
		delete(view, "secrets")
		t0 := time.Now()
		setPath(view, t0.UTC().Format(time.RFC3339), "cluster", "updated_at")
		record := func(state string, s serveStatus) {
			h.recordState(strings.ReplaceAll(name, " ", "-")+"-"+state, view, a.namespace, s)
		}
		ans := h.postEvent(eventFile)
		if ans.Outcome != "committed" {
			t.Fatalf("%s: outcome %q (%s)", name, ans.Outcome, ans.Message)
		}
		s := capiStep{name: name, push: time.Since(t0)}
		s.applied = h.waitApplied(ans.Revision, 3*time.Minute).Sub(t0)
		s.capi, s.magnum, s.reasons = h.waitCAPIAndStatus(uuid, a.namespace, a.release, want, done, t0, record)
		t.Logf("%s: pushed %s, applied %s, CAPI done %s, Magnum %s %s; on the way: %q", name,
			s.push.Round(time.Millisecond), s.applied.Round(time.Millisecond), s.capi.Round(time.Millisecond),
			want, s.magnum.Round(time.Millisecond), s.reasons)
		steps = append(steps, s)
		return s
	}

	// 1. Create prod-a: 3 control-plane machines, 3 workers. CREATE_COMPLETE only once the
	// Cluster is Available and every machine the event asks for is up.
	create := run("create", writeEvent(t, t.TempDir(), "create.yaml", withMagnumCAs(t, a.event)), "CREATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 3}))
	if len(create.reasons) == 0 {
		t.Errorf("create: serve never reported CREATE_IN_PROGRESS while CAPI worked")
	}
	h.checkHealth(uuid, "HEALTHY")

	// 2. Resize default-worker 3 → 5: the MachineDeployment really scales.
	run("resize", filepath.Join(events, "02-prod-a-resize-workers.yaml"), "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5}))

	// 3. Add node group gpu-a100 (2 machines), update it, then delete it: a
	// MachineDeployment appears and goes with its machines.
	run("nodegroup create", filepath.Join(events, "03-prod-a-create-nodegroup.yaml"), "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5, "gpu-a100": 2}))
	// Autoscaling bounds on gpu-a100 (min 1, max 4): the MachineDeployment carries the
	// autoscaler's annotations, and no machine changes.
	gpuMachines := h.machineNames(a.namespace)
	run("nodegroup update", filepath.Join(events, "04-prod-a-update-nodegroup-autoscale.yaml"), "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5, "gpu-a100": 2}))
	if md, ok := h.get(gvkMDV2, a.namespace, a.release+"-gpu-a100"); !ok ||
		md.GetAnnotations()["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] != "4" {
		t.Errorf("nodegroup update: MachineDeployment gpu-a100 lacks the autoscaler's max size 4: %v", md.GetAnnotations())
	}
	if got := h.machineNames(a.namespace); !slices.Equal(got, gpuMachines) {
		t.Errorf("nodegroup update replaced machines: %v → %v", gpuMachines, got)
	}
	run("nodegroup delete", filepath.Join(events, "05-prod-a-delete-nodegroup.yaml"), "UPDATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 5}))
	h.checkHealth(uuid, "HEALTHY")

	// 4. Upgrade Kubernetes v1.33.7 → v1.34.3: KCP and the workers roll; UPDATE_COMPLETE only
	// once every machine runs the new version.
	before := h.machineNames(a.namespace)
	run("upgrade", filepath.Join(events, "06-prod-a-upgrade.yaml"), "UPDATE_COMPLETE",
		h.capiRolledTo(a.namespace, a.release, "v1.34.3", 3, map[string]int64{"default-worker": 5}))
	if kept := intersect(before, h.machineNames(a.namespace)); len(kept) > 0 {
		t.Errorf("upgrade: machines %v were not replaced", kept)
	}

	// 5. The workers' flavor changes (m1.medium → m1.large; Magnum itself changes a group's
	// flavor only through a new group, a site's values or a template may): the chart names
	// a new machine template, and CAPI replaces every worker, the control plane untouched.
	flavor := readEvent(t, filepath.Join(events, "06-prod-a-upgrade.yaml"))
	flavor["id"] = "evt-e2e-capi-flavor"
	for _, g := range flavor["nodegroups"].([]any) {
		if ng := g.(map[string]any); ng["name"] == "default-worker" {
			ng["flavor_id"] = "m1.large"
		}
	}
	setPath(flavor, "m1.large", "cluster", "flavor_id")
	cpBefore, workersBefore := h.machinesByRole(a.namespace)
	run("flavor change", writeEvent(t, t.TempDir(), "flavor.yaml", flavor), "UPDATE_COMPLETE",
		h.capiRolledTo(a.namespace, a.release, "v1.34.3", 3, map[string]int64{"default-worker": 5}))
	cpAfter, workersAfter := h.machinesByRole(a.namespace)
	if kept := intersect(workersBefore, workersAfter); len(kept) > 0 {
		t.Errorf("flavor change: workers %v were not replaced", kept)
	}
	if !slices.Equal(cpBefore, cpAfter) {
		t.Errorf("flavor change: the control plane was rolled too: %v → %v", cpBefore, cpAfter)
	}

	// 6. Delete: Flux uninstalls, CAPI deletes in order, serve sees the Cluster gone and
	// only then removes the Secrets; nothing of the cluster is left in the API server.
	del := deepCopy(readEvent(t, filepath.Join(events, "06-prod-a-upgrade.yaml"))).(map[string]any)
	del["id"] = "evt-e2e-capi-delete"
	del["operation"] = "delete_cluster"
	setPath(del, "DELETE_IN_PROGRESS", "cluster", "status")
	delete(del, "secrets")
	run("delete", writeEvent(t, t.TempDir(), "delete.yaml", del), "DELETE_COMPLETE", h.capiGone(a))
	h.waitFor("the cluster's directory to leave Git", 3*time.Minute, func() (bool, string) {
		files := h.gitFiles(a.dir())
		return len(files) == 0, fmt.Sprintf("%d files left: %v", len(files), files)
	})
	h.waitFor("nothing of the cluster left in the API server", 3*time.Minute, h.namespaceEmpty(a.namespace))

	h.logUsage("after the whole life of one cluster")
	for _, s := range steps {
		t.Logf("figures: %-17s push %6s  applied %7s  CAPI done %8s  Magnum complete %8s", s.name,
			s.push.Round(time.Millisecond), s.applied.Round(time.Millisecond), s.capi.Round(time.Second), s.magnum.Round(time.Second))
	}
}

// serveStatus is serve's GET /v1/clusters/{uuid}/status, as the driver shim reads it.
type serveStatus struct {
	Status       string            `json:"status"`
	StatusReason string            `json:"status_reason"`
	HealthStatus string            `json:"health_status"`
	HealthReason map[string]string `json:"health_status_reason"`
	EventID      string            `json:"event_id"`
	NodeGroups   []struct {
		Name      string `json:"name"`
		Status    string `json:"status"`
		NodeCount int    `json:"node_count"`
	} `json:"nodegroups"`
}

func (h *harness) serveStatusOf(uuid string) serveStatus {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.ctx, http.MethodGet, h.serveURL+"/v1/clusters/"+uuid+"/status", nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.serveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("GET status: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var s serveStatus
	if resp.StatusCode == http.StatusServiceUnavailable {
		return serveStatus{Status: "unavailable", StatusReason: string(body)}
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &s) != nil {
		h.t.Fatalf("GET /v1/clusters/%s/status: %s: %s", uuid, resp.Status, body)
	}
	return s
}

// waitCAPIAndStatus polls serve's status answer and what CAPI really did, once a second,
// until both say the operation is done. serve reporting want while CAPI is not done fails
// the test at once: that is the lie the status reader must never tell. It returns when
// CAPI was last seen to become done and when serve first reported want (both since t0), and the
// distinct in-progress reasons serve gave.
//
// record, when set, is called with each new state (recordState).
func (h *harness) waitCAPIAndStatus(uuid, ns, release, want string, done func() (bool, string), t0 time.Time,
	record func(name string, s serveStatus)) (capi, magnum time.Duration, reasons []string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		h.playAddonProvider(ns, release)
		s := h.serveStatusOf(uuid)
		ok, state := done()
		if strings.HasSuffix(s.Status, "_IN_PROGRESS") && !slices.Contains(reasons, s.StatusReason) {
			reasons = append(reasons, s.StatusReason)
			if record != nil {
				record(fmt.Sprintf("%02d", len(reasons)), s)
			}
		}
		if strings.HasSuffix(s.Status, "_FAILED") {
			h.t.Fatalf("serve reported %s (%s) while CAPI: %s", s.Status, s.StatusReason, state)
		}
		switch {
		case !ok:
			capi = 0 // not done (again: the old state can look settled until Helm upgrades)
		case capi == 0:
			capi = time.Since(t0)
		}
		if s.Status == want {
			if !ok {
				if record != nil {
					record("premature", s)
				}
				h.t.Fatalf("serve reported %s (%s) before CAPI was done: %s", want, s.StatusReason, state)
			}
			if record != nil {
				record("complete", s)
			}
			return capi, time.Since(t0), reasons
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; serve: %s %q; CAPI: %s", want, s.Status, s.StatusReason, state)
		}
		time.Sleep(time.Second)
	}
}

// capiSettled reports when the Cluster is Available, the control plane has cp machines
// ready and up to date, and each worker MachineDeployment (by node group) has exactly its
// replicas ready and up to date, with no other MachineDeployment of the cluster left.
func (h *harness) capiSettled(ns, release string, cp int64, workers map[string]int64) func() (bool, string) {
	return func() (bool, string) {
		cl, ok := h.get(gvkClusterV2, ns, release)
		if !ok {
			return false, "no Cluster"
		}
		if st, reason, msg, _ := condition(cl, "Available"); st != "True" {
			return false, fmt.Sprintf("Cluster Available=%q %s: %s", st, reason, msg)
		}
		kcp, ok := h.get(gvkKCPV2, ns, release+"-control-plane")
		if !ok {
			return false, "no KubeadmControlPlane"
		}
		if s := replicaState(*kcp); !s.settled(cp) {
			return false, "KubeadmControlPlane " + s.String()
		}
		of := client.MatchingLabels{"cluster.x-k8s.io/cluster-name": release}
		mds := h.list(gvkMDV2, ns, of)
		if len(mds) != len(workers) {
			return false, fmt.Sprintf("%d MachineDeployments, want %d", len(mds), len(workers))
		}
		for ng, want := range workers {
			md, ok := h.get(gvkMDV2, ns, release+"-"+ng)
			if !ok {
				return false, "no MachineDeployment for " + ng
			}
			if s := replicaState(*md); !s.settled(want) {
				return false, "MachineDeployment " + ng + " " + s.String()
			}
		}
		var machines int64
		for _, n := range workers {
			machines += n
		}
		if got := int64(len(h.list(gvkMachineV2, ns, of))); got != machines+cp {
			return false, fmt.Sprintf("%d Machines, want %d", got, machines+cp)
		}
		return true, ""
	}
}

// capiRolledTo is capiSettled with every Machine at version.
func (h *harness) capiRolledTo(ns, release, version string, cp int64, workers map[string]int64) func() (bool, string) {
	settled := h.capiSettled(ns, release, cp, workers)
	return func() (bool, string) {
		for _, m := range h.list(gvkMachineV2, ns) {
			if v, _, _ := unstructured.NestedString(m.Object, "spec", "version"); v != version {
				return false, fmt.Sprintf("Machine %s runs %s", m.GetName(), v)
			}
		}
		return settled()
	}
}

// capiGone reports when the HelmRelease, the Cluster and every object CAPI made for it are
// gone.
func (h *harness) capiGone(w clusterWant) func() (bool, string) {
	return func() (bool, string) {
		if _, ok := h.get(gvkHelmRelease, w.namespace, w.release); ok {
			return false, "HelmRelease still there"
		}
		if cl, ok := h.get(gvkClusterV2, w.namespace, w.release); ok {
			// The Secrets (the CA among them, which CAPI still reads) stay while it exists.
			ca := &unstructured.Unstructured{}
			ca.SetAPIVersion("v1")
			ca.SetKind("Secret")
			if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: w.namespace, Name: w.release + "-ca"}, ca); err != nil {
				h.t.Fatalf("Secret %s-ca is gone while the Cluster still exists: %v", w.release, err)
			}
			phase, _, _ := unstructured.NestedString(cl.Object, "status", "phase")
			return false, fmt.Sprintf("Cluster still there (phase %s, %d Machines)", phase, len(h.list(gvkMachineV2, w.namespace)))
		}
		return true, ""
	}
}

// namespaceEmpty reports when no Cluster API object and no Secret of the cluster is left
// in the namespace: the garbage collector took what CAPI's ownerReferences hand it, and
// serve deleted the Secrets it wrote once the Cluster was gone.
func (h *harness) namespaceEmpty(ns string) func() (bool, string) {
	return func() (bool, string) {
		var left []string
		for _, gvk := range []schema.GroupVersionKind{gvkClusterV2, gvkKCPV2, gvkMDV2, gvkMachineSet2, gvkMachineV2,
			gvkDevCluster, gvkDevMachine, gvkDevMT, gvkKubeadmCfg, gvkHelmRelease} {
			for _, o := range h.list(gvk, ns) {
				left = append(left, gvk.Kind+"/"+o.GetName())
			}
		}
		secrets := &unstructured.UnstructuredList{}
		secrets.SetAPIVersion("v1")
		secrets.SetKind("SecretList")
		if err := h.c.List(h.ctx, secrets, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, s := range secrets.Items {
			left = append(left, "Secret/"+s.GetName())
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	}
}

// checkHealth asserts serve's health answer, judged from the real conditions.
func (h *harness) checkHealth(uuid, want string) {
	h.t.Helper()
	h.waitFor("health "+want, 2*time.Minute, func() (bool, string) {
		s := h.serveStatusOf(uuid)
		return s.HealthStatus == want, fmt.Sprintf("%s %v", s.HealthStatus, s.HealthReason)
	})
}

// machinesByRole lists the control-plane and worker Machines of a namespace, sorted.
func (h *harness) machinesByRole(ns string) (controlPlane, workers []string) {
	for _, m := range h.list(gvkMachineV2, ns) {
		if _, ok := m.GetLabels()["cluster.x-k8s.io/control-plane"]; ok {
			controlPlane = append(controlPlane, m.GetName())
		} else {
			workers = append(workers, m.GetName())
		}
	}
	slices.Sort(controlPlane)
	slices.Sort(workers)
	return controlPlane, workers
}

// machineNames lists the Machines of a namespace, sorted.
func (h *harness) machineNames(ns string) []string {
	var out []string
	for _, m := range h.list(gvkMachineV2, ns) {
		out = append(out, m.GetName())
	}
	slices.Sort(out)
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// replicas is the v1beta2 replica status of a KubeadmControlPlane or MachineDeployment.
type replicas struct{ spec, status, ready, available, upToDate int64 }

func replicaState(o unstructured.Unstructured) replicas {
	n := func(path ...string) int64 { v, _, _ := unstructured.NestedInt64(o.Object, path...); return v }
	return replicas{spec: n("spec", "replicas"), status: n("status", "replicas"), ready: n("status", "readyReplicas"),
		available: n("status", "availableReplicas"), upToDate: n("status", "upToDateReplicas")}
}

func (r replicas) settled(want int64) bool {
	return r.spec == want && r.status == want && r.ready == want && r.available == want && r.upToDate == want
}

func (r replicas) String() string {
	return fmt.Sprintf("spec %d, replicas %d, ready %d, available %d, up to date %d", r.spec, r.status, r.ready, r.available, r.upToDate)
}

// playAddonProvider stands in for azimuth's cluster-api-addon-provider, which cannot run
// here: it installs each addon with Helm into the workload cluster, and CAPD's in-memory
// workload clusters serve no workloads. Once the Cluster is Available (when the provider
// would start installing), every addon object without a phase is marked Deployed, as the
// provider marks it after a successful install. Nothing else in these tests is played.
func (h *harness) playAddonProvider(ns, release string) {
	cl, ok := h.get(gvkClusterV2, ns, release)
	if !ok || cl.GetDeletionTimestamp() != nil {
		return
	}
	if st, _, _, _ := condition(cl, "Available"); st != "True" {
		return
	}
	for _, gvk := range []schema.GroupVersionKind{gvkAddonHelmRelease, gvkAddonManifests} {
		for _, a := range h.list(gvk, ns) {
			if phase, _, _ := unstructured.NestedString(a.Object, "status", "phase"); phase == "" {
				h.patchStatus(&a, map[string]any{"phase": "Deployed"})
			}
		}
	}
}

// TestE2EClusterAPIFailures holds serve's status to two failures the real controllers
// produce: machines that never come up within the cluster's create_timeout (the simulated
// VMs take ten minutes) end CREATE_FAILED with CAPI's own reason, and not before the
// deadline; a delete held by a finalizer no controller will remove stays
// DELETE_IN_PROGRESS and says what holds it.
func TestE2EClusterAPIFailures(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true, withClusterAPI(10*time.Minute))
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	a, _, _ := twoClusters(t)
	uuid := getPath(a.event, "cluster", "uuid").(string)
	dir := t.TempDir()

	create := withMagnumCAs(t, a.event)
	setPath(create, 1, "cluster", "create_timeout") // minutes
	t0 := time.Now()
	ans := h.postEvent(writeEvent(t, dir, "create.yaml", create))
	if ans.Outcome != "committed" {
		t.Fatalf("create: outcome %q (%s)", ans.Outcome, ans.Message)
	}
	h.waitApplied(ans.Revision, 3*time.Minute)
	var last serveStatus
	h.waitFor("CREATE_FAILED after the create timeout", 4*time.Minute, func() (bool, string) {
		last = h.serveStatusOf(uuid)
		if last.Status == "CREATE_FAILED" && time.Since(t0) < time.Minute {
			t.Fatalf("CREATE_FAILED %s after the create, before its 1 minute timeout: %s", time.Since(t0).Round(time.Second), last.StatusReason)
		}
		return last.Status == "CREATE_FAILED", last.Status + ": " + last.StatusReason
	})
	t.Logf("create: CREATE_FAILED after %s: %s", time.Since(t0).Round(time.Second), last.StatusReason)
	if !strings.Contains(last.StatusReason, "not complete after 1m0s") {
		t.Errorf("CREATE_FAILED does not say the deadline passed: %q", last.StatusReason)
	}
	if cl, ok := h.get(gvkClusterV2, a.namespace, a.release); !ok {
		t.Fatal("no Cluster")
	} else if st, _, _, _ := condition(cl, "Available"); st == "True" {
		t.Fatalf("the Cluster is Available: the machines came up within the test's deadline")
	}

	// A finalizer nobody removes holds the Cluster: the delete stays in progress and names it.
	const hold = "e2e.magnum-gitops.io/hold"
	cl := h.object(gvkClusterV2, a.namespace, a.release)
	if err := h.c.Patch(h.ctx, cl, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":["`+hold+`","cluster.cluster.x-k8s.io"]}}`))); err != nil {
		t.Fatal(err)
	}
	del := deepCopy(readEvent(t, filepath.Join(events, "08-prod-a-delete.yaml"))).(map[string]any)
	ans = h.postEvent(writeEvent(t, dir, "delete.yaml", del))
	h.waitApplied(ans.Revision, 3*time.Minute)
	h.waitFor("the delete to report the finalizer that holds it", 4*time.Minute, func() (bool, string) {
		last = h.serveStatusOf(uuid)
		if last.Status == "DELETE_COMPLETE" {
			t.Fatalf("DELETE_COMPLETE while the Cluster is held by %s", hold)
		}
		return last.Status == "DELETE_IN_PROGRESS" && strings.Contains(last.StatusReason, hold), last.Status + ": " + last.StatusReason
	})
	t.Logf("delete held: %s", last.StatusReason)
	// Released, it completes.
	if err := h.c.Patch(h.ctx, cl, client.RawPatch("application/json-patch+json",
		[]byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`))); err != nil {
		t.Fatal(err)
	}
	h.waitFor("DELETE_COMPLETE once released", 4*time.Minute, func() (bool, string) {
		last = h.serveStatusOf(uuid)
		return last.Status == "DELETE_COMPLETE", last.Status + ": " + last.StatusReason
	})
	h.waitFor("nothing of the cluster left in the API server", 3*time.Minute, h.namespaceEmpty(a.namespace))
}

// recordState writes what the management cluster holds for one cluster, as the status
// reader reads it, with the Magnum view and what serve answered, in the format of
// fixtures/status: E2E_RECORD_DIR=dir keeps the real controllers' states for the status
// tests (fixtures/status/real-*.yaml are made this way).
func (h *harness) recordState(name string, view map[string]any, ns string, s serveStatus) {
	dir := os.Getenv("E2E_RECORD_DIR")
	if dir == "" {
		return
	}
	var objs []any
	// The infrastructure cluster as serve reads it: at the version the Cluster refers to it.
	gvks := append(slices.Clone(status.Kinds), gvkDevCluster)
	for _, gvk := range gvks {
		where := ns
		if gvk.Kind == "Kustomization" {
			where = fluxNamespace
		}
		for _, o := range h.list(gvk, where) {
			o.SetManagedFields(nil)
			delete(o.GetAnnotations(), "kubectl.kubernetes.io/last-applied-configuration")
			objs = append(objs, o.Object)
		}
	}
	doc := map[string]any{"now": time.Now().UTC().Format(time.RFC3339), "magnum": view, "objects": objs,
		"expect": map[string]any{"status": s.Status, "status_reason": s.StatusReason}}
	data, err := yaml.Marshal(doc)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644); err != nil {
		h.t.Fatal(err)
	}
}
