package status_test

import (
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// TestNewView: serve's view of an event puts the cluster and each group where the
// operation leaves them; the status command's view of a document keeps every status the
// document carries.
func TestNewView(t *testing.T) {
	t.Parallel()
	groups := func(gpu v1alpha1.ClusterStatus) []v1alpha1.NodeGroup {
		return []v1alpha1.NodeGroup{
			{Name: "default-master", Role: "master", NodeCount: 3, IsDefault: true, Status: v1alpha1.CreateComplete},
			{Name: "default-worker", Role: "worker", NodeCount: 2, IsDefault: true, Status: v1alpha1.CreateComplete},
			{Name: "gpu", Role: "worker", NodeCount: 1, Status: gpu},
		}
	}
	type want struct {
		cluster v1alpha1.ClusterStatus
		groups  [3]v1alpha1.ClusterStatus
	}
	cases := []struct {
		name      string
		op        v1alpha1.Operation
		nodeGroup string
		gpu       v1alpha1.ClusterStatus
		serve     want
		document  want
	}{{
		name: "a cluster-wide operation moves every group", op: v1alpha1.UpgradeCluster,
		gpu:      v1alpha1.CreateComplete,
		serve:    want{v1alpha1.UpdateInProgress, [3]v1alpha1.ClusterStatus{v1alpha1.UpdateInProgress, v1alpha1.UpdateInProgress, v1alpha1.UpdateInProgress}},
		document: want{v1alpha1.UpdateComplete, [3]v1alpha1.ClusterStatus{v1alpha1.CreateComplete, v1alpha1.CreateComplete, v1alpha1.CreateComplete}},
	}, {
		name: "a group operation moves its group only", op: v1alpha1.CreateNodeGroup, nodeGroup: "gpu",
		gpu:      v1alpha1.CreateInProgress,
		serve:    want{v1alpha1.UpdateInProgress, [3]v1alpha1.ClusterStatus{v1alpha1.UpdateComplete, v1alpha1.UpdateComplete, v1alpha1.CreateInProgress}},
		document: want{v1alpha1.UpdateComplete, [3]v1alpha1.ClusterStatus{v1alpha1.CreateComplete, v1alpha1.CreateComplete, v1alpha1.CreateInProgress}},
	}, {
		name: "a group being deleted stays so during another group's update", op: v1alpha1.UpdateNodeGroup, nodeGroup: "default-worker",
		gpu:      v1alpha1.DeleteInProgress,
		serve:    want{v1alpha1.UpdateInProgress, [3]v1alpha1.ClusterStatus{v1alpha1.UpdateComplete, v1alpha1.UpdateInProgress, v1alpha1.DeleteInProgress}},
		document: want{v1alpha1.UpdateComplete, [3]v1alpha1.ClusterStatus{v1alpha1.CreateComplete, v1alpha1.CreateComplete, v1alpha1.DeleteInProgress}},
	}, {
		name: "a delete moves every group", op: v1alpha1.DeleteCluster,
		serve:    want{v1alpha1.DeleteInProgress, [3]v1alpha1.ClusterStatus{v1alpha1.DeleteInProgress, v1alpha1.DeleteInProgress, v1alpha1.DeleteInProgress}},
		document: want{v1alpha1.UpdateComplete, [3]v1alpha1.ClusterStatus{v1alpha1.CreateComplete, v1alpha1.CreateComplete, v1alpha1.DeleteInProgress}},
	}}
	since := time.Date(2026, 11, 22, 11, 30, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := &v1alpha1.ClusterEvent{Operation: tc.op, NodeGroup: tc.nodeGroup,
				Cluster: v1alpha1.Cluster{UUID: "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03", Name: "prod-a",
					ProjectID: "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c", StackID: "prod-a-x",
					Status: v1alpha1.UpdateComplete, UpdatedAt: since.Format(time.RFC3339)},
				NodeGroups: groups(tc.gpu)}
			doc := status.ViewFromEvent(ev, "magnum")
			for _, v := range []struct {
				name string
				view status.View
				want want
			}{
				{"serve", status.NewView(ev, doc.Namespace, doc.StackID, since), tc.serve},
				{"document", doc, tc.document},
			} {
				if v.view.Status != v.want.cluster {
					t.Errorf("%s: cluster %s, want %s", v.name, v.view.Status, v.want.cluster)
				}
				if len(v.view.NodeGroups) != 3 {
					t.Fatalf("%s: %d groups, want 3", v.name, len(v.view.NodeGroups))
				}
				for i, g := range v.view.NodeGroups {
					if g.Status != v.want.groups[i] {
						t.Errorf("%s: group %s %s, want %s", v.name, g.Name, g.Status, v.want.groups[i])
					}
				}
			}
			if doc.Namespace != "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c" || doc.StackID != "prod-a-x" || !doc.Since.Equal(since) {
				t.Errorf("document view placed at %s/%s since %s", doc.Namespace, doc.StackID, doc.Since)
			}
		})
	}
}
