package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// driverInstalled stores, in the API server's Helm storage, the release magnum-capi-helm
// installs for ev.
func driverInstalled(t *testing.T, ev *v1alpha1.ClusterEvent) {
	t.Helper()
	storeRelease(t, testenv.DriverRelease(t, ev))
}

// storeRelease stores rel in the API server's Helm storage, as helm install does.
func storeRelease(t testing.TB, rel *release.Release) {
	t.Helper()
	if err := env.EnsureNamespace(context.Background(), rel.Namespace); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.Init(driver.NewSecrets(cs.CoreV1().Secrets(rel.Namespace))).Create(rel); err != nil {
		t.Fatal(err)
	}
}

// installed installs each event's release as the driver does and returns migrate's input:
// a file of the events and a kubeconfig for the API server.
func installed(t *testing.T, events ...*v1alpha1.ClusterEvent) (clusters, kubeconfig string) {
	t.Helper()
	var stream []byte
	for _, ev := range events {
		driverInstalled(t, ev)
		doc, err := yaml.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		stream = append(append(stream, "---\n"...), doc...)
	}
	write := fileWriter(t)
	kc, err := env.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	return write("clusters.yaml", string(stream)), write("kubeconfig", string(kc))
}

// TestMigrate: two clusters the driver installed — one whose adoption changes nothing, one
// whose availability_zone label, opted in, would replace its workers. --dry-run reports
// both and writes nothing; a run commits the first only; a second run commits nothing
// more; --allow-rollout commits the second.
func TestMigrate(t *testing.T) {
	testenv.Require(t, env)
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	a, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := v1alpha1.DecodeEvent(data)
	b.Cluster.UUID, b.Cluster.Name, b.Cluster.StackID = "5d1e3c7a-9b2f-4e6d-8a1c-3f5b7d9e2a41", "prod-b", "prod-b-7k2m9x4q8w1z"
	b.Cluster.Labels = v1alpha1.Labels{"availability_zone": "az-1", "adopted_features": "placement"}
	clusters, kubeconfig := installed(t, a, b)
	cfg, remote := committingConfig(t)
	commits := func() []string {
		out, err := exec.Command("git", "-C", remote, "log", "--format=%s", "main").CombinedOutput()
		if err != nil {
			return nil // no branch yet
		}
		return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), " ", "_"))
	}
	args := []string{"migrate", "-f", clusters, "--config", cfg, "--kubeconfig", kubeconfig}

	out, _, err := run(t, "", append(args, "--dry-run", "-o", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var reports []struct {
		ClusterName string   `json:"cluster_name"`
		Outcome     string   `json:"outcome"`
		Changes     []string `json:"changes"`
		Rollout     []string `json:"rollout"`
	}
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(reports) != 2 || reports[0].Outcome != "identical" || reports[1].Outcome != "differs" ||
		len(reports[1].Rollout) != 1 || !strings.HasPrefix(reports[1].Rollout[0], "MachineDeployment/prod-b-7k2m9x4q8w1z-default-worker") {
		t.Fatalf("reports = %+v", reports)
	}
	if c := commits(); len(c) != 0 {
		t.Fatalf("--dry-run committed %v", c)
	}

	out, errOut, err := run(t, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "prod-b") || !strings.Contains(out, "replaces machines: MachineDeployment/prod-b-7k2m9x4q8w1z-default-worker") ||
		!strings.Contains(errOut, "skipped: adopting it replaces machines") {
		t.Errorf("report or log lacks the rollout:\n%s\n%s", out, errOut)
	}
	if c := commits(); len(c) != 1 || !strings.HasPrefix(c[0], "magnum:_update_cluster_prod-a") {
		t.Fatalf("commits %v, want prod-a's adoption only", c)
	}
	if _, _, err := run(t, "", args...); err != nil {
		t.Fatal(err)
	}
	if c := commits(); len(c) != 1 {
		t.Errorf("a second run committed again: %v", c)
	}
	if _, _, err := run(t, "", append(args, "--allow-rollout", "prod-b")...); err != nil {
		t.Fatal(err)
	}
	if c := commits(); len(c) != 2 || !strings.HasPrefix(c[0], "magnum:_update_cluster_prod-b") {
		t.Errorf("--allow-rollout prod-b: commits %v", c)
	}
}

// TestMigrateBatches: adoption commits one commit per cluster, --batch-size of them to a
// push, at most --limit.
func TestMigrateBatches(t *testing.T) {
	testenv.Require(t, env)
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var events []*v1alpha1.ClusterEvent
	for i := range 5 {
		ev, err := v1alpha1.DecodeEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		ev.Cluster.UUID = fmt.Sprintf("7c4b2e1a-3d5f-4a6b-9c8d-0e1f2a3b4c%02d", i)
		ev.Cluster.Name, ev.Cluster.StackID = fmt.Sprintf("batch-%d", i), fmt.Sprintf("batch-%d-x7k2m9q4w1z", i)
		events = append(events, ev)
	}
	clusters, kubeconfig := installed(t, events...)
	for _, tc := range []struct {
		name            string
		flags           []string
		commits, pushes int
	}{
		{name: "two to a push", flags: []string{"--batch-size", "2"}, commits: 5, pushes: 3},
		{name: "all in one push", flags: []string{"--batch-size", "10"}, commits: 5, pushes: 1},
		{name: "a limit", flags: []string{"--batch-size", "2", "--limit", "3"}, commits: 3, pushes: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, remote := committingConfig(t)
			if out, err := exec.Command("git", "-C", remote, "config", "core.logAllRefUpdates", "always").CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			if _, _, err := run(t, "", append([]string{"migrate", "-f", clusters, "--config", cfg, "--kubeconfig", kubeconfig}, tc.flags...)...); err != nil {
				t.Fatal(err)
			}
			count := func(args ...string) int {
				out, err := exec.Command("git", append([]string{"-C", remote}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v %s", args, err, out)
				}
				return len(strings.Fields(string(out)))
			}
			if got := count("rev-list", "main"); got != tc.commits {
				t.Errorf("%d commits, want %d", got, tc.commits)
			}
			if got := count("reflog", "show", "--format=%H", "refs/heads/main"); got != tc.pushes {
				t.Errorf("%d pushes, want %d", got, tc.pushes)
			}
		})
	}
}

// TestMigrateBadInput: a document that is not a ClusterEvent refuses the run by its place in
// the stream, exit status 2, before the management cluster or Git is reached.
func TestMigrateBadInput(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	write := fileWriter(t)
	clusters := write("clusters.yaml", "---\n"+string(data)+"---\napiVersion: magnum-gitops.io/v1alpha1\nkind: ClusterEvent\noperation: explode\n")
	cfg := write("config.yaml", "git: {url: file:///nonexistent.git}\n")
	_, _, err = run(t, "", "migrate", "-f", clusters, "--config", cfg, "--kubeconfig", write("kubeconfig", "{}"))
	if err == nil || !strings.Contains(err.Error(), "document 2") || !strings.Contains(err.Error(), "operation") || exitCode(io.Discard, err) != 2 {
		t.Errorf("err = %v, want a refusal of document 2 naming operation, exit 2", err)
	}
}
