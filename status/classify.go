package status

import (
	"time"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Label keys the chart and the addon provider put on a cluster's objects.
const (
	labelChartCluster  = "capi.stackhpc.com/cluster"
	labelAddonCluster  = "addons.stackhpc.com/cluster"
	labelCAPICluster   = "cluster.x-k8s.io/cluster-name"
	fluxHelmGroup      = "helm.toolkit.fluxcd.io"
	fluxKustomizeGroup = "kustomize.toolkit.fluxcd.io"
	addonsGroup        = "addons.stackhpc.com"
)

// Classify picks one cluster's objects out of a list, by group, kind, name and labels.
// Flux's HelmRelease and the addon provider's HelmRelease share a kind name and are told
// apart by group.
func Classify(objs []*unstructured.Unstructured, stackID, namespace string) Objects {
	var o Objects
	kcpName := generator.ChartComponentName(stackID, "control-plane")
	for _, u := range objs {
		if namespace != "" && u.GetNamespace() != "" && u.GetNamespace() != namespace && u.GetKind() != "Kustomization" {
			continue
		}
		group, _ := splitAPIVersion(u)
		gvk := struct{ Group, Kind string }{group, kindOf(u)}
		l := func(k string) string { return label(u, k) }
		switch {
		case gvk.Group == fluxHelmGroup && gvk.Kind == "HelmRelease" && u.GetName() == stackID:
			o.HelmRelease = u
		case gvk.Group == fluxKustomizeGroup && gvk.Kind == "Kustomization":
			o.Kustomization = u
		case gvk.Group == "cluster.x-k8s.io" && gvk.Kind == "Cluster" && u.GetName() == stackID:
			o.Cluster = u
		case gvk.Group == "controlplane.cluster.x-k8s.io" && u.GetName() == kcpName:
			o.ControlPlane = u
		case gvk.Group == "infrastructure.cluster.x-k8s.io" && gvk.Kind == "OpenStackCluster" && u.GetName() == stackID:
			o.InfraCluster = u
		case gvk.Group == "cluster.x-k8s.io" && gvk.Kind == "MachineDeployment" && (l(labelChartCluster) == stackID || stringAt(u, "spec", "clusterName") == stackID):
			o.MachineDeployments = append(o.MachineDeployments, u)
		case gvk.Group == "cluster.x-k8s.io" && gvk.Kind == "Machine" && (l(labelCAPICluster) == stackID || l(labelChartCluster) == stackID):
			o.Machines = append(o.Machines, u)
		case gvk.Group == addonsGroup && (l(labelChartCluster) == stackID || l(labelAddonCluster) == stackID):
			o.Addons = append(o.Addons, u)
		}
	}
	return o
}

// ViewFromEvent builds the Magnum view from a ClusterEvent document whose cluster and
// node groups carry their current Magnum status (and updated_at).
func ViewFromEvent(ev *generator.ClusterEvent, namespacePrefix string) View {
	c := ev.Cluster
	v := View{ClusterUUID: c.UUID, Name: c.Name, StackID: c.StackID, Status: c.Status,
		Namespace: generator.Namespace(namespacePrefix, c.ProjectID)}
	if v.StackID == "" {
		v.StackID = generator.GenerateReleaseName(c.Name, c.UUID)
	}
	if t, err := time.Parse(time.RFC3339, c.UpdatedAt); err == nil {
		v.Since = t
	}
	for _, ng := range ev.NodeGroups {
		v.NodeGroups = append(v.NodeGroups, NodeGroupView{Name: ng.Name, Role: ng.Role, Status: ng.Status,
			IsDefault: ng.IsDefault, NodeCount: ng.NodeCount})
	}
	if len(v.NodeGroups) == 0 {
		masters, workers := 1, 1
		if c.MasterCount != nil {
			masters = *c.MasterCount
		}
		if c.NodeCount != nil {
			workers = *c.NodeCount
		}
		v.NodeGroups = []NodeGroupView{
			{Name: "default-master", Role: "master", Status: c.Status, IsDefault: true, NodeCount: masters},
			{Name: "default-worker", Role: "worker", Status: c.Status, IsDefault: true, NodeCount: workers}}
	}
	return v
}

// OptionsFor sets the create deadline from the cluster's create_timeout (minutes).
func OptionsFor(ev *generator.ClusterEvent, opts Options) Options {
	if t := ev.Cluster.CreateTimeout; t != nil && *t > 0 {
		opts.CreateTimeout = time.Duration(*t) * time.Minute
	}
	return opts
}
