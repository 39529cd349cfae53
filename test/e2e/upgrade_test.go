//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestE2EClusterAPIUpgradeChain: an upgrade_cluster two Kubernetes minors ahead
// (v1.33.7 → v1.35.0) on the real Cluster API controllers is a chain: serve commits the
// step to v1.34.3 at once and the step to v1.35.0 only once Cluster API has rolled out
// v1.34.3 (the control plane, then the workers); the KubeadmControlPlane goes through
// every minor, never skipping one; serve reports UPDATE_IN_PROGRESS with the chain's
// progress in status_reason until every machine runs v1.35.0, and only then
// UPDATE_COMPLETE; no node group completes before Helm applied the last step.
func TestE2EClusterAPIUpgradeChain(t *testing.T) {
	b := findBinaries(t)
	h := newHarness(t, b, true, withClusterAPI(3*time.Second))
	a, _, _ := twoClusters(t)
	uuid := getPath(a.event, "cluster", "uuid").(string)
	dir := t.TempDir()

	create := withMagnumCAs(t, a.event)
	setPath(create, 1, "cluster", "master_count")
	setPath(create, 1, "cluster", "node_count")
	for _, g := range create["nodegroups"].([]any) {
		g.(map[string]any)["node_count"] = 1
	}
	t0 := time.Now()
	h.commitEvent(writeEvent(t, dir, "create.yaml", create))
	h.waitCAPIAndStatus(uuid, a.namespace, a.release, "CREATE_COMPLETE", h.capiSettled(a.namespace, a.release, 1, map[string]int64{"default-worker": 1}), t0, nil)

	up := deepCopy(create).(map[string]any)
	delete(up, "secrets")
	up["id"] = "evt-e2e-capi-upgrade-chain"
	up["operation"] = "upgrade_cluster"
	setPath(up, "UPDATE_IN_PROGRESS", "cluster", "status")
	setPath(up, "ubuntu-2404-kube-v1.35.0", "cluster_template", "image_id")
	setPath(up, map[string]any{"id": "5c4d3e2f-0a1b-4c2d-8e3f-000000013500", "kube_version": "v1.35.0", "os_distro": "ubuntu"}, "resolved", "image")
	setPath(up, []any{
		map[string]any{"id": "5c4d3e2f-0a1b-4c2d-8e3f-000000013407", "kube_version": "v1.34.3", "os_distro": "ubuntu"},
	}, "resolved", "upgrade_images")
	view := deepCopy(up).(map[string]any)
	t1 := time.Now()
	setPath(view, t1.UTC().Format(time.RFC3339Nano), "cluster", "updated_at")
	first := h.commitEvent(writeEvent(t, dir, "upgrade.yaml", up))
	if msg := h.git(h.gitDir, "log", "-1", "--format=%B", first); !strings.Contains(msg, "Kubernetes: 1.33.7 → 1.34.3") ||
		!strings.Contains(msg, "Magnum-Upgrade-Target: 1.35.0") {
		t.Fatalf("the upgrade's commit is not the chain's first step:\n%s", msg)
	}

	// The control plane's version as it goes, and when v1.34.3 was rolled out everywhere.
	var versions []string
	var rolledOut134 time.Time
	var early []string // node groups serve called complete too early
	at134 := h.capiRolledTo(a.namespace, a.release, "v1.34.3", 1, map[string]int64{"default-worker": 1})
	rolled := h.capiRolledTo(a.namespace, a.release, "v1.35.0", 1, map[string]int64{"default-worker": 1})
	done := func() (bool, string) {
		if kcp, ok := h.get(gvkKCPV2, a.namespace, a.release+"-control-plane"); ok {
			if v, _, _ := unstructured.NestedString(kcp.Object, "spec", "version"); len(versions) == 0 || versions[len(versions)-1] != v {
				versions = append(versions, v)
			}
		}
		if ok, _ := at134(); ok && rolledOut134.IsZero() {
			rolledOut134 = time.Now()
		}
		ok, state := rolled()
		// Until Helm has applied the last step, no group's upgrade is done (after it, each
		// group completes with its own objects, the control plane first).
		if len(versions) > 0 && versions[len(versions)-1] != "v1.35.0" {
			for _, ng := range h.serveStatusOf(uuid).NodeGroups {
				if ng.Status == "UPDATE_COMPLETE" && !slices.Contains(early, ng.Name) {
					early = append(early, ng.Name)
					t.Errorf("node group %s UPDATE_COMPLETE while the control plane wants %s", ng.Name, versions[len(versions)-1])
				}
			}
		}
		return ok, state
	}
	record := func(state string, s serveStatus) {
		// The commit serve's answer waits for: the chain's step commit, once there is one.
		h.recordState("upgrade-chain-"+state, view, a.namespace, h.headRevision(), s)
	}
	_, magnum, reasons := h.waitCAPIAndStatus(uuid, a.namespace, a.release, "UPDATE_COMPLETE", done, t1, record)
	t.Logf("upgrade chain v1.33.7 → v1.35.0: UPDATE_COMPLETE after %s; control plane versions %v; on the way: %q",
		magnum.Round(time.Second), versions, reasons)

	if !slices.Equal(versions, []string{"v1.34.3", "v1.35.0"}) && !slices.Equal(versions, []string{"v1.33.7", "v1.34.3", "v1.35.0"}) {
		t.Errorf("KubeadmControlPlane versions %v, want every minor in order, v1.34.3 before v1.35.0", versions)
	}
	stepped := false
	for _, r := range reasons {
		stepped = stepped || strings.Contains(r, "upgrading to Kubernetes 1.35.0 one minor version at a time")
	}
	if !stepped {
		t.Errorf("serve never gave the chain's progress in status_reason: %q", reasons)
	}
	// The second step's commit: made by serve, after Cluster API had rolled out v1.34.3.
	log := h.git(h.gitDir, "log", "--format=%H %ct %s", first+"..main")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "to Kubernetes 1.35.0") {
		t.Fatalf("after the upgrade's commit, want one step commit to 1.35.0:\n%s", log)
	}
	var hash string
	var at int64
	if _, err := fmt.Sscanf(lines[0], "%s %d", &hash, &at); err != nil {
		t.Fatal(err)
	}
	if rolledOut134.IsZero() || time.Unix(at, 0).Before(rolledOut134.Truncate(time.Second)) {
		t.Errorf("the step to 1.35.0 was committed at %s, before Cluster API had rolled out v1.34.3 (seen at %s)",
			time.Unix(at, 0).Format(time.RFC3339), rolledOut134.Format(time.RFC3339))
	}
	if msg := h.git(h.gitDir, "log", "-1", "--format=%B", hash); !strings.Contains(msg, "Magnum-Operation: upgrade_cluster_step") ||
		strings.Contains(msg, "Magnum-Event-ID") {
		t.Errorf("the step commit's message:\n%s", msg)
	}
	s := h.serveStatusOf(uuid)
	for _, ng := range s.NodeGroups {
		if ng.Status != "UPDATE_COMPLETE" {
			t.Errorf("node group %s: %s after the chain, want UPDATE_COMPLETE", ng.Name, ng.Status)
		}
	}
}
