package magnumdiff

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

func ptrTo[T any](v T) *T { return &v }

// magnumView is a cluster as Magnum shows it: template t1, 3 masters and 3 workers.
func magnumView() State {
	return State{
		Cluster: v1alpha1.Cluster{UUID: "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03", Name: "prod-a", ProjectID: "p1",
			ClusterTemplateID: "t1", MasterCount: ptrTo(3), NodeCount: ptrTo(3), Status: v1alpha1.CreateComplete,
			Labels: v1alpha1.Labels{"a": "1"}},
		Template: v1alpha1.ClusterTemplate{UUID: "t1", ImageID: "img-1"},
		NodeGroups: []v1alpha1.NodeGroup{
			{Name: "default-master", Role: "master", NodeCount: 3, MinNodeCount: ptrTo(1), IsDefault: true},
			{Name: "default-worker", Role: "worker", NodeCount: 3, MinNodeCount: ptrTo(1), IsDefault: true},
		},
	}
}

// recorded is the event Git holds for a state.
func recorded(s State, op v1alpha1.Operation) *v1alpha1.ClusterEvent {
	s = s.Clone()
	return &v1alpha1.ClusterEvent{Operation: op, Cluster: s.Cluster, ClusterTemplate: s.Template, NodeGroups: s.NodeGroups}
}

func TestDiffCluster(t *testing.T) {
	tests := []struct {
		name   string
		rec    func(s *State) *v1alpha1.ClusterEvent // nil: Git holds nothing
		magnum func(m *State)
		want   []string // "operation[:nodegroup]"
	}{
		{name: "new cluster: create", magnum: func(*State) {}, want: []string{"create_cluster"}},
		{name: "new cluster already being deleted: nothing",
			magnum: func(m *State) { m.Cluster.Status = v1alpha1.DeleteInProgress }},
		{name: "same state: nothing",
			rec: func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.CreateCluster) },
			// Fields no driver call changes never make an event.
			magnum: func(m *State) {
				m.Cluster.Status, m.Cluster.UpdatedAt = v1alpha1.UpdateFailed, "2026-03-01T00:00:00Z"
				m.NodeGroups[1].Status = v1alpha1.UpdateComplete
			}},
		{name: "Git holds it deleted: nothing",
			rec:    func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.DeleteCluster) },
			magnum: func(m *State) { m.NodeGroups[1].NodeCount = 9 }},
		{name: "being deleted: only delete_cluster",
			rec: func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.CreateCluster) },
			magnum: func(m *State) {
				m.Cluster.Status, m.NodeGroups[1].NodeCount, m.Cluster.ClusterTemplateID = v1alpha1.DeleteInProgress, 9, "t2"
			},
			want: []string{"delete_cluster"}},
		{name: "worker count: resize",
			rec:    func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.CreateCluster) },
			magnum: func(m *State) { m.NodeGroups[1].NodeCount = 5 },
			want:   []string{"resize_cluster:default-worker"}},
		{name: "a group's min/max: update_nodegroup",
			rec:    func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.CreateCluster) },
			magnum: func(m *State) { m.NodeGroups[1].MaxNodeCount = ptrTo(8) },
			want:   []string{"update_nodegroup:default-worker"}},
		{name: "nil and zero minimum are the same",
			rec: func(s *State) *v1alpha1.ClusterEvent {
				s.NodeGroups[0].MinNodeCount = nil
				return recorded(*s, v1alpha1.CreateCluster)
			},
			magnum: func(m *State) { m.NodeGroups[0].MinNodeCount = ptrTo(0) }},
		{name: "a record without node groups: Magnum's defaults, no spurious update",
			rec: func(s *State) *v1alpha1.ClusterEvent {
				ev := recorded(*s, v1alpha1.CreateCluster)
				ev.NodeGroups = nil
				return ev
			},
			magnum: func(m *State) { m.NodeGroups[1].MaxNodeCount = ptrTo(8) }},
		{name: "a new group: create_nodegroup",
			rec: func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.CreateCluster) },
			magnum: func(m *State) {
				m.NodeGroups = append(m.NodeGroups, v1alpha1.NodeGroup{Name: "gpu", Role: "worker", NodeCount: 1})
			},
			want: []string{"create_nodegroup:gpu"}},
		{name: "a new group Magnum is already deleting: nothing",
			rec: func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.CreateCluster) },
			magnum: func(m *State) {
				m.NodeGroups = append(m.NodeGroups, v1alpha1.NodeGroup{Name: "gpu", NodeCount: 1, Status: v1alpha1.DeleteInProgress})
			}},
		{name: "a group being deleted: delete_nodegroup",
			rec: func(s *State) *v1alpha1.ClusterEvent {
				s.NodeGroups = append(s.NodeGroups, v1alpha1.NodeGroup{Name: "gpu", NodeCount: 1})
				return recorded(*s, v1alpha1.CreateNodeGroup)
			},
			magnum: func(m *State) {
				m.NodeGroups = append(m.NodeGroups, v1alpha1.NodeGroup{Name: "gpu", NodeCount: 1, Status: v1alpha1.DeleteInProgress})
			},
			want: []string{"delete_nodegroup:gpu"}},
		{name: "a group gone from Magnum: delete_nodegroup",
			rec: func(s *State) *v1alpha1.ClusterEvent {
				s.NodeGroups = append(s.NodeGroups, v1alpha1.NodeGroup{Name: "gpu", NodeCount: 1})
				return recorded(*s, v1alpha1.CreateNodeGroup)
			},
			magnum: func(*State) {},
			want:   []string{"delete_nodegroup:gpu"}},
		{name: "a group Git renders deleted, gone from Magnum: nothing",
			rec: func(s *State) *v1alpha1.ClusterEvent {
				s.NodeGroups = append(s.NodeGroups, v1alpha1.NodeGroup{Name: "gpu", NodeCount: 1, Status: v1alpha1.DeleteInProgress})
				return recorded(*s, v1alpha1.DeleteNodeGroup)
			},
			magnum: func(*State) {}},
		{name: "template change: upgrade",
			rec: func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.CreateCluster) },
			magnum: func(m *State) {
				m.Cluster.ClusterTemplateID, m.Template = "t2", v1alpha1.ClusterTemplate{UUID: "t2", ImageID: "img-2"}
			},
			want: []string{"upgrade_cluster"}},
		{name: "a record without a template id cannot tell an upgrade",
			rec: func(s *State) *v1alpha1.ClusterEvent {
				ev := recorded(*s, v1alpha1.CreateCluster)
				ev.Cluster.ClusterTemplateID, ev.ClusterTemplate.UUID = "", ""
				return ev
			},
			magnum: func(m *State) { m.Cluster.ClusterTemplateID = "t2" }},
		{name: "labels: update_cluster",
			rec:    func(s *State) *v1alpha1.ClusterEvent { return recorded(*s, v1alpha1.CreateCluster) },
			magnum: func(m *State) { m.Cluster.Labels = v1alpha1.Labels{"a": "2"} },
			want:   []string{"update_cluster"}},
		{name: "every difference, in order",
			rec: func(s *State) *v1alpha1.ClusterEvent {
				s.NodeGroups = append(s.NodeGroups, v1alpha1.NodeGroup{Name: "old", NodeCount: 1})
				return recorded(*s, v1alpha1.CreateNodeGroup)
			},
			magnum: func(m *State) {
				m.NodeGroups[0].NodeCount, m.NodeGroups[1].NodeCount = 5, 4
				m.NodeGroups[1].MaxNodeCount = ptrTo(9)
				m.NodeGroups = append(m.NodeGroups, v1alpha1.NodeGroup{Name: "gpu", NodeCount: 1})
				m.Cluster.ClusterTemplateID, m.Template = "t2", v1alpha1.ClusterTemplate{UUID: "t2", ImageID: "img-2"}
				m.Cluster.Labels = nil
			},
			want: []string{"resize_cluster:default-master", "resize_cluster:default-worker", "create_nodegroup:gpu",
				"update_nodegroup:default-worker", "delete_nodegroup:old", "upgrade_cluster", "update_cluster"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rec *v1alpha1.ClusterEvent
			if tc.rec != nil {
				s := magnumView()
				rec = tc.rec(&s)
			}
			m := magnumView()
			tc.magnum(&m)
			m.syncCounts()
			steps := Diff(rec, m)
			var got []string
			for _, st := range steps {
				s := string(st.Op)
				if st.NodeGroup != "" {
					s += ":" + st.NodeGroup
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("steps %v, want %v", got, tc.want)
			}
			if len(steps) == 0 || steps[len(steps)-1].Op == v1alpha1.DeleteCluster {
				return
			}
			// Applying every step arrives at Magnum's state, which then differs from nothing.
			last := steps[len(steps)-1].State
			if diff := cmp.Diff(m.Clone(), last); diff != "" {
				t.Errorf("last state, want Magnum's (-want +got):\n%s", diff)
			}
			final := recorded(last, steps[len(steps)-1].Op)
			if again := Diff(final, m); len(again) != 0 {
				t.Errorf("after the steps, the difference is still %+v", again)
			}
			// A process that died after any step derives exactly the remaining ones.
			for i := range steps[:len(steps)-1] {
				rest := Diff(recorded(steps[i].State, steps[i].Op), m)
				if diff := cmp.Diff(steps[i+1:], rest); diff != "" {
					t.Errorf("after step %d, the rest (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

// TestDiffKeepsNodeProperties: Magnum shows node labels and taints only from API 1.14
// on; a poll that does not see them keeps the recorded ones in the events it makes.
func TestDiffKeepsNodeProperties(t *testing.T) {
	t.Parallel()
	s := magnumView()
	s.NodeGroups[1].NodeLabels = map[string]string{"example.org/tier": "gpu"}
	s.NodeGroups[1].NodeTaints = []v1alpha1.Taint{{Key: "k", Effect: "NoSchedule"}}
	rec := recorded(s, v1alpha1.CreateCluster)
	m := magnumView()
	m.NodeGroups[1].NodeCount, m.Cluster.NodeCount = 5, ptrTo(5)
	steps := Diff(rec, m)
	if len(steps) != 1 || steps[0].Op != v1alpha1.ResizeCluster {
		t.Fatalf("steps %v, want one resize", opsOf(steps))
	}
	g := steps[0].State.NodeGroups[1]
	if g.NodeCount != 5 || g.NodeLabels["example.org/tier"] != "gpu" || len(g.NodeTaints) != 1 {
		t.Errorf("resized group %+v lost the recorded node labels or taints", g)
	}
}

func opsOf(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, fmt.Sprintf("%s:%s", s.Op, s.NodeGroup))
	}
	return out
}

func TestDiffStepsShowOneChangeEach(t *testing.T) {
	rec := recorded(magnumView(), v1alpha1.CreateCluster)
	m := magnumView()
	m.NodeGroups[1].NodeCount = 5
	m.Cluster.ClusterTemplateID, m.Template = "t2", v1alpha1.ClusterTemplate{UUID: "t2", ImageID: "img-2"}
	m.syncCounts()
	steps := Diff(rec, m)
	if len(steps) != 2 {
		t.Fatalf("steps %v", opsOf(steps))
	}
	resize, upgrade := steps[0].State, steps[1].State
	if resize.NodeGroups[1].NodeCount != 5 || *resize.Cluster.NodeCount != 5 || resize.Template.UUID != "t1" || resize.Cluster.ClusterTemplateID != "t1" {
		t.Errorf("the resize carries more than the resize: %+v", resize)
	}
	if upgrade.Template.ImageID != "img-2" || steps[1].Params == nil || steps[1].Params.FromTemplateID != "t1" {
		t.Errorf("upgrade %+v params %+v", upgrade.Template, steps[1].Params)
	}
	if steps[0].Params == nil || *steps[0].Params.NodeCount != 5 {
		t.Errorf("resize params %+v", steps[0].Params)
	}
}
