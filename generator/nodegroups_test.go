package generator_test

import (
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestParityAutoscaling checks docs/driver-rules.md, "Node groups and autoscaling".
func TestParityAutoscaling(t *testing.T) {
	t.Parallel()
	worker := func(v map[string]any) map[string]any { return at(v, "nodeGroups").([]any)[0].(map[string]any) }
	t.Run("off: no keys, no validation", func(t *testing.T) {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.NodeGroups[1].MinNodeCount = ptrTo(0) })
		if w := worker(v); len(w) != 3 {
			t.Errorf("worker = %v, want only name, machineFlavor, machineCount", w)
		}
	})
	t.Run("default worker min 1 is unset: min = max, no autoscale", func(t *testing.T) {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"auto_scaling_enabled": "true"}
		})
		if _, ok := worker(v)["autoscale"]; ok {
			t.Errorf("worker = %v, want no autoscale (test_nodegroup_node_count_min_max_equal)", worker(v))
		}
	})
	t.Run("labels set the default worker's range", func(t *testing.T) {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"auto_scaling_enabled": "true", "min_node_count": "2", "max_node_count": "6"}
		})
		w := worker(v)
		if w["autoscale"] != true || w["machineCountMin"] != 2.0 || w["machineCountMax"] != 6.0 || w["machineCount"] != 3.0 {
			t.Errorf("worker = %v", w)
		}
	})
	t.Run("site defaults apply to the default worker only", func(t *testing.T) {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Magnum.CapiHelmClusterLabels.AutoScalingEnabled = true
			cfg.Magnum.CapiHelmClusterLabels.MaxNodeCount = ptrTo(9)
			ev.NodeGroups = append(ev.NodeGroups, v1alpha1.NodeGroup{Name: "extra", FlavorID: "m1.medium", NodeCount: 2, MinNodeCount: ptrTo(2)})
		})
		groups := at(v, "nodeGroups").([]any)
		if w := groups[0].(map[string]any); w["machineCountMax"] != 9.0 || w["machineCountMin"] != 3.0 {
			t.Errorf("default worker = %v", w)
		}
		if e := groups[1].(map[string]any); e["autoscale"] != nil {
			t.Errorf("extra group = %v, want no autoscale (min = max = 2)", e)
		}
	})
}

// TestFidelityNodeGroupNames: the chart's name rule applies from 0.15.0 on only.
func TestFidelityNodeGroupNames(t *testing.T) {
	t.Parallel()
	short := func(v string) func(*v1alpha1.ClusterEvent, *generator.Config) {
		return func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			chartLabel(v)(ev, cfg)
			ev.NodeGroups[1].Name = "x"
		}
	}
	if _, err := renderResult(t, short("0.10.1")); err != nil {
		t.Errorf("chart 0.10.1 renders a group called x: %v", err)
	}
	if _, err := renderResult(t, short("0.27.0")); err == nil || !strings.Contains(err.Error(), "nodegroups[x].name") {
		t.Errorf("chart 0.27.0: %v, want the chart's name rule", err)
	}
}
