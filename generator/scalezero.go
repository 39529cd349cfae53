package generator

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// Annotations the cluster-autoscaler's Cluster API provider reads on a MachineDeployment to
// know what a node of an empty group would offer, so it can scale the group up from zero.
const (
	capacityPrefix = "capacity.cluster-autoscaler.kubernetes.io/"
	// nodeGroupLabel is the node label the chart puts on every worker (projectPrefix
	// capi.stackhpc.com): pods selecting a node group must see it on the template node.
	nodeGroupLabel = "capi.stackhpc.com/node-group"
	// defaultGPUType is the extended resource NVIDIA's device plugin advertises.
	defaultGPUType = "nvidia.com/gpu"
)

var gpuTypeRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?/[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)

// zeroGroup is an autoscaled node group whose minimum is 0.
type zeroGroup struct {
	group
	// name is the group's chart name.
	name string
	// nodeLabels and taints are the group's node_labels and node_taints as rendered
	// (none when held back or refused).
	nodeLabels map[string]string
	taints     []v1alpha1.Taint
}

// allowScaleFromZero says whether a minimum of lo machines is allowed: the driver requires
// at least 1; a chart from 0.26.0 on accepts 0, which is scale-from-zero.
func (r *render) allowScaleFromZero(lo int) bool {
	return lo == 0 && r.chart.atLeast(scaleFromZeroSince)
}

// scaleFromZeroHint completes the driver's refusal of a minimum of 0 on older charts.
func (r *render) scaleFromZeroHint(lo int) string {
	if lo != 0 {
		return ""
	}
	return fmt.Sprintf("; chart %s cannot scale from zero (openstack-cluster %s or newer can)", r.chartLabel(), scaleFromZeroSince)
}

// scaleFromZero annotates every group that may scale from zero with the capacity of one of
// its nodes, derived from the group's Nova flavor (resolved.flavors), its root volume and
// its GPU labels. The chart has no value for MachineDeployment annotations (up to 0.27.0),
// so they are set by a post-renderer patch.
func (r *render) scaleFromZero(v map[string]any) {
	for _, zg := range r.zeroGroups {
		g := zg.group
		f, ok := r.ev.Resolved.Flavors[g.FlavorID]
		if !ok {
			r.p.add(g.at("flavor_id"), "scaling %s from zero needs the size of flavor %q in resolved.flavors (the autoscaler must know what a node offers)", g.Name, g.FlavorID)
			continue
		}
		ann := map[string]any{
			capacityPrefix + "cpu":    fmt.Sprint(f.VCPUs),
			capacityPrefix + "memory": fmt.Sprintf("%dMi", f.RAMMB),
			capacityPrefix + "labels": zeroGroupLabels(zg),
		}
		if taints := zeroGroupTaints(zg); taints != "" {
			ann[capacityPrefix+"taints"] = taints
		}
		// The node's disk: its root volume when it boots from one, else the flavor's disk.
		if rv, ok := section(v, "nodeGroupDefaults")["machineRootVolume"].(map[string]any); ok {
			if size, ok := rv["diskSize"].(int); ok && size > 0 {
				ann[capacityPrefix+"ephemeral-disk"] = fmt.Sprintf("%dGi", size)
			}
		} else if f.DiskGB > 0 {
			ann[capacityPrefix+"ephemeral-disk"] = fmt.Sprintf("%dGi", f.DiskGB)
		}
		count, countField, hasCount := r.groupFeature(g, "autoscaler_gpu_count")
		gpuType, typeField, hasType := r.groupFeature(g, "autoscaler_gpu_type")
		switch {
		case hasCount:
			n, ok := r.featureInt(countField, count, 1, 64)
			if !ok {
				continue
			}
			if !hasType {
				gpuType = defaultGPUType
			} else if !gpuTypeRE.MatchString(gpuType) {
				r.p.add(typeField, "%q is not an extended resource name (e.g. nvidia.com/gpu)", gpuType)
				continue
			}
			ann[capacityPrefix+"gpu-count"] = fmt.Sprint(n)
			ann[capacityPrefix+"gpu-type"] = gpuType
		case hasType:
			r.p.add(typeField, "needs autoscaler_gpu_count")
			continue
		}
		name := magnum.ChartComponentName(r.release, zg.name)
		r.postRender(g.at("min_node_count"), "scaling "+strings.TrimSpace(g.Name)+" from zero (capacity annotations)",
			capiGroup, "MachineDeployment", name, map[string]any{"metadata": map[string]any{"annotations": ann}})
	}
}

// zeroGroupLabels is the labels annotation of an empty group: the chart's node-group label
// and the group's node_labels, as its nodes will have them, so that a pod selecting them
// scales the group up.
func zeroGroupLabels(zg zeroGroup) string {
	labels := []string{nodeGroupLabel + "=" + zg.name}
	for k, v := range zg.nodeLabels {
		labels = append(labels, k+"="+v)
	}
	slices.Sort(labels[1:])
	return strings.Join(labels, ",")
}

// zeroGroupTaints is the taints annotation of an empty group (key=value:effect, comma
// separated), so that the autoscaler knows which pods its nodes will accept.
func zeroGroupTaints(zg zeroGroup) string {
	out := make([]string, 0, len(zg.taints))
	for _, t := range zg.taints {
		out = append(out, t.Key+"="+t.Value+":"+t.Effect)
	}
	return strings.Join(out, ",")
}
