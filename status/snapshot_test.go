package status_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnum-gitops/magnum-gitops/status"
)

// recordingSource is a StaticSource that remembers the kinds it was asked for.
type recordingSource struct {
	status.StaticSource
	asked []schema.GroupVersionKind
}

func (r *recordingSource) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	r.asked = append(r.asked, gvk)
	return r.StaticSource.List(ctx, gvk)
}

// TestSnapshotFollowsInfrastructureRef: the infrastructure cluster is the kind the Cluster's
// spec.infrastructureRef names, listed once however many Clusters name it, so a site whose
// post-renderers put its clusters on another provider than CAPO is judged by that
// provider's object (and not "Infrastructure resource not found.").
func TestSnapshotFollowsInfrastructureRef(t *testing.T) {
	t.Parallel()
	obj := func(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: fields}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace("magnum-p1")
		u.SetName(name)
		return u
	}
	cluster := func(name, infraKind string) *unstructured.Unstructured {
		return obj("cluster.x-k8s.io/v1beta1", "Cluster", name, map[string]any{"spec": map[string]any{
			"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": infraKind, "name": name}}})
	}
	dev := func(name string) *unstructured.Unstructured {
		return obj("infrastructure.cluster.x-k8s.io/v1beta1", "DevCluster", name, map[string]any{"status": map[string]any{"ready": true}})
	}
	src := &recordingSource{StaticSource: status.StaticSource{cluster("a", "DevCluster"), cluster("b", "DevCluster"),
		cluster("c", "OpenStackCluster"), dev("a"), dev("b")}}
	snap, err := status.TakeSnapshot(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	devGVK := schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "DevCluster"}
	count := map[schema.GroupVersionKind]int{}
	for _, gvk := range src.asked {
		count[gvk]++
	}
	if count[devGVK] != 1 || len(count) != len(status.Kinds)+1 {
		t.Errorf("listed %v, want every kind of status.Kinds once and DevCluster once", count)
	}
	for _, tc := range []struct {
		name, kind string
	}{{"a", "DevCluster"}, {"b", "DevCluster"}, {"c", ""}} {
		o := snap.Objects(status.View{Namespace: "magnum-p1", StackID: tc.name})
		got := ""
		if o.InfraCluster != nil {
			got = o.InfraCluster.GetKind()
		}
		if got != tc.kind {
			t.Errorf("cluster %s: infrastructure cluster %q, want %q", tc.name, got, tc.kind)
		}
	}
	if len(status.Kinds) != 9 {
		t.Errorf("status.Kinds was changed in place: %d kinds", len(status.Kinds))
	}
}
