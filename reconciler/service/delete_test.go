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
// stay while the CAPI Cluster exists; once it is gone the directory leaves Git, and the
// cluster is forgotten only after Flux has applied that commit.
func TestDeleteSecondPhase(t *testing.T) {
	t.Parallel()
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
	for strings.Contains(files(), dir+"/") {
		if time.Now().After(deadline) {
			t.Fatalf("the deleted cluster's directory is still in Git:\n%s", files())
		}
		time.Sleep(50 * time.Millisecond)
	}
	msg := h.git.Git(h.git.Dir(h.repo), "log", "-1", "--format=%B", "main")
	if !strings.Contains(msg, "remove the Secrets of deleted cluster prod-a") || !strings.Contains(msg, "Magnum-Operation: delete_cluster_secrets") {
		t.Errorf("second-phase commit message:\n%s", msg)
	}
	// Until Flux has applied the removal, the service still knows the cluster.
	time.Sleep(200 * time.Millisecond)
	if code, _ := h.get("/v1/clusters/" + uuid); code != http.StatusOK {
		t.Errorf("forgotten before Flux applied the removal: %d", code)
	}
	head := strings.TrimSpace(h.git.Git(h.git.Dir(h.repo), "rev-parse", "main"))
	write(kustomization(head))
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
	// A Magnum that missed the moment still learns that the delete completed.
	if code, st := h.get("/v1/clusters/" + uuid + "/status"); code != http.StatusOK || st["status"] != "DELETE_COMPLETE" {
		t.Errorf("status after the delete completed: %d %v, want DELETE_COMPLETE", code, st)
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
