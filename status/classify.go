package status

import (
	"strings"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// API groups whose objects the reader tells apart.
const (
	// FluxHelmGroup is the API group of Flux's HelmRelease.
	FluxHelmGroup = "helm.toolkit.fluxcd.io"
	// FluxKustomizeGroup is the API group of Flux's Kustomization.
	FluxKustomizeGroup = "kustomize.toolkit.fluxcd.io"
	addonsGroup        = "addons.stackhpc.com"
)

// Classify picks one cluster's objects out of a list, by group, kind, name and labels.
// Flux's HelmRelease and the addon provider's HelmRelease share a kind name and are told
// apart by group.
func Classify(objs []*unstructured.Unstructured, stackID, namespace string) Objects {
	var o Objects
	kcpName := magnum.ChartComponentName(stackID, "control-plane")
	for _, u := range objs {
		if isApplication(u) {
			// Argo CD's namespace holds it; it deploys into the cluster's.
			if u.GetName() == stackID && (namespace == "" || stringAt(u, "spec", "destination", "namespace") == namespace) {
				o.Application = u
			}
			continue
		}
		if namespace != "" && u.GetNamespace() != "" && u.GetNamespace() != namespace && u.GetKind() != "Kustomization" {
			continue
		}
		group, _ := splitAPIVersion(u)
		gvk := struct{ Group, Kind string }{group, kindOf(u)}
		l := func(k string) string { return label(u, k) }
		switch {
		case gvk.Group == FluxHelmGroup && gvk.Kind == "HelmRelease" && u.GetName() == stackID:
			o.HelmRelease = u
		case gvk.Group == FluxKustomizeGroup && gvk.Kind == "Kustomization":
			o.Kustomization = u
		case gvk.Group == "cluster.x-k8s.io" && gvk.Kind == "Cluster" && u.GetName() == stackID:
			o.Cluster = u
		case gvk.Group == "controlplane.cluster.x-k8s.io" && u.GetName() == kcpName:
			o.ControlPlane = u
		case gvk.Group == infrastructureGroup && isInfraClusterKind(gvk.Kind) && u.GetName() == stackID:
			o.InfraCluster = u
		case gvk.Group == "cluster.x-k8s.io" && gvk.Kind == "MachineDeployment" && (l(magnum.LabelChartCluster) == stackID || stringAt(u, "spec", "clusterName") == stackID):
			o.MachineDeployments = append(o.MachineDeployments, u)
		case gvk.Group == "cluster.x-k8s.io" && gvk.Kind == "Machine" && (l(magnum.LabelClusterName) == stackID || l(magnum.LabelChartCluster) == stackID):
			o.Machines = append(o.Machines, u)
		case gvk.Group == addonsGroup && (l(magnum.LabelChartCluster) == stackID || l(magnum.LabelAddonCluster) == stackID):
			o.Addons = append(o.Addons, u)
		}
	}
	return o
}

// isInfraClusterKind tells an infrastructure provider's cluster kind (OpenStackCluster,
// DevCluster, …: the contract names them <Provider>Cluster) from its other kinds.
func isInfraClusterKind(kind string) bool { return strings.HasSuffix(kind, "Cluster") }

// OptionsFor sets the create deadline from the cluster's create_timeout (minutes).
func OptionsFor(ev *v1alpha1.ClusterEvent, opts Options) Options {
	if t := ev.Cluster.CreateTimeout; t != nil && *t > 0 {
		opts.CreateTimeout = time.Duration(*t) * time.Minute
	}
	return opts
}
