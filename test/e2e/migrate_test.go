//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// migrant is one cluster of the migrated fleet.
type migrant struct {
	want     clusterWant
	uuid     string
	event    map[string]any // as Magnum holds it: with the labels the driver ignored
	install  string         // the event file the driver's install is rendered from
	machines []string       // name=UID of each Machine before the migration
	sets     []string       // MachineSet names before the migration
}

// TestE2EClusterAPIMigration moves a fleet from magnum-capi-helm to magnum-gitops with
// `magnum-gitops migrate`, on the real Cluster API controllers: E2E_MIGRATE_CLUSTERS
// (default 20) clusters in two projects, installed as the driver installs them (Helm SDK,
// the driver's values), half on chart 0.24.1 and half on 0.27.0, some carrying the Heat-era
// availability_zone label the driver ignores, some colliding volume types. migrate
// --dry-run finds every one identical to its release; migrate then commits them, a batch a
// push; helm-controller upgrades every release in place (v2); not one Machine is replaced
// (Machine UIDs and MachineSet names as before); a second migrate commits nothing; and a
// resize through serve works on each cluster.
func TestE2EClusterAPIMigration(t *testing.T) {
	n := envInt(t, "E2E_MIGRATE_CLUSTERS", 20)
	b := findBinaries(t)
	h := newHarness(t, b, true, withClusterAPI(3*time.Second))
	base := withMagnumCAs(t, readEvent(t, filepath.Join(testenv.RepoRoot(), "fixtures", "events", "01-prod-a-create.yaml")))
	projects := []string{getPath(base, "cluster", "project_id").(string), "5d1e7a3c9b2f4e6a8c0d1b3f5a7e9c2d"}
	dir := t.TempDir()
	fleet := make([]*migrant, n)
	for i := range fleet {
		project, chart := projects[i%2], []string{"0.24.1", "0.27.0"}[i/2%2]
		m := &migrant{uuid: fmt.Sprintf("7c0e4b1a-2d3f-4a5b-8c6d-%012d", i)}
		m.want = clusterWant{namespace: "magnum-" + project, release: fmt.Sprintf("mig-%02d-2b7xq4mzkd5h", i),
			chartVersion: chart, helmRevision: 1}
		ev := deepCopy(base).(map[string]any)
		ev["id"] = fmt.Sprintf("evt-migrate-%d-create", i)
		setPath(ev, m.uuid, "cluster", "uuid")
		setPath(ev, fmt.Sprintf("mig-%02d", i), "cluster", "name")
		setPath(ev, m.want.release, "cluster", "stack_id")
		setPath(ev, project, "cluster", "project_id")
		setPath(ev, project, "context", "project_id")
		setPath(ev, 1, "cluster", "master_count")
		setPath(ev, 1, "cluster", "node_count")
		setPath(ev, "CREATE_COMPLETE", "cluster", "status")
		setPath(ev, chart, "cluster_template", "labels", "capi_helm_chart_version")
		for _, g := range ev["nodegroups"].([]any) {
			ng := g.(map[string]any)
			ng["uuid"] = strings.Replace(ng["uuid"].(string), "a1b2c3d4", fmt.Sprintf("%08d", i), 1)
			ng["node_count"] = 1
		}
		if i%4 == 1 {
			// Two types whose StorageClass names collide with each other and the default's.
			setPath(ev, []any{"SSD", "__DEFAULT__", "ssd"}, "resolved", "volume_types")
		}
		m.install = writeEvent(t, dir, m.want.release+"-install.yaml", ev)
		m.event = deepCopy(ev).(map[string]any)
		if i%3 == 0 {
			// Magnum holds the label; the driver never read it for node groups.
			setPath(m.event, "az-1", "cluster", "labels", "availability_zone")
		}
		fleet[i] = m
	}

	for _, m := range fleet {
		h.driverInstall(m.install, m.want)
	}
	h.waitFor(fmt.Sprintf("the driver's %d clusters to settle under Cluster API", n), 15*time.Minute,
		fleetSettled(h, fleet, 1))
	for _, m := range fleet {
		m.machines, m.sets = h.machineIdentity(m.want.namespace, m.want.release)
	}

	var stream bytes.Buffer
	for _, m := range fleet {
		data, err := json.Marshal(m.event)
		if err != nil {
			t.Fatal(err)
		}
		stream.WriteString("---\n")
		stream.Write(data)
		stream.WriteString("\n")
	}
	clusters := filepath.Join(dir, "clusters.yaml")
	if err := os.WriteFile(clusters, stream.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	reports := h.migrate(clusters, "--dry-run")
	if len(reports) != n {
		t.Fatalf("migrate --dry-run reported %d clusters, want %d", len(reports), n)
	}
	for i, r := range reports {
		m := fleet[i]
		if r.ClusterUUID != m.uuid || r.Outcome != "identical" || len(r.Rollout) > 0 {
			t.Errorf("migrate --dry-run: %s: %s %v rollout %v (%s), want identical", r.ClusterUUID, r.Outcome, r.Changes, r.Rollout, r.Reason)
		}
		heldBack := strings.Contains(strings.Join(r.Warnings, "\n"), "cluster.labels.availability_zone: ignored")
		if _, az := getPath(m.event, "cluster", "labels").(map[string]any)["availability_zone"]; heldBack != az {
			t.Errorf("migrate --dry-run: %s: availability_zone held back %v, want %v (warnings %q)", m.uuid, heldBack, az, r.Warnings)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	before := h.headRevision()

	t0 := time.Now()
	h.migrate(clusters, "--batch-size", "10")
	after := h.headRevision()
	if got := strings.TrimSpace(h.git(h.gitDir, "rev-list", "--count", before+".."+after)); got != fmt.Sprint(n) {
		t.Fatalf("migrate made %s commits, want one per cluster (%d)", got, n)
	}
	h.migrate(clusters)
	if again := h.headRevision(); again != after {
		t.Fatalf("a second migrate committed again: main moved from %s to %s", after, again)
	}
	h.waitApplied(after, 5*time.Minute)
	h.waitFor(fmt.Sprintf("helm-controller to upgrade the driver's %d releases to v2", n), 10*time.Minute, func() (bool, string) {
		for _, m := range fleet {
			w := m.want
			w.helmRevision = 2
			if ok, state := h.releaseReady(w)(); !ok {
				return false, w.release + ": " + state
			}
		}
		return true, ""
	})
	t.Logf("%d releases upgraded by helm-controller %s after migrate began", n, time.Since(t0).Round(time.Second))
	for _, m := range fleet {
		// The chart helm-controller upgraded with, as its history records it.
		hr, _ := h.get(gvkHelmRelease, m.want.namespace, m.want.release)
		hist, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
		if len(hist) == 0 || hist[0].(map[string]any)["chartVersion"] != m.want.chartVersion {
			t.Errorf("%s: HelmRelease history %v, want the driver's chart %s", m.want.release, hist, m.want.chartVersion)
		}
	}
	// Let a rollout that the upgrades would have started show itself.
	time.Sleep(10 * time.Second)
	h.waitFor("the fleet to settle again", 5*time.Minute, fleetSettled(h, fleet, 1))
	for _, m := range fleet {
		machines, sets := h.machineIdentity(m.want.namespace, m.want.release)
		if !slices.Equal(m.machines, machines) || !slices.Equal(m.sets, sets) {
			t.Errorf("%s: machines replaced by the migration:\nMachines before %v\n         after  %v\nMachineSets before %v\n            after  %v",
				m.want.release, m.machines, machines, m.sets, sets)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d clusters migrated, no Machine replaced", n)

	// One resize on each, through serve: the adopted clusters are magnum-gitops's now.
	t1 := time.Now()
	var wg sync.WaitGroup
	for i, m := range fleet {
		ev := deepCopy(m.event).(map[string]any)
		ev["id"] = fmt.Sprintf("evt-migrate-%d-resize", i)
		ev["operation"], ev["nodegroup"] = "resize_cluster", "default-worker"
		delete(ev, "secrets")
		setPath(ev, 2, "cluster", "node_count")
		setPath(ev, "UPDATE_IN_PROGRESS", "cluster", "status")
		for _, g := range ev["nodegroups"].([]any) {
			if ng := g.(map[string]any); ng["role"] == "worker" {
				ng["node_count"] = 2
			}
		}
		file := writeEvent(t, dir, m.want.release+"-resize.yaml", ev)
		wg.Go(func() {
			if ans := h.postEvent(file); ans.Outcome != "committed" {
				t.Errorf("resize %s: %q %s", m.want.release, ans.Outcome, ans.Message)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	done := map[string]bool{}
	h.waitFor(fmt.Sprintf("%d resizes UPDATE_COMPLETE", n), 10*time.Minute, func() (bool, string) {
		settled := fleetSettled(h, fleet, 2)
		for _, m := range fleet {
			if done[m.uuid] {
				continue
			}
			h.playAddonProvider(m.want.namespace, m.want.release)
			if s := h.serveStatusOf(m.uuid); s.Status != "UPDATE_COMPLETE" {
				return false, fmt.Sprintf("%s: %s %s", m.want.release, s.Status, s.StatusReason)
			}
			done[m.uuid] = true
		}
		return settled()
	})
	t.Logf("%d resizes UPDATE_COMPLETE %s after their POSTs", n, time.Since(t1).Round(time.Second))
	for _, m := range fleet {
		machines, _ := h.machineIdentity(m.want.namespace, m.want.release)
		if kept := intersect(m.machines, machines); len(kept) != len(m.machines) || len(machines) != len(m.machines)+1 {
			t.Errorf("%s: after the resize Machines %v, want the %d before %v and one more", m.want.release, machines, len(m.machines), m.machines)
		}
		w := m.want
		w.helmRevision = 3
		if ok, state := h.releaseReady(w)(); !ok {
			t.Errorf("%s: after the resize: %s, want Helm release v3", w.release, state)
		}
	}
}

// fleetSettled reports when every cluster of the fleet has its one control-plane machine
// and its default-worker MachineDeployment at workers, all ready and up to date.
func fleetSettled(h *harness, fleet []*migrant, workers int64) func() (bool, string) {
	return func() (bool, string) {
		pending, first := 0, ""
		for _, m := range fleet {
			if ok, state := h.capiSettled(m.want.namespace, m.want.release, 1, map[string]int64{"default-worker": workers})(); !ok {
				if pending++; first == "" {
					first = m.want.release + ": " + state
				}
			}
		}
		return pending == 0, fmt.Sprintf("%d of %d not settled; %s", pending, len(fleet), first)
	}
}

// machineIdentity is what a replacement would change: each Machine of a cluster as
// name=UID, and the names of its MachineSets, sorted.
func (h *harness) machineIdentity(ns, release string) (machines, sets []string) {
	for _, m := range h.list(gvkMachineV2, ns) {
		if m.GetLabels()["cluster.x-k8s.io/cluster-name"] == release {
			machines = append(machines, m.GetName()+"="+string(m.GetUID()))
		}
	}
	for _, ms := range h.list(gvkMachineSet2, ns) {
		if ms.GetLabels()["cluster.x-k8s.io/cluster-name"] == release {
			sets = append(sets, ms.GetName())
		}
	}
	slices.Sort(machines)
	slices.Sort(sets)
	return machines, sets
}

// migrateReport is the part of `migrate -o json`'s report the tests read.
type migrateReport struct {
	ClusterUUID string   `json:"cluster_uuid"`
	Outcome     string   `json:"outcome"`
	Reason      string   `json:"reason"`
	Changes     []string `json:"changes"`
	Rollout     []string `json:"rollout"`
	Warnings    []string `json:"warnings"`
}

// migrate runs `magnum-gitops migrate -f clusters` against the management cluster with
// the harness's configuration and returns its report; it fails the test unless it exits 0.
func (h *harness) migrate(clusters string, args ...string) []migrateReport {
	t := h.t
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(h.ctx, h.bin.magnum, append([]string{"migrate", "-f", clusters, "--config", h.config,
		"--kubeconfig", h.kubeconfig, "-o", "json"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("magnum-gitops migrate %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var reports []migrateReport
	if err := json.Unmarshal(stdout.Bytes(), &reports); err != nil {
		t.Fatalf("migrate -o json: %v\n%s", err, stdout.String())
	}
	return reports
}
