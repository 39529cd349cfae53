package generator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// taintEffects are the effects Kubernetes (and Magnum's API) accept.
var taintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

// kubeletLabelNamespaces and kubeletLabels are the node labels of the kubernetes.io and
// k8s.io namespaces a kubelet may set on itself (the NodeRestriction admission plugin);
// with any other label of those namespaces the node never registers.
var (
	kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
	kubeletLabels          = []string{
		"beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os",
		"failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
		"kubernetes.io/arch", "kubernetes.io/hostname", "kubernetes.io/os",
		"node.kubernetes.io/instance-type", "node.kubernetes.io/windows-build",
		"topology.kubernetes.io/region", "topology.kubernetes.io/zone",
	}
)

// kubeletMaySet reports whether a kubelet may put label key on its own node.
func kubeletMaySet(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return true
	}
	restricted := prefix == "kubernetes.io" || prefix == "k8s.io" ||
		strings.HasSuffix(prefix, ".kubernetes.io") || strings.HasSuffix(prefix, ".k8s.io")
	return !restricted || slices.Contains(kubeletLabelNamespaces, prefix) || slices.Contains(kubeletLabels, key)
}

// nodeProperties renders a worker group's node_labels and node_taints (Magnum API 1.14),
// which the driver ignores: labels as the chart's nodeLabels (kubelet --node-labels),
// taints into the group's kubeadm join configuration. Both are features beyond the
// driver, held back on an adopted cluster (featureOn). Both end up in the group's
// KubeadmConfigTemplate, so changing them rolls the group's machines.
// A master group's are refused: entry is nil for one. It returns what it rendered.
func (r *render) nodeProperties(g group, entry map[string]any) (labels map[string]string, taints []v1alpha1.Taint) {
	if g.IsMaster() {
		for prop, set := range map[string]bool{"node_labels": len(g.NodeLabels) > 0, "node_taints": len(g.NodeTaints) > 0} {
			if set {
				r.p.add(g.at(prop), "may not be set on a master node group (the control plane's taints are kubeadm's)")
			}
		}
		return nil, nil
	}
	if len(g.NodeLabels) > 0 && r.featureOn("node_labels", g.at("node_labels")) {
		labels = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(g.NodeLabels)) {
			v, field := g.NodeLabels[k], g.at("node_labels."+k)
			switch {
			case len(validation.IsQualifiedName(k)) > 0:
				r.p.add(field, "%q is not a label key: %s", k, strings.Join(validation.IsQualifiedName(k), "; "))
			case k == nodeGroupLabel:
				r.p.add(field, "is the chart's own node-group label, which it sets to the group's name")
			case !kubeletMaySet(k):
				r.p.add(field, "is in a Kubernetes namespace a kubelet may not label its node with (allowed: %s, or one of %s): the node would never register",
					strings.Join(kubeletLabelNamespaces, ", "), strings.Join(kubeletLabels, ", "))
			case len(validation.IsValidLabelValue(v)) > 0:
				r.p.add(field, "%q is not a label value: %s", v, strings.Join(validation.IsValidLabelValue(v), "; "))
			default:
				labels[k] = v
			}
		}
		values := make(map[string]any, len(labels))
		for k, v := range labels {
			values[k] = v
		}
		entry["nodeLabels"] = values
	}
	if len(g.NodeTaints) > 0 && r.featureOn("node_taints", g.at("node_taints")) {
		list := make([]any, 0, len(g.NodeTaints))
		seen := map[string]bool{}
		for i, t := range g.NodeTaints {
			field := g.at(fmt.Sprintf("node_taints[%d]", i))
			switch {
			case len(validation.IsQualifiedName(t.Key)) > 0:
				r.p.add(field+".key", "%q is not a taint key: %s", t.Key, strings.Join(validation.IsQualifiedName(t.Key), "; "))
			case t.Value != "" && len(validation.IsValidLabelValue(t.Value)) > 0:
				r.p.add(field+".value", "%q is not a taint value: %s", t.Value, strings.Join(validation.IsValidLabelValue(t.Value), "; "))
			case !slices.Contains(taintEffects, t.Effect):
				r.p.add(field+".effect", "%q: want one of %s", t.Effect, strings.Join(taintEffects, ", "))
			case seen[t.Key+":"+t.Effect]:
				r.p.add(field, "taint %s:%s is listed twice (Kubernetes keeps one per key and effect)", t.Key, t.Effect)
			default:
				seen[t.Key+":"+t.Effect] = true
				taint := map[string]any{"key": t.Key, "effect": t.Effect}
				if t.Value != "" {
					taint["value"] = t.Value
				}
				list = append(list, taint)
				taints = append(taints, t)
			}
		}
		entry["kubeadmConfigSpec"] = map[string]any{
			"joinConfiguration": map[string]any{"nodeRegistration": map[string]any{"taints": list}},
		}
	}
	return labels, taints
}
