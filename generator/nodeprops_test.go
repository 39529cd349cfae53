package generator_test

import (
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// withNodeProperties gives the fixture's default worker group node labels and taints, as
// Magnum's API 1.14 stores them.
func withNodeProperties(labels map[string]string, taints ...v1alpha1.Taint) func(*v1alpha1.ClusterEvent, *generator.Config) {
	return func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		for i := range ev.NodeGroups {
			if ev.NodeGroups[i].Name == "default-worker" {
				ev.NodeGroups[i].NodeLabels, ev.NodeGroups[i].NodeTaints = labels, taints
			}
		}
	}
}

// TestNodePropertiesReachTheNodes: a worker group's node_labels and node_taints reach its
// KubeadmConfigTemplate in every chart version — labels as kubelet --node-labels beside
// the chart's node-group label, taints in the join configuration beside the chart's
// kubelet arguments — and each is a deviation from the driver, which ignores them.
func TestNodePropertiesReachTheNodes(t *testing.T) {
	t.Parallel()
	set := withNodeProperties(map[string]string{"example.org/tier": "gpu", "node.kubernetes.io/pool": "a"},
		v1alpha1.Taint{Key: "example.org/dedicated", Value: "gpu", Effect: "NoSchedule"},
		v1alpha1.Taint{Key: "example.org/spot", Effect: "PreferNoSchedule"})
	for _, version := range chartVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			res, err := renderResult(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
				chartLabel(version)(ev, cfg)
				set(ev, cfg)
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"nodegroups[default-worker].node_labels", "nodegroups[default-worker].node_taints"} {
				if !hasDeviation(res, key) {
					t.Errorf("no deviation for %s: %v", key, res.Deviations)
				}
			}
			var kct map[string]any
			for _, o := range renderChart(t, version, res, res.Values) {
				if o.GetKind() == "KubeadmConfigTemplate" && o.GetLabels()["capi.stackhpc.com/node-group"] == "default-worker" {
					kct = o.Object
				}
			}
			if kct == nil {
				t.Fatal("no KubeadmConfigTemplate for default-worker")
			}
			reg := at(kct, "spec.template.spec.joinConfiguration.nodeRegistration").(map[string]any)
			args, _ := reg["kubeletExtraArgs"].(map[string]any)
			labels, _ := args["node-labels"].(string)
			for _, want := range []string{"capi.stackhpc.com/node-group=default-worker", "example.org/tier=gpu", "node.kubernetes.io/pool=a"} {
				if !strings.Contains(labels, want) {
					t.Errorf("kubelet node-labels %q lack %s", labels, want)
				}
			}
			if args["cloud-provider"] != "external" {
				t.Errorf("the chart's kubelet arguments were lost: %v", args)
			}
			taints, _ := reg["taints"].([]any)
			if got := string(mustJSON(t, taints)); len(taints) != 2 || !strings.Contains(got, `"example.org/dedicated"`) || !strings.Contains(got, `"PreferNoSchedule"`) {
				t.Errorf("join configuration taints = %s", got)
			}
		})
	}
}

// TestNodePropertiesRefused: what the kubelet or the API server would refuse is refused
// here, naming the node group by its name and the label or taint.
func TestNodePropertiesRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		set   func(*v1alpha1.ClusterEvent, *generator.Config)
		field string
	}{
		{"a restricted label namespace", withNodeProperties(map[string]string{"node-role.kubernetes.io/gpu": ""}),
			"nodegroups[default-worker].node_labels.node-role.kubernetes.io/gpu"},
		{"the chart's own label", withNodeProperties(map[string]string{"capi.stackhpc.com/node-group": "x"}),
			"nodegroups[default-worker].node_labels.capi.stackhpc.com/node-group"},
		{"a bad key", withNodeProperties(map[string]string{"a b": "x"}), "nodegroups[default-worker].node_labels.a b"},
		{"a bad value", withNodeProperties(map[string]string{"tier": "a,b=c"}), "nodegroups[default-worker].node_labels.tier"},
		{"a bad effect", withNodeProperties(nil, v1alpha1.Taint{Key: "k", Effect: "NoRun"}), "nodegroups[default-worker].node_taints[0].effect"},
		{"a bad taint key", withNodeProperties(nil, v1alpha1.Taint{Key: "", Effect: "NoSchedule"}), "nodegroups[default-worker].node_taints[0].key"},
		{"a taint twice", withNodeProperties(nil, v1alpha1.Taint{Key: "k", Effect: "NoSchedule"}, v1alpha1.Taint{Key: "k", Value: "v", Effect: "NoSchedule"}),
			"nodegroups[default-worker].node_taints[1]"},
		{"on the control plane", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups[0].NodeTaints = []v1alpha1.Taint{{Key: "k", Effect: "NoSchedule"}}
		}, "nodegroups[default-master].node_taints"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := renderResult(t, tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.field+":") {
				t.Errorf("err = %v, want a refusal naming %s", err, tc.field)
			}
		})
	}
}

// TestNodePropertiesOnAdoptedClusters: node labels and taints the driver ignored stay
// ignored on an adopted cluster until adopted_features names them.
func TestNodePropertiesOnAdoptedClusters(t *testing.T) {
	t.Parallel()
	set := withNodeProperties(map[string]string{"example.org/tier": "gpu"}, v1alpha1.Taint{Key: "k", Effect: "NoSchedule"})
	for _, tc := range []struct {
		optIn          string
		labels, taints bool
	}{{"", false, false}, {"node_labels", true, false}, {"node_taints,node_labels", true, true}} {
		res, err := renderResult(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			set(ev, cfg)
			adopt(ev)
			if tc.optIn != "" {
				ev.Cluster.Labels["adopted_features"] = tc.optIn
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		worker := at(jsonData(t, res.Values), "nodeGroups").([]any)[0].(map[string]any)
		if _, got := worker["nodeLabels"]; got != tc.labels {
			t.Errorf("adopted_features %q: nodeLabels rendered %v, want %v", tc.optIn, got, tc.labels)
		}
		if _, got := worker["kubeadmConfigSpec"]; got != tc.taints {
			t.Errorf("adopted_features %q: taints rendered %v, want %v", tc.optIn, got, tc.taints)
		}
	}
}

// TestNodePropertiesScaleFromZero: an empty autoscaled group tells the autoscaler the
// labels and taints its nodes will have, or a pod selecting them never scales it up.
func TestNodePropertiesScaleFromZero(t *testing.T) {
	t.Parallel()
	ev := featureEvent(t, "scale-from-zero")
	for i := range ev.NodeGroups {
		if ev.NodeGroups[i].Name == "gpu-a100" {
			ev.NodeGroups[i].NodeLabels = map[string]string{"example.org/tier": "gpu"}
			ev.NodeGroups[i].NodeTaints = []v1alpha1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}, {Key: "example.org/spot", Effect: "NoExecute"}}
		}
	}
	res, err := render(ev, defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	patches := string(mustJSON(t, res.Objects.HelmRelease.Spec.PostRenderers))
	for _, want := range []string{
		`capacity.cluster-autoscaler.kubernetes.io/labels: capi.stackhpc.com/node-group=gpu-a100,example.org/tier=gpu\n`,
		`capacity.cluster-autoscaler.kubernetes.io/taints: nvidia.com/gpu=present:NoSchedule,example.org/spot=:NoExecute\n`,
	} {
		if !strings.Contains(patches, want) {
			t.Errorf("post-renderers lack %s:\n%s", want, patches)
		}
	}
}
