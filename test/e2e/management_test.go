//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"
)

// TestMagnumManagementCluster is the management cluster of test/magnum's stack when it
// runs against the real Cluster API controllers (hack/e2e-magnum.sh with
// E2E_MAGNUM_CAPI=1): the API server, real Flux and CAPI v1.14.2 with the in-memory
// backend, the chart server, reading the stack's own Git remote and decrypting with the
// stack's age identity. It writes what serve needs into E2E_MANAGEMENT_DIR/ready.json
// (kubeconfig, and a serve configuration whose magnum, flux, management_cluster and serve
// sections the stack takes), plays the addon provider (playAddonProvider) and runs until
// SIGTERM. Without E2E_MANAGEMENT_DIR it skips: it is no test of its own.
func TestMagnumManagementCluster(t *testing.T) {
	dir := os.Getenv("E2E_MANAGEMENT_DIR")
	if dir == "" {
		t.Skip("E2E_MANAGEMENT_DIR is not set: test/magnum's stack runs this as its management cluster")
	}
	need := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			t.Fatalf("%s is not set (test/magnum/stack.py sets it with E2E_MANAGEMENT_DIR)", name)
		}
		return v
	}
	password, err := os.ReadFile(need("E2E_MANAGEMENT_GIT_PASSWORD_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	id := ageIdentityFile(t, need("E2E_MANAGEMENT_AGE_KEY_FILE"))
	// Signals first: the stack may stop this process while the harness still starts.
	ctx, stop := signal.NotifyContext(t.Context(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	b := findBinaries(t)
	h := newHarness(t, b, true, withClusterAPI(3*time.Second), withoutServe(), withHostNetwork(), withAgeIdentity(id),
		withExternalGit(need("E2E_MANAGEMENT_GIT_URL"), strings.TrimSpace(string(password)), need("E2E_MANAGEMENT_GIT_DIR")))
	ready, err := json.Marshal(map[string]string{"kubeconfig": h.kubeconfig, "config": h.config})
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".ready.json")
	if err := os.WriteFile(tmp, ready, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "ready.json")); err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			t.Log("stopping: the stack is done")
			return
		case <-tick.C:
			for _, cl := range h.list(gvkClusterV2, "") {
				h.playAddonProvider(cl.GetNamespace(), cl.GetName())
			}
		}
	}
}

// ageIdentityFile reads the identity of an age-keygen file.
func ageIdentityFile(t *testing.T, path string) *age.X25519Identity {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids, err := age.ParseIdentities(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	id, ok := ids[0].(*age.X25519Identity)
	if !ok || len(ids) != 1 {
		t.Fatalf("%s: want one X25519 identity", path)
	}
	return id
}
