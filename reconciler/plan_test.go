package reconciler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
)

// BenchmarkPlanUnchanged plans a cluster against a tree that already holds it, Secrets
// encrypted with SOPS: every cluster of a resync, and most of a scale event's. "gate" is
// the service's pipeline, "serialise" the same without its Gate (every object serialised
// and every Secret file read again).
func BenchmarkPlanUnchanged(b *testing.B) {
	ctx := context.Background()
	ev := event(b, "01-prod-a-create.yaml")
	cfg := generator.DefaultConfig()
	for _, gated := range []bool{true, false} {
		name := map[bool]string{true: "gate", false: "serialise"}[gated]
		b.Run(name, func(b *testing.B) {
			p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: encrypting(b), Gate: &gate.Gate{}}
			_, _, tree := written(b, p, ev)
			if !gated {
				p.Gate = nil
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := p.Render(ctx, ev)
				if err != nil {
					b.Fatal(err)
				}
				pl, err := p.Plan(ev, res, tree)
				if err != nil || !pl.NoOp() {
					b.Fatalf("plan of an unchanged cluster: %v, %v", pl.Paths(), err)
				}
			}
		})
	}
}

// twoRegions is committer's pipeline with one management cluster per region.
func twoRegions(t *testing.T) (*reconciler.Pipeline, *reconciler.GitSink) {
	t.Helper()
	p, sink, _ := committer(t)
	p.Config.ManagementClusters = []generator.ManagementCluster{
		{Name: "region-one", Path: "clusters/region-one", Regions: []string{"RegionOne"}},
		{Name: "region-two", Path: "clusters/region-two", Regions: []string{"RegionTwo"}},
	}
	return p, sink
}

// TestPlanManagementClusters: clusters of two regions are committed under their
// management clusters' paths, the index and a resync find each where it lives, the
// repository's .sops.yaml covers both paths, and an event the configuration now routes
// elsewhere is refused, naming management_clusters, with nothing committed.
func TestPlanManagementClusters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, sink := twoRegions(t)
	one := event(t, "01-prod-a-create.yaml")
	two := event(t, "10-baseline-driver-defaults.yaml")
	two.Resolved.RegionName = "RegionTwo"
	roots := map[string]string{}
	for _, ev := range []*v1alpha1.ClusterEvent{one, two} {
		out, err := sink.Apply(ctx, p, ev)
		if err != nil {
			t.Fatal(err)
		}
		roots[ev.Cluster.UUID] = out.Plan.Result.Root
		if s := reconciler.NewSummary(ev, out, nil); s.ManagementCluster != "region-"+map[string]string{"RegionOne": "one", "RegionTwo": "two"}[ev.Resolved.RegionName] {
			t.Errorf("%s: the answer names management cluster %q", ev.Cluster.UUID, s.ManagementCluster)
		}
	}
	if diff := cmp.Diff(map[string]string{one.Cluster.UUID: "clusters/region-one", two.Cluster.UUID: "clusters/region-two"}, roots); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}

	clusters, bad, err := reconciler.LoadClusters(sink.Repo, p.Config, time.Now())
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	for uuid, root := range roots {
		if rec, ok := clusters.Get(uuid); !ok || rec.Root != root {
			t.Errorf("index: %s at %q (found %t); want %q", uuid, rec.Root, ok, root)
		}
	}
	plans, err := resyncPlans(ctx, p, sink.Repo)
	if err != nil || len(plans) != 0 {
		t.Errorf("a resync of both roots: %d plans, %v; want none", len(plans), err)
	}
	rules, _, err := sink.Repo.ReadFile(reconciler.SOPSConfigFile)
	if err != nil || !strings.Contains(string(rules), `^clusters/region-one/`) || !strings.Contains(string(rules), `^clusters/region-two/`) {
		t.Errorf(".sops.yaml does not cover both paths (%v):\n%s", err, rules)
	}

	head, _ := sink.Repo.Head()
	moved := event(t, "02-prod-a-resize-workers.yaml")
	moved.Resolved.RegionName = "RegionTwo"
	_, err = sink.Apply(ctx, p, moved)
	if fes := v1alpha1.FieldErrors(err); len(fes) != 1 || fes[0].Field != "management_clusters" || !strings.Contains(fes[0].Message, "lives on management cluster region-one") {
		t.Errorf("a move: %v", err)
	}
	if now, _ := sink.Repo.Head(); now != head {
		t.Errorf("a refused move committed %s", now)
	}
}

// TestPlanManagementClustersAfterFluxPath: a repository that fed one management cluster
// through flux.path, whose configuration then gains management_clusters none of which has
// that path: the clusters under flux.path are refused, not rendered a second time.
func TestPlanManagementClustersAfterFluxPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, sink, _ := committer(t)
	if _, err := sink.Apply(ctx, p, event(t, "01-prod-a-create.yaml")); err != nil {
		t.Fatal(err)
	}
	p.Config.ManagementClusters = []generator.ManagementCluster{{Name: "region-one", Path: "clusters/region-one", Default: true}}
	head, _ := sink.Repo.Head()
	_, err := sink.Apply(ctx, p, event(t, "02-prod-a-resize-workers.yaml"))
	if fes := v1alpha1.FieldErrors(err); len(fes) != 1 || fes[0].Field != "management_clusters" || !strings.Contains(fes[0].Message, "under flux.path clusters/magnum") {
		t.Errorf("an event of a cluster under flux.path: %v", err)
	}
	if now, _ := sink.Repo.Head(); now != head {
		t.Errorf("a refused event committed %s", now)
	}
}
