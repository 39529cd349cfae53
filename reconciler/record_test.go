package reconciler_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// TestAdoptionIsInherited: once a cluster's record says it was adopted, the events Magnum
// sends later — which never carry the adoption — are rendered as adopted: a Heat-era
// availability_zone label stays out of its HelmRelease, the record keeps the adoption, and
// a retry of such an event is a retry, not an idempotency conflict. The same event for a
// cluster magnum-gitops created gets its failure domain.
func TestAdoptionIsInherited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	withZone := func(id string) *v1alpha1.ClusterEvent {
		ev := event(t, "01-prod-a-create.yaml")
		ev.ID = id
		ev.Cluster.Labels["availability_zone"] = "az-1"
		return ev
	}
	helmRelease := func(dir, rel string) string {
		return gitOut(t, dir, "show", "main:"+rel)
	}

	p, sink, dir := committer(t)
	adopted := withZone("evt-adopt")
	adopted.Adopted = &v1alpha1.Adoption{Driver: "k8s_capi_helm_v1"}
	out, err := sink.Apply(ctx, p, adopted)
	if err != nil {
		t.Fatal(err)
	}
	hrPath := ""
	for _, f := range out.Plan.Paths() {
		if strings.HasSuffix(f, "/helmrelease.yaml") {
			hrPath = f
		}
	}
	if hrPath == "" || strings.Contains(helmRelease(dir, hrPath), "failureDomain") {
		t.Fatalf("adopted cluster: HelmRelease %q has a failureDomain or is missing", hrPath)
	}

	later := withZone("evt-resize")
	later.Operation = v1alpha1.ResizeCluster
	resize(later, 5)
	out, err = sink.Apply(ctx, p, later)
	if err != nil {
		t.Fatal(err)
	}
	if out.NoOp() || out.Plan.Event.Adopted == nil || out.Plan.Event.Adopted.Driver != "k8s_capi_helm_v1" {
		t.Fatalf("a later event: committed %v, planned as adopted %+v", !out.NoOp(), out.Plan.Event.Adopted)
	}
	hr := helmRelease(dir, hrPath)
	if strings.Contains(hr, "failureDomain") || !strings.Contains(hr, "machineCount: 5") {
		t.Errorf("a later event: HelmRelease has a failureDomain, or not the resize:\n%s", hr)
	}
	if msg := gitOut(t, dir, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "warning: cluster.labels.availability_zone: ignored") {
		t.Errorf("the commit does not say the label was held back:\n%s", msg)
	}
	record := gitOut(t, dir, "show", "main:"+strings.TrimSuffix(hrPath, "helmrelease.yaml")+reconciler.RecordFile)
	if !strings.Contains(record, `"adopted"`) || !strings.Contains(record, "evt-resize") {
		t.Errorf("the record lost the adoption or the event:\n%s", record)
	}
	head := gitOut(t, dir, "rev-parse", "main")
	if again, err := sink.Apply(ctx, p, withResize(later)); err != nil || !again.NoOp() {
		t.Errorf("a retry of the later event: %v (no-op %v), want the unchanged answer", err, again != nil && again.NoOp())
	}
	changed := withResize(later)
	resize(changed, 6)
	if _, err := sink.Apply(ctx, p, changed); !errors.Is(err, reconciler.ErrIdempotencyConflict) {
		t.Errorf("the same id with another body: %v, want an idempotency conflict", err)
	}
	if gitOut(t, dir, "rev-parse", "main") != head {
		t.Error("a retry or a refused event moved the branch")
	}

	// The same event for a cluster magnum-gitops created.
	p2, sink2, dir2 := committer(t)
	if _, err := sink2.Apply(ctx, p2, withZone("evt-create")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(helmRelease(dir2, hrPath), "failureDomain: az-1") {
		t.Error("a created cluster: availability_zone did not become its failure domain")
	}
	if msg := gitOut(t, dir2, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "differs from magnum-capi-helm on cluster.labels.availability_zone") {
		t.Errorf("the commit does not list the feature as a deviation:\n%s", msg)
	}
}

// resize sets the default worker group's size, as Magnum saves it before a resize.
func resize(ev *v1alpha1.ClusterEvent, n int) {
	ev.Cluster.NodeCount = &n
	for i := range ev.NodeGroups {
		if ev.NodeGroups[i].Name == "default-worker" {
			ev.NodeGroups[i].NodeCount = n
		}
	}
}

// withResize is a copy of the later event as its sender retries it: without the adoption,
// sharing nothing the test changes afterwards.
func withResize(ev *v1alpha1.ClusterEvent) *v1alpha1.ClusterEvent {
	c := *ev
	c.Adopted = nil
	n := *ev.Cluster.NodeCount
	c.Cluster.NodeCount = &n
	c.NodeGroups = append([]v1alpha1.NodeGroup(nil), ev.NodeGroups...)
	return &c
}
