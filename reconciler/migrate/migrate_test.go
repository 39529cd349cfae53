package migrate_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/reconciler/migrate"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

// clusterEvent is the fixture cluster (chart 0.27.0, 3 masters, 3 workers) as changed.
func clusterEvent(t testing.TB, change func(*v1alpha1.ClusterEvent)) *v1alpha1.ClusterEvent {
	t.Helper()
	data, err := fixtures.Events.ReadFile("events/01-prod-a-create.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(ev)
	}
	return ev
}

func render(t *testing.T, ev *v1alpha1.ClusterEvent, site ...helmv2.PostRenderer) *generator.Result {
	t.Helper()
	cfg := generator.DefaultConfig()
	cfg.Flux.PostRenderers = site
	res, err := generator.Render(ev, generator.MustSite(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func adopted(labels map[string]string, change func(*v1alpha1.ClusterEvent)) func(*v1alpha1.ClusterEvent) {
	return func(ev *v1alpha1.ClusterEvent) {
		ev.Adopted = &v1alpha1.Adoption{Driver: "k8s_capi_helm_v1"}
		for k, v := range labels {
			ev.Cluster.Labels[k] = v
		}
		if change != nil {
			change(ev)
		}
	}
}

func workers(n int) func(*v1alpha1.ClusterEvent) {
	return func(ev *v1alpha1.ClusterEvent) {
		ev.Cluster.NodeCount = &n
		ev.NodeGroups[1].NodeCount = n
	}
}

// mdPatch is a site post-renderer that puts a label at path of every MachineDeployment.
func mdPatch(path ...string) []helmv2.PostRenderer {
	patch := map[string]any{"site.example.org/rack": "r1"}
	for i := len(path) - 1; i >= 0; i-- {
		patch = map[string]any{path[i]: patch}
	}
	patch["apiVersion"], patch["kind"] = "cluster.x-k8s.io/v1beta1", "MachineDeployment"
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		patch["metadata"] = meta
	}
	meta["name"] = "any"
	doc, err := yaml.Marshal(patch)
	if err != nil {
		panic(err)
	}
	return []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomize.Patch{{Patch: string(doc),
		Target: &kustomize.Selector{Group: "cluster.x-k8s.io", Kind: "MachineDeployment"}}}}}}
}

// TestCompare: a cluster whose values are the release's is identical; a difference is
// named by its value path; and only a difference that changes a MachineDeployment's
// machine template or the control plane's machines counts as a rollout, as Cluster API
// decides it, on the real chart's output.
func TestCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		live     func(*v1alpha1.ClusterEvent)
		ours     func(*v1alpha1.ClusterEvent)
		liveSite []helmv2.PostRenderer // the post-renderers the release was installed with
		oursSite []helmv2.PostRenderer // flux.post_renderers
		outcome  migrate.Verdict
		changes  []string // each must be among the changes
		rollout  []string // each must start one rollout entry; none when empty
		warnings int
	}{
		{name: "the driver's values", ours: adopted(nil, nil), outcome: migrate.Identical},
		{name: "a Heat-era availability_zone, held back", ours: adopted(map[string]string{"availability_zone": "az-1"}, nil),
			outcome: migrate.Identical, warnings: 1},
		{name: "availability_zone opted in", ours: adopted(map[string]string{"availability_zone": "az-1", "adopted_features": "placement"}, nil),
			outcome: migrate.Differs, changes: []string{"nodeGroups[0].failureDomain"},
			rollout: []string{"MachineDeployment/prod-a-2b7xq4mzkd5h-default-worker: spec.template changes"}},
		{name: "a resize", ours: adopted(nil, workers(5)),
			outcome: migrate.Differs, changes: []string{"nodeGroups[0].machineCount"}},
		{name: "a control-plane flavor", ours: adopted(nil, func(ev *v1alpha1.ClusterEvent) {
			ev.Cluster.MasterFlavorID, ev.NodeGroups[0].FlavorID = "m1.medium", "m1.medium"
		}), outcome: migrate.Differs, changes: []string{"controlPlane.machineFlavor"},
			rollout: []string{"KubeadmControlPlane/prod-a-2b7xq4mzkd5h-control-plane: spec.machineTemplate.infrastructureRef changes"}},
		{name: "the site post-renderers the release was installed with", ours: adopted(nil, nil),
			liveSite: mdPatch("metadata", "labels"), oursSite: mdPatch("metadata", "labels"), outcome: migrate.Identical},
		{name: "a site post-renderer on the machine template", ours: adopted(nil, nil), oursSite: mdPatch("spec", "template", "metadata", "labels"),
			outcome: migrate.Differs, rollout: []string{"MachineDeployment/prod-a-2b7xq4mzkd5h-default-worker: spec.template changes"}},
		{name: "another chart", live: func(ev *v1alpha1.ClusterEvent) { ev.ClusterTemplate.Labels["capi_helm_chart_version"] = "0.24.1" },
			ours: adopted(nil, nil), outcome: migrate.Differs, rollout: []string{"chart 0.24.1 → 0.27.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			live := testenv.DriverRelease(t, clusterEvent(t, tc.live), tc.liveSite...)
			res := render(t, clusterEvent(t, tc.ours), tc.oursSite...)
			rep := migrate.Compare(live, res)
			if rep.Outcome != tc.outcome {
				t.Fatalf("outcome %s (%s), want %s; changes %v, rollout %v", rep.Outcome, rep.Reason, tc.outcome, rep.Changes, rep.Rollout)
			}
			for _, c := range tc.changes {
				if !strings.Contains(strings.Join(rep.Changes, "\n")+"\n", c+"\n") {
					t.Errorf("changes %v lack %s", rep.Changes, c)
				}
			}
			if len(rep.Rollout) != len(tc.rollout) || rep.ReplacesMachines() != (len(tc.rollout) > 0) {
				t.Fatalf("rollout %q, want %d entries starting %q", rep.Rollout, len(tc.rollout), tc.rollout)
			}
			for i, r := range tc.rollout {
				if !strings.HasPrefix(rep.Rollout[i], r) {
					t.Errorf("rollout[%d] = %q, want it to start %q", i, rep.Rollout[i], r)
				}
			}
			if len(rep.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", rep.Warnings, tc.warnings)
			}
		})
	}
}

// TestReadRelease: the deployed release is read from Helm's storage Secrets on a real API
// server, the newest deployed revision wins, and a cluster without one is ErrNoRelease.
func TestReadRelease(t *testing.T) {
	t.Parallel()
	testenv.Require(t, env)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	rel := testenv.DriverRelease(t, clusterEvent(t, nil))
	if err := env.EnsureNamespace(ctx, rel.Namespace); err != nil {
		t.Fatal(err)
	}
	st := storage.Init(driver.NewSecrets(cs.CoreV1().Secrets(rel.Namespace)))
	old := *rel
	old.Info = &release.Info{Status: release.StatusSuperseded}
	old.Config = map[string]any{"old": true}
	if err := st.Create(&old); err != nil {
		t.Fatal(err)
	}
	rel.Version = 2
	if err := st.Create(rel); err != nil {
		t.Fatal(err)
	}
	got, err := migrate.ReadRelease(cs.CoreV1(), rel.Namespace, rel.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || got.Chart.Metadata.Version != "0.27.0" || migrate.Compare(got, render(t, clusterEvent(t, adopted(nil, nil)))).Outcome != migrate.Identical {
		t.Errorf("read revision %d of chart %s, want the deployed revision 2 of 0.27.0, identical to the render", got.Version, got.Chart.Metadata.Version)
	}
	if _, err := migrate.ReadRelease(cs.CoreV1(), rel.Namespace, "other-000000000000"); !errors.Is(err, migrate.ErrNoRelease) {
		t.Errorf("a cluster without a release: %v, want ErrNoRelease", err)
	}
}
