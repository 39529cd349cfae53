package v1alpha1_test

import (
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// TestNodeGroupField: a node group is named by its name, as the operator knows it, unless
// the name cannot tell it apart.
func TestNodeGroupField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		names []string
		i     int
		want  string
	}{
		{"by name", []string{"default-master", "default-worker", "gpu"}, 2, "nodegroups[gpu]"},
		{"empty name", []string{"default-master", ""}, 1, "nodegroups[1]"},
		{"a number reads as an index", []string{"default-master", "7"}, 1, "nodegroups[1]"},
		{"a name two groups share", []string{"workers", "workers"}, 1, "nodegroups[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := &v1alpha1.ClusterEvent{}
			for _, n := range tc.names {
				ev.NodeGroups = append(ev.NodeGroups, v1alpha1.NodeGroup{Name: n})
			}
			if got := ev.NodeGroupField(tc.i); got != tc.want {
				t.Errorf("NodeGroupField(%d) = %q, want %q", tc.i, got, tc.want)
			}
		})
	}
}
