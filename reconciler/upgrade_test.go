package reconciler_test

import (
	"context"
	"errors"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/magnum"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// deployedAt reads the head's deploy file of a cluster, the HelmRelease or in Argo mode
// the Application: the Kubernetes version it deploys and its upgrade-target annotation.
// An Application with a kustomize source deploys the values of the chart kustomization
// beside it.
func deployedAt(t *testing.T, p *reconciler.Pipeline, sink *reconciler.GitSink, namespace, stackID string) (version, target string) {
	t.Helper()
	dir := generator.ClusterDir(p.Config.Flux.Path, namespace, stackID)
	read := func(f string) []byte {
		t.Helper()
		b, ok, err := sink.Repo.ReadFile(path.Join(dir, f))
		if err != nil || !ok {
			t.Fatalf("%s: %v (found %v)", f, err, ok)
		}
		return b
	}
	type values struct {
		KubernetesVersion string `json:"kubernetesVersion"`
	}
	var obj struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Values values `json:"values"`
			Source struct {
				Path string `json:"path"`
				Helm struct {
					Values string `json:"values"`
				} `json:"helm"`
			} `json:"source"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(read(p.Config.DeployFile()), &obj); err != nil {
		t.Fatal(err)
	}
	target = obj.Metadata.Annotations[magnum.AnnotationUpgradeTarget]
	switch {
	case p.Config.Format != generator.FormatArgo:
		return obj.Spec.Values.KubernetesVersion, target
	case obj.Spec.Source.Path == "":
		var v values
		if err := yaml.Unmarshal([]byte(obj.Spec.Source.Helm.Values), &v); err != nil {
			t.Fatal(err)
		}
		return v.KubernetesVersion, target
	}
	var k struct {
		HelmCharts []struct {
			ValuesInline values `json:"valuesInline"`
		} `json:"helmCharts"`
	}
	if err := yaml.Unmarshal(read(path.Join(generator.ChartDir, generator.KustomizationFile)), &k); err != nil || len(k.HelmCharts) != 1 {
		t.Fatalf("chart kustomization: %v, %d charts", err, len(k.HelmCharts))
	}
	return k.HelmCharts[0].ValuesInline.KubernetesVersion, target
}

// chartPatch is a site post-renderer: in Argo mode it gives a cluster's Application a
// kustomize source.
const chartPatch = `
- kustomize:
    patches:
    - target: {group: cluster.x-k8s.io, kind: Cluster}
      patch: |
        - {op: add, path: /metadata/labels/example.org~1patched, value: "true"}
`

// createdAs is created with the configuration changed by configure first.
func createdAs(t *testing.T, configure func(t *testing.T, cfg *generator.Config)) (*reconciler.Pipeline, *reconciler.GitSink, string) {
	t.Helper()
	p, sink, dir := committer(t)
	if configure != nil {
		cfg := p.Config.Config
		configure(t, &cfg)
		p.Config = generator.MustSite(cfg)
	}
	if _, err := sink.Apply(context.Background(), p, event(t, "01-prod-a-create.yaml")); err != nil {
		t.Fatal(err)
	}
	return p, sink, dir
}

// Argo mode, with an Application of each shape.
func argoHelmSource(_ *testing.T, cfg *generator.Config) { cfg.Format = generator.FormatArgo }

func argoKustomizeSource(t *testing.T, cfg *generator.Config) {
	cfg.Format = generator.FormatArgo
	cfg.Argo.RepoURL, cfg.Argo.TargetRevision = "https://git.example.org/cloud/clusters.git", "main"
	if err := yaml.UnmarshalStrict([]byte(chartPatch), &cfg.Flux.PostRenderers); err != nil {
		t.Fatal(err)
	}
}

// lastMessage is the head commit's message on the remote.
func lastMessage(t *testing.T, remote string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", remote, "log", "-1", "--format=%B", "main").CombinedOutput()
	if err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return string(out)
}

// TestUpgradeChain: an upgrade more than one Kubernetes minor ahead is committed as its
// first step, the record keeping the event; every later step is committed by a reconcile
// of the cluster only once the management cluster has rolled out the step before; while
// the chain is under way nothing else moves Kubernetes (events and resyncs are refused or
// skipped); the last step removes the annotation, and the chain ends. The same in Argo
// mode, the annotation on the Application, with a Helm source or a kustomize source (whose
// values, the deployed version among them, are in the chart kustomization beside it).
func TestUpgradeChain(t *testing.T) {
	t.Parallel()
	images := []v1alpha1.Image{
		{ID: "7a1b2c3d-0000-4000-8000-000000013403", KubeVersion: "v1.34.3"},
		{ID: "7a1b2c3d-0000-4000-8000-000000013500", KubeVersion: "v1.35.0"},
	}
	for _, tc := range []struct {
		format    string
		configure func(*testing.T, *generator.Config)
		target    string
		steps     []string // the versions deployed, in order, the first by the event's commit
	}{
		{"flux", nil, "1.35.1", []string{"1.34.3", "1.35.1"}},
		{"flux", nil, "1.36.0", []string{"1.34.3", "1.35.0", "1.36.0"}},
		{"argo-helm-source", argoHelmSource, "1.35.1", []string{"1.34.3", "1.35.1"}},
		{"argo-helm-source", argoHelmSource, "1.36.0", []string{"1.34.3", "1.35.0", "1.36.0"}},
		{"argo-kustomize-source", argoKustomizeSource, "1.36.0", []string{"1.34.3", "1.35.0", "1.36.0"}},
	} {
		t.Run(tc.format+"/"+tc.target, func(t *testing.T) {
			t.Parallel()
			p, sink, remote := createdAs(t, tc.configure)
			m := &management{}
			var progress []reconciler.UpgradeProgress
			var pushed []string
			clusters := reconciler.NewClusters()
			r := &reconciler.Reconciler{Pipeline: p, Sink: sink, Clusters: clusters, Management: m, MaxWait: time.Millisecond}
			r.Start()
			// reconcile reconciles the cluster as the leader's requeue does and reads its report.
			reconcile := func(uuid string) {
				for _, res := range r.Reconcile(context.Background(), uuid).Results {
					if res.Upgrade != nil {
						progress = append(progress, *res.Upgrade)
					}
					for _, p := range res.Pushed {
						pushed = append(pushed, p.Namespace)
					}
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { r.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()

			ev := event(t, "06-prod-a-upgrade.yaml")
			ev.Resolved.Image = &v1alpha1.Image{ID: "7a1b2c3d-0000-4000-8000-0000000ffff0", KubeVersion: "v" + tc.target, OSDistro: "ubuntu"}
			ev.Resolved.UpgradeImages = images
			sum := r.Submit(context.Background(), ev)
			if sum.Err() != nil {
				t.Fatal(sum.Err())
			}
			uuid := ev.Cluster.UUID
			if tc.configure != nil {
				b, _, _ := sink.Repo.ReadFile(path.Join(generator.ClusterDir(p.Config.Flux.Path, sum.Namespace, sum.StackID), generator.ApplicationFile))
				if kustomize := strings.Contains(string(b), "\n    path: "); len(b) == 0 || kustomize != (tc.format == "argo-kustomize-source") {
					t.Fatalf("the Application (kustomize source %v), want %s:\n%s", kustomize, tc.format, b)
				}
			}
			at := func() (string, string) { return deployedAt(t, p, sink, sum.Namespace, sum.StackID) }
			if v, target := at(); v != tc.steps[0] || target != tc.target {
				t.Fatalf("after the event: Kubernetes %s, annotation %q; want %s on its way to %s", v, target, tc.steps[0], tc.target)
			}
			if msg := lastMessage(t, remote); !strings.Contains(msg, reconciler.TrailerUpgradeTarget+": "+tc.target) ||
				!strings.Contains(msg, reconciler.TrailerEventID+": "+ev.ID) || !strings.Contains(msg, "Kubernetes: 1.33.7 → "+tc.steps[0]) {
				t.Errorf("the event's commit:\n%s", msg)
			}

			for i, from := range tc.steps[:len(tc.steps)-1] {
				to := tc.steps[i+1]
				head := sum.Revision
				// Not rolled out yet: the step waits, and reports nothing.
				progress, pushed = nil, nil
				m.rollOut("")
				reconcile(uuid)
				if v, _ := at(); v != from || len(progress) != 0 {
					t.Fatalf("before %s rolled out: Kubernetes %s, progress %+v", from, v, progress)
				}
				// Nothing else moves Kubernetes meanwhile.
				again := event(t, "02-prod-a-resize-workers.yaml")
				again.Resolved = ev.Resolved
				if s := r.Submit(context.Background(), again); !errors.Is(s.Err(), reconciler.ErrUpgradeInProgress) || reconciler.KindOf(s.Err()) != reconciler.KindRetry {
					t.Fatalf("a resize during the chain: %v, want a retry: %v", s.Err(), reconciler.ErrUpgradeInProgress)
				}
				if resynced, err := resyncPlans(context.Background(), p, sink.Repo); err != nil || len(resynced) != 0 {
					t.Fatalf("a resync during the chain: %v, %d plans; want none", err, len(resynced))
				}

				m.rollOut(from)
				progress, pushed = nil, nil
				reconcile(uuid)
				if len(progress) != 1 || progress[0].Err != nil || progress[0].From != from || progress[0].To != to || progress[0].Target != tc.target || progress[0].Commit == "" {
					t.Fatalf("step from %s: progress %+v, want a commit to %s", from, progress, to)
				}
				wantTarget := tc.target
				if to == tc.target {
					wantTarget = ""
				}
				if v, target := at(); v != to || target != wantTarget {
					t.Fatalf("after the step: Kubernetes %s, annotation %q; want %s, %q", v, target, to, wantTarget)
				}
				msg := lastMessage(t, remote)
				for _, want := range []string{"upgrade cluster prod-a (prod-a-2b7xq4mzkd5h) in project 9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c to Kubernetes " + to,
					"Cluster API has rolled out Kubernetes " + from, "Kubernetes: " + from + " → " + to,
					reconciler.TrailerOperation + ": " + reconciler.OperationUpgradeStep, reconciler.TrailerUpgradeTarget + ": " + tc.target} {
					if !strings.Contains(msg, want) {
						t.Errorf("step commit lacks %q:\n%s", want, msg)
					}
				}
				if strings.Contains(msg, reconciler.TrailerEventID) {
					t.Errorf("a step commit carries the event's id:\n%s", msg)
				}
				if len(pushed) != 1 || pushed[0] != sum.Namespace {
					t.Errorf("the report asks Flux to fetch %v, want %s", pushed, sum.Namespace)
				}
				if rec, _ := clusters.Get(uuid); rec.Revision != progress[0].Commit || rec.Revision == head {
					t.Errorf("the cluster's status waits for %s, want the step's commit %s", rec.Revision, progress[0].Commit)
				}
			}
			// Done: a reconcile finds nothing to do, and Kubernetes may move again.
			progress = nil
			reconcile(uuid)
			if len(progress) != 0 {
				t.Errorf("after the last step: %+v", progress)
			}
			resize := event(t, "02-prod-a-resize-workers.yaml")
			resize.Resolved = ev.Resolved
			if s := r.Submit(context.Background(), resize); s.Err() != nil || s.Revision == "" {
				t.Errorf("a resize after the chain: %v", s.Err())
			}
		})
	}
}

// TestUpgradeChainRefused: an upgrade with no image of the next minor is refused as
// invalid, naming resolved.upgrade_images, and nothing is committed.
func TestUpgradeChainRefused(t *testing.T) {
	t.Parallel()
	p, sink, remote := created(t)
	before := lastMessage(t, remote)
	ev := event(t, "06-prod-a-upgrade.yaml")
	ev.Resolved.Image = &v1alpha1.Image{ID: "7a1b2c3d-0000-4000-8000-0000000ffff0", KubeVersion: "v1.35.1", OSDistro: "ubuntu"}
	_, err := sink.Apply(context.Background(), p, ev)
	if reconciler.KindOf(err) != reconciler.KindInvalid || !strings.Contains(err.Error(), "resolved.upgrade_images") {
		t.Fatalf("err = %v, want invalid input naming resolved.upgrade_images", err)
	}
	if after := lastMessage(t, remote); after != before {
		t.Errorf("something was committed:\n%s", after)
	}
}
