package service_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

const (
	ns      = "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"
	stackID = "prod-a-2b7xq4mzkd5h"
	uuid    = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"
	dir     = "clusters/magnum/" + ns + "/" + stackID
)

// cluster is the CAPI Cluster of prod-a, being deleted.
const cluster = `apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: ` + stackID + `
  namespace: ` + ns + `
  deletionTimestamp: '2026-11-22T12:00:00Z'
  finalizers: [cluster.cluster.x-k8s.io]
  labels: {capi.stackhpc.com/cluster: ` + stackID + `}
`

func kustomization(revision string) string {
	return `---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: magnum-clusters, namespace: flux-system}
status: {lastAppliedRevision: "main@sha1:` + revision + `"}
`
}

// TestDeleteSecondPhase: after delete_cluster the HelmRelease leaves Git and the Secrets
// stay while the CAPI Cluster exists; once it is gone the Secret files leave Git while the
// directory (its record) stays, and only after Flux has applied that does the directory
// go and the cluster get forgotten. A restart in between loses nothing: the new process
// reads the unfinished delete back from Git.
func TestDeleteSecondPhase(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "one process", true: "restarted in between"}[restart], func(t *testing.T) {
			t.Parallel()
			deleteSecondPhase(t, restart)
		})
	}
}

func deleteSecondPhase(t *testing.T, restart bool) {
	h := start(t, nil)
	write := func(s string) {
		if err := os.WriteFile(h.objects, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cluster)
	for _, f := range []string{"01-prod-a-create.yaml", "08-prod-a-delete.yaml"} {
		if code, ans := h.post(fixture(t, f)); code != http.StatusOK {
			t.Fatalf("%s: %d %v", f, code, ans)
		}
	}
	files := func() string { return h.git.Git(h.git.Dir(h.repo), "ls-tree", "-r", "--name-only", "main") }
	time.Sleep(500 * time.Millisecond) // ten delete sweeps
	if f := files(); strings.Contains(f, dir+"/helmrelease.yaml") || !strings.Contains(f, dir+"/secret-ca.sops.yaml") {
		t.Fatalf("while the Cluster exists: want the HelmRelease gone and the Secrets kept:\n%s", f)
	}
	write("") // CAPI finished: the Cluster is gone
	deadline := time.Now().Add(20 * time.Second)
	for strings.Contains(files(), dir+"/secret-") {
		if time.Now().After(deadline) {
			t.Fatalf("the deleted cluster's Secret files are still in Git:\n%s", files())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if f := files(); !strings.Contains(f, dir+"/magnum-cluster.yaml") || !strings.Contains(f, dir+"/kustomization.yaml") {
		t.Errorf("the unfinished delete left Git before Flux applied the removal of the Secrets:\n%s", f)
	}
	if k := h.git.Git(h.git.Dir(h.repo), "show", "main:"+dir+"/kustomization.yaml"); strings.Contains(k, "resources") {
		t.Errorf("kustomization.yaml still lists resources:\n%s", k)
	}
	msg := h.git.Git(h.git.Dir(h.repo), "log", "-1", "--format=%B", "main")
	for _, want := range []string{"remove the Secrets of deleted cluster prod-a", "Magnum-Operation: delete_cluster_secrets",
		"Magnum-Secrets: " + stackID + "-ca, " + stackID + "-cloud-credentials, "} {
		if !strings.Contains(msg, want) {
			t.Errorf("second-phase commit message lacks %q:\n%s", want, msg)
		}
	}
	removal := strings.TrimSpace(h.git.Git(h.git.Dir(h.repo), "rev-parse", "main"))
	if restart {
		h.restart(nil)
	}
	// Until Flux has applied the removal, the service still knows the cluster, and its
	// directory stays.
	time.Sleep(300 * time.Millisecond)
	if code, _ := h.get("/v1/clusters/" + uuid); code != http.StatusOK {
		t.Errorf("forgotten before Flux applied the removal: %d", code)
	}
	if head := strings.TrimSpace(h.git.Git(h.git.Dir(h.repo), "rev-parse", "main")); head != removal {
		t.Errorf("committed before Flux applied the removal:\n%s", h.git.Git(h.git.Dir(h.repo), "log", "-2", "--stat", "main"))
	}
	write(kustomization(removal))
	deadline = time.Now().Add(20 * time.Second)
	for {
		code, _ := h.get("/v1/clusters/" + uuid)
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster was not forgotten after Flux applied the removal")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if f := files(); strings.Contains(f, dir+"/") {
		t.Errorf("the directory stays after the delete completed:\n%s", f)
	}
	if msg := h.git.Git(h.git.Dir(h.repo), "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "Magnum-Operation: delete_cluster_complete") {
		t.Errorf("last commit:\n%s", msg)
	}
	// A Magnum that missed the moment still learns that the delete completed, as the answer
	// about the delete event (the driver shim takes a terminal status only from that).
	if code, st := h.get("/v1/clusters/" + uuid + "/status"); code != http.StatusOK || st["status"] != "DELETE_COMPLETE" ||
		st["event_id"] != "evt-08-delete-cluster" {
		t.Errorf("status after the delete completed: %d %v, want DELETE_COMPLETE of event evt-08-delete-cluster", code, st)
	}
	h.git.Fsck(h.repo)
}

// TestClusterAndStatusAPI: GET /v1/clusters/{uuid} says which commit carries the last
// event and whether Flux applied it; …/status judges from the objects.
func TestClusterAndStatusAPI(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	code, ans := h.post(fixture(t, "01-prod-a-create.yaml"))
	if code != 200 {
		t.Fatal(code, ans)
	}
	rev := ans["revision"].(string)
	code, c := h.get("/v1/clusters/" + uuid)
	if code != 200 || c["revision"] != rev || c["event_id"] != "evt-01-create-cluster" || c["applied"] != nil {
		t.Errorf("cluster: %d %v", code, c)
	}
	if err := os.WriteFile(h.objects, []byte(kustomization(rev)), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // the status snapshot lives 2 s
	if code, c = h.get("/v1/clusters/" + uuid); code != 200 || c["applied"] != true {
		t.Errorf("after Flux applied: %d %v", code, c)
	}
	code, st := h.get("/v1/clusters/" + uuid + "/status")
	if code != 200 || st["status"] != "CREATE_IN_PROGRESS" || st["event_id"] != "evt-01-create-cluster" ||
		!strings.Contains(st["status_reason"].(string), "waiting for Flux to create HelmRelease "+stackID) {
		t.Errorf("status: %d %v", code, st)
	}
	if code, _ := h.get("/v1/clusters/00000000-0000-0000-0000-000000000000/status"); code != 404 {
		t.Errorf("unknown cluster: %d, want 404", code)
	}
}
