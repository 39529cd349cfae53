package status_test

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// TestLeftOver: what serve deletes because Argo CD leaves it (a deleted node group's
// MachineDeployment), judged behind the Application recorded from the real Argo CD.
func TestLeftOver(t *testing.T) {
	t.Parallel()
	recorded := func(name string) *unstructured.Unstructured { return recordedApplication(t, name) }
	synced := recorded("01-synced-healthy.yaml") // Application "demo", synced at its revision
	at, _, _ := unstructured.NestedString(synced.Object, "status", "sync", "revision")
	md := func(name, tracking string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		u.SetKind("MachineDeployment")
		u.SetNamespace("demo")
		u.SetName(name)
		if tracking != "" {
			u.SetAnnotations(map[string]string{status.ArgoTrackingAnnotation: tracking})
		}
		if deleting {
			u.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		}
		return u
	}
	now := time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC)
	view := func(s v1alpha1.ClusterStatus, revision string) status.View {
		return status.View{ClusterUUID: "u1", StackID: "demo", Namespace: "demo", Status: s, Since: now.Add(-time.Minute), Revision: revision,
			NodeGroups: []status.NodeGroupView{
				{Name: "default-master", Role: v1alpha1.RoleMaster, Status: s, IsDefault: true, NodeCount: 1},
				{Name: "default-worker", Role: "worker", Status: s, IsDefault: true, NodeCount: 2},
				{Name: "gpu", Role: "worker", Status: v1alpha1.DeleteInProgress, NodeCount: 1},
			}}
	}
	mds := []*unstructured.Unstructured{
		md("demo-default-worker", "demo:cluster.x-k8s.io/MachineDeployment:demo/demo-default-worker", false),
		md("demo-gpu", "demo:cluster.x-k8s.io/MachineDeployment:demo/demo-gpu", false),
		md("demo-old", "argocd_demo:cluster.x-k8s.io/MachineDeployment:demo/demo-old", false),
		md("demo-other", "other:cluster.x-k8s.io/MachineDeployment:demo/demo-other", false),
		md("demo-untracked", "", false),
		md("demo-going", "demo:cluster.x-k8s.io/MachineDeployment:demo/demo-going", true),
	}
	// The same Application still listing demo-gpu among its resources: its desired state
	// holds it, whatever the Magnum view says.
	listing := synced.DeepCopy()
	resources, _, _ := unstructured.NestedSlice(listing.Object, "status", "resources")
	resources = append(resources, map[string]any{"group": "cluster.x-k8s.io", "kind": "MachineDeployment",
		"namespace": "demo", "name": "demo-gpu", "status": "Synced", "version": "v1beta2"})
	_ = unstructured.SetNestedSlice(listing.Object, resources, "status", "resources")
	// One not compared yet lists nothing: nothing may be taken as gone.
	unlisted := synced.DeepCopy()
	unstructured.RemoveNestedField(unlisted.Object, "status", "resources")
	hr := &unstructured.Unstructured{}
	hr.SetAPIVersion("helm.toolkit.fluxcd.io/v2")
	hr.SetKind("HelmRelease")
	for _, tc := range []struct {
		name string
		v    status.View
		o    status.Objects
		want []string
	}{
		{"argo at the commit", view(v1alpha1.UpdateInProgress, at), status.Objects{Application: synced, MachineDeployments: mds},
			[]string{"demo-gpu", "demo-old"}},
		{"argo at the commit, still listing one", view(v1alpha1.UpdateInProgress, at), status.Objects{Application: listing, MachineDeployments: mds},
			[]string{"demo-old"}},
		{"argo at the commit, listing nothing", view(v1alpha1.UpdateInProgress, at), status.Objects{Application: unlisted, MachineDeployments: mds}, nil},
		{"argo not at the commit yet", view(v1alpha1.UpdateInProgress, "0123456789012345678901234567890123456789"),
			status.Objects{Application: recorded("02-sync-retrying.yaml"), MachineDeployments: mds}, nil},
		{"argo failing", view(v1alpha1.UpdateInProgress, at),
			status.Objects{Application: recorded("03-sync-failed.yaml"), MachineDeployments: mds}, nil},
		{"the cluster being deleted", view(v1alpha1.DeleteInProgress, at), status.Objects{Application: synced, MachineDeployments: mds}, nil},
		{"flux", view(v1alpha1.UpdateInProgress, at), status.Objects{HelmRelease: hr, MachineDeployments: mds}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := status.Options{Now: now, UpdateTimeout: time.Hour}
			// The judgement's answer, and serve's leader's shortcut to it: the same.
			for name, refs := range map[string][]status.ObjectRef{
				"Evaluate": status.Evaluate(tc.v, tc.o, opts).LeftOver,
				"LeftOver": status.LeftOver(tc.v, tc.o, opts),
			} {
				var got []string
				for _, ref := range refs {
					if ref.GVK.Kind != "MachineDeployment" || ref.Namespace != "demo" {
						t.Errorf("%s: left over %+v", name, ref)
					}
					got = append(got, ref.Name)
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s: left over %v, want %v", name, got, tc.want)
				}
			}
		})
	}
}
