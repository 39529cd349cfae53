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

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/service"
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
	// record keeps a later state of the operation (recordState), as those on the way.
	record func(state string, s serveStatus)
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
		setPath(view, t0.UTC().Format(time.RFC3339Nano), "cluster", "updated_at")
		ans := h.postEvent(eventFile)
		if ans.Outcome != "committed" {
			t.Fatalf("%s: outcome %q (%s)", name, ans.Outcome, ans.Message)
		}
		record := func(state string, s serveStatus) {
			h.recordState(strings.ReplaceAll(name, " ", "-")+"-"+state, view, a.namespace, ans.Revision, s)
		}
		s := capiStep{name: name, push: time.Since(t0), record: record}
		h.checkBeforeApplied(uuid, a.namespace, ans.Revision, want, record)
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
	createEvent := withMagnumCAs(t, a.event)
	create := run("create", writeEvent(t, t.TempDir(), "create.yaml", createEvent), "CREATE_COMPLETE",
		h.capiSettled(a.namespace, a.release, 3, map[string]int64{"default-worker": 3}))
	if len(create.reasons) == 0 {
		t.Errorf("create: serve never reported CREATE_IN_PROGRESS while CAPI worked")
	}
	h.checkHealth(uuid, "HEALTHY")
	if s := h.serveStatusOf(uuid); s.Status == "CREATE_COMPLETE" {
		h.recordStateV1beta2("create-complete-v1beta2", withUpdatedAt(createEvent, time.Now().Add(-create.magnum)), a.namespace, "", s)
	}

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
	del := deleteOf(readEvent(t, filepath.Join(events, "06-prod-a-upgrade.yaml")), "evt-e2e-capi-delete")
	deleted := run("delete", writeEvent(t, t.TempDir(), "delete.yaml", del), "DELETE_COMPLETE", h.capiGone(a))
	h.waitFor("the cluster's directory to leave Git", 3*time.Minute, func() (bool, string) {
		files := h.gitFiles(a.dir())
		return len(files) == 0, fmt.Sprintf("%d files left: %v", len(files), files)
	})
	h.waitFor("nothing of the cluster left in the API server", 3*time.Minute, h.namespaceEmpty(a.namespace))
	// Flux has applied serve's own later commit (the Secrets removed): the delete's commit
	// is no longer the last applied, and the delete stays complete.
	h.waitApplied(h.headRevision(), 3*time.Minute)
	if s := h.serveStatusOf(uuid); s.Status != "DELETE_COMPLETE" {
		t.Errorf("after Flux applied the commit that removed the Secrets, serve reports %s (%s), want DELETE_COMPLETE", s.Status, s.StatusReason)
	} else {
		deleted.record("complete-later-commit", s)
	}

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

// checkBeforeApplied reads serve's answer right after a push, when Flux has usually not
// applied the commit yet: the objects are still those of the state before the operation,
// often all settled, and only the operation's revision keeps serve from reporting want.
// Reporting want while the Kustomization has not applied the revision fails the test;
// the pending state, when seen, is recorded as "00".
func (h *harness) checkBeforeApplied(uuid, ns, revision, want string, record func(string, serveStatus)) {
	h.t.Helper()
	s := h.serveStatusOf(uuid)
	k, _ := h.get(gvkKustomization, fluxNamespace, h.fluxFor(ns))
	applied := ""
	if k != nil {
		applied, _, _ = unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
	}
	if !strings.HasSuffix(applied, revision) {
		if s.Status == want {
			h.t.Fatalf("serve reported %s (%s) before Flux applied %s (applied: %s)", want, s.StatusReason, revision, applied)
		}
		if strings.HasPrefix(s.StatusReason, "waiting for Flux to apply revision") {
			record("00", s)
		}
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

// TestE2EClusterAPIFailures holds serve's status to failures the real controllers
// produce: machines that never come up within the cluster's create_timeout (the simulated
// VMs take ten minutes) end CREATE_FAILED with CAPI's own reason, and not before the
// deadline; an update whose upgrade the API server refuses (a site's admission policy)
// stays UPDATE_IN_PROGRESS with Helm's error while helm-controller retries; a delete held
// by a finalizer no controller will remove stays DELETE_IN_PROGRESS and says what holds
// it.
func TestE2EClusterAPIFailures(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true, withClusterAPI(10*time.Minute))
	events := filepath.Join(testenv.RepoRoot(), "fixtures", "events")
	a, _, _ := twoClusters(t)
	uuid := getPath(a.event, "cluster", "uuid").(string)
	dir := t.TempDir()
	// record keeps a state for the status tests (E2E_RECORD_DIR), the view being the
	// event's in progress since the operation started.
	record := func(name string, ev map[string]any, since time.Time, revision string, s serveStatus) {
		h.recordState(name, withUpdatedAt(ev, since), a.namespace, revision, s)
	}

	create := withMagnumCAs(t, a.event)
	setPath(create, 1, "cluster", "create_timeout") // minutes
	t0 := time.Now()
	ans := h.postEvent(writeEvent(t, dir, "create.yaml", create))
	if ans.Outcome != "committed" {
		t.Fatalf("create: outcome %q (%s)", ans.Outcome, ans.Message)
	}
	h.waitApplied(ans.Revision, 3*time.Minute)
	var last serveStatus
	var reasons []string
	h.waitFor("CREATE_FAILED after the create timeout", 4*time.Minute, func() (bool, string) {
		last = h.serveStatusOf(uuid)
		if last.Status == "CREATE_FAILED" && time.Since(t0) < time.Minute {
			t.Fatalf("CREATE_FAILED %s after the create, before its 1 minute timeout: %s", time.Since(t0).Round(time.Second), last.StatusReason)
		}
		if last.Status == "CREATE_IN_PROGRESS" && !slices.Contains(reasons, last.StatusReason) {
			reasons = append(reasons, last.StatusReason)
			record(fmt.Sprintf("create-timeout-%02d", len(reasons)), create, t0, ans.Revision, last)
		}
		return last.Status == "CREATE_FAILED", last.Status + ": " + last.StatusReason
	})
	record("create-timeout-failed", create, t0, ans.Revision, last)
	t.Logf("create: CREATE_FAILED after %s: %s", time.Since(t0).Round(time.Second), last.StatusReason)
	if !strings.Contains(last.StatusReason, "not complete after 1m0s") {
		t.Errorf("CREATE_FAILED does not say the deadline passed: %q", last.StatusReason)
	}
	if cl, ok := h.get(gvkClusterV2, a.namespace, a.release); !ok {
		t.Fatal("no Cluster")
	} else if st, _, _, _ := condition(cl, "Available"); st == "True" {
		t.Fatalf("the Cluster is Available: the machines came up within the test's deadline")
	}

	// A site's admission policy caps node groups at 4 machines: the resize to 5 is refused
	// by the API server, so Helm's upgrade fails, and serve says so while helm-controller
	// retries (RetryOnFailure), never UPDATE_COMPLETE.
	const policyMessage = "a node group may have at most 4 machines"
	release := h.admitAtMostMachines(4, policyMessage, true)
	resize := readEvent(t, filepath.Join(events, "02-prod-a-resize-workers.yaml"))
	t1 := time.Now()
	ans = h.postEvent(filepath.Join(events, "02-prod-a-resize-workers.yaml"))
	if ans.Outcome != "committed" {
		t.Fatalf("resize: outcome %q (%s)", ans.Outcome, ans.Message)
	}
	h.waitApplied(ans.Revision, 3*time.Minute)
	h.waitFor("the resize to report Helm's failed upgrade", 4*time.Minute, func() (bool, string) {
		last = h.serveStatusOf(uuid)
		if last.Status == "UPDATE_COMPLETE" {
			t.Fatalf("UPDATE_COMPLETE while the API server refuses the resize: %s", last.StatusReason)
		}
		return last.Status == "UPDATE_IN_PROGRESS" && strings.Contains(last.StatusReason, "Helm upgrade failed for release ") &&
			strings.Contains(last.StatusReason, policyMessage), last.Status + ": " + last.StatusReason
	})
	record("upgrade-refused", resize, t1, ans.Revision, last)
	t.Logf("resize refused: %s", last.StatusReason)
	if md, ok := h.get(gvkMDV2, a.namespace, a.release+"-default-worker"); !ok {
		t.Fatal("no MachineDeployment default-worker")
	} else if n, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas"); n != 3 {
		t.Errorf("MachineDeployment default-worker wants %d machines, want the 3 it had before the refused resize", n)
	}
	release()

	// A finalizer nobody removes holds the Cluster: the delete stays in progress and names it.
	const hold = "e2e.magnum-gitops.io/hold"
	cl := h.object(gvkClusterV2, a.namespace, a.release)
	if err := h.c.Patch(h.ctx, cl, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"finalizers":["`+hold+`","cluster.cluster.x-k8s.io"]}}`))); err != nil {
		t.Fatal(err)
	}
	del := deepCopy(readEvent(t, filepath.Join(events, "08-prod-a-delete.yaml"))).(map[string]any)
	t2 := time.Now()
	ans = h.postEvent(writeEvent(t, dir, "delete.yaml", del))
	h.waitApplied(ans.Revision, 3*time.Minute)
	h.waitFor("the delete to report the finalizer that holds it", 4*time.Minute, func() (bool, string) {
		last = h.serveStatusOf(uuid)
		if last.Status == "DELETE_COMPLETE" {
			t.Fatalf("DELETE_COMPLETE while the Cluster is held by %s", hold)
		}
		return last.Status == "DELETE_IN_PROGRESS" && strings.Contains(last.StatusReason, hold), last.Status + ": " + last.StatusReason
	})
	record("delete-held", del, t2, ans.Revision, last)
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

	// A delete committed before Flux applied the create (Flux held back here): no
	// HelmRelease and no Cluster, which would come if Flux applied the create alone, so the
	// delete waits for its own commit and the Secrets stay in Git until it is applied.
	_, o, _ := twoClusters(t)
	ouuid := getPath(o.event, "cluster", "uuid").(string)
	h.suspendKustomization(true)
	if ans = h.postEvent(writeEvent(t, dir, "create-o.yaml", o.event)); ans.Outcome != "committed" {
		t.Fatalf("create %s: outcome %q (%s)", o.release, ans.Outcome, ans.Message)
	}
	delO := deepCopy(o.event).(map[string]any)
	delO["id"] = "evt-e2e-capi-delete-before-create"
	delO["operation"] = "delete_cluster"
	setPath(delO, "DELETE_IN_PROGRESS", "cluster", "status")
	delete(delO, "secrets")
	t3 := time.Now()
	if ans = h.postEvent(writeEvent(t, dir, "delete-o.yaml", delO)); ans.Outcome != "committed" {
		t.Fatalf("delete %s: outcome %q (%s)", o.release, ans.Outcome, ans.Message)
	}
	h.waitFor("the delete to wait for Flux to apply it", time.Minute, func() (bool, string) {
		last = h.serveStatusOf(ouuid)
		if last.Status == "DELETE_COMPLETE" {
			t.Fatalf("DELETE_COMPLETE before Flux applied the delete (or the create before it)")
		}
		if _, ok := h.get(gvkHelmRelease, o.namespace, o.release); ok {
			t.Fatalf("HelmRelease %s/%s exists: Flux applied the create while the Kustomization was suspended", o.namespace, o.release)
		}
		return last.Status == "DELETE_IN_PROGRESS" && strings.HasPrefix(last.StatusReason, "waiting for Flux to apply revision"),
			last.Status + ": " + last.StatusReason
	})
	h.recordState("delete-before-create-applied", withUpdatedAt(delO, t3), o.namespace, ans.Revision, last)
	if files := strings.Join(h.gitFiles(o.dir()), " "); !strings.Contains(files, "/secret-ca.") {
		t.Errorf("the delete is not applied, yet Git holds %s for %s: want its Secrets", files, o.release)
	}
	// Resumed before source-controller fetched the delete, kustomize-controller would apply
	// the create alone first, and the cluster would be created, then deleted.
	h.waitFetched(ans.Revision, time.Minute)
	h.suspendKustomization(false)
	h.waitApplied(ans.Revision, 3*time.Minute)
	h.waitFor("DELETE_COMPLETE once the delete is applied", 2*time.Minute, func() (bool, string) {
		last = h.serveStatusOf(ouuid)
		return last.Status == "DELETE_COMPLETE", last.Status + ": " + last.StatusReason
	})
}

// withUpdatedAt is an event as the Magnum view of its operation started at since, without
// its Secret material.
func withUpdatedAt(ev map[string]any, since time.Time) map[string]any {
	view := deepCopy(ev).(map[string]any)
	delete(view, "secrets")
	setPath(view, since.UTC().Format(time.RFC3339Nano), "cluster", "updated_at")
	return view
}

// admitAtMostMachines installs a ValidatingAdmissionPolicy, as a site might, that refuses
// a MachineDeployment of more than max machines with message, and waits until the API
// server enforces it (policies load asynchronously). With inDryRun false it admits a dry
// run (as an admission webhook that checks a quota it only holds for real requests may):
// a server-side diff then sees the change, and only the apply is refused. The returned
// function removes it.
func (h *harness) admitAtMostMachines(maxMachines int, message string, inDryRun bool) (remove func()) {
	t := h.t
	t.Helper()
	const name = "e2e-node-group-size"
	// A probe annotation is refused in any request: once a dry run with it is refused, the
	// policy's other rule is enforced too.
	const probe, probeMessage = "e2e.magnum-gitops.io/admission-probe", "the admission policy is enforced"
	size := fmt.Sprintf("!has(object.spec.replicas) || object.spec.replicas <= %d", maxMachines)
	if !inDryRun {
		size = "request.dryRun || " + size
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{"cluster.x-k8s.io"}, "apiVersions": []any{"*"},
				"operations": []any{"CREATE", "UPDATE"}, "resources": []any{"machinedeployments"}}}},
			"validations": []any{
				map[string]any{"expression": size, "message": message},
				map[string]any{"expression": fmt.Sprintf("!has(object.metadata.annotations) || !(%q in object.metadata.annotations)", probe),
					"message": probeMessage},
			},
		}}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"policyName": name, "validationActions": []any{"Deny"}},
	}}
	for _, o := range []*unstructured.Unstructured{policy, binding} {
		if err := h.c.Create(h.ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), name, err)
		}
	}
	// Enforced once a dry run with the probe is refused with its message.
	h.waitFor("the admission policy to be enforced", time.Minute, func() (bool, string) {
		for _, md := range h.list(gvkMDV2, "") {
			p := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"1"}}}`, probe))
			err := h.c.Patch(h.ctx, &md, p, client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), probeMessage), fmt.Sprintf("dry run: %v", err)
		}
		return false, "no MachineDeployment to try the policy on"
	})
	return func() {
		for _, o := range []*unstructured.Unstructured{binding, policy} {
			if err := h.c.Delete(h.ctx, o); err != nil {
				t.Errorf("deleting %s %s: %v", o.GetKind(), name, err)
			}
		}
	}
}

// recordState writes what the management cluster holds for one cluster, as the status
// reader reads it, with the Magnum view, the commit of the operation and what serve
// answered, in the format of fixtures/status: E2E_RECORD_DIR=dir keeps the real
// controllers' states for the status tests (fixtures/status/*-real-*.yaml are made this
// way, and fixtures/status/README.md says how).
func (h *harness) recordState(name string, view map[string]any, ns, revision string, s serveStatus) {
	h.writeState(name, view, ns, revision, s, slices.Clone(status.Kinds))
}

// recordStateV1beta2 is recordState with the Cluster API objects read at v1beta2, the
// version they are stored at and `kubectl get` shows (status.conditions in the new layout,
// the old ones under status.deprecated.v1beta1), as the status CLI may be given them.
func (h *harness) recordStateV1beta2(name string, view map[string]any, ns, revision string, s serveStatus) {
	gvks := slices.Clone(status.Kinds)
	for i, gvk := range gvks {
		if strings.HasSuffix(gvk.Group, "cluster.x-k8s.io") && gvk.Group != "infrastructure.cluster.x-k8s.io" {
			gvks[i].Version = "v1beta2"
		}
	}
	h.writeState(name, view, ns, revision, s, gvks)
}

// writeState writes one state, the objects read at the versions of gvks.
func (h *harness) writeState(name string, view map[string]any, ns, revision string, s serveStatus, gvks []schema.GroupVersionKind) {
	dir := os.Getenv("E2E_RECORD_DIR")
	if dir == "" {
		return
	}
	var objs []any
	if h.clusterAPI {
		// The infrastructure cluster as serve reads it: at the version the Cluster refers to it.
		gvks = append(gvks, gvkDevCluster)
	}
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
	// At full precision, as the view's updated_at: a state recorded just past a deadline
	// must read as past it.
	doc := map[string]any{"now": time.Now().UTC().Format(time.RFC3339Nano), "magnum": h.servedView(view), "objects": objs,
		"provenance": map[string]any{"recorded": h.t.Name() + ", state " + name},
		"expect":     map[string]any{"status": s.Status, "status_reason": s.StatusReason}}
	if revision != "" {
		doc["revision"] = revision
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// servedView is the Magnum view as serve judges a cluster in an operation (service.View):
// the event's status on the cluster, and on each node group the status of the operation
// for the groups it targets, the others at rest. The status tests read the view of a
// recorded state as given, so it must be the one serve answered from.
func (h *harness) servedView(view map[string]any) map[string]any {
	h.t.Helper()
	raw, err := json.Marshal(view)
	if err != nil {
		h.t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(raw)
	if err != nil {
		h.t.Fatalf("the recorded view is no event: %v", err)
	}
	v := service.View(reconciler.ClusterRecord{Event: ev})
	out := deepCopy(view).(map[string]any)
	setPath(out, string(v.Status), "cluster", "status")
	groups, _ := out["nodegroups"].([]any)
	for _, g := range groups {
		ng, _ := g.(map[string]any)
		for _, n := range v.NodeGroups {
			if n.Name == ng["name"] {
				ng["status"] = string(n.Status)
			}
		}
	}
	return out
}
