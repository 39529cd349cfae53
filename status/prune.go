package status

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// ArgoTrackingAnnotation is how Argo CD marks the objects an Application applied (its
// default resource tracking): "<application>:<group>/<kind>:<namespace>/<name>".
const ArgoTrackingAnnotation = "argocd.argoproj.io/tracking-id"

// ObjectRef names one object of the management cluster.
type ObjectRef struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

// wantedMachineDeployments names the MachineDeployments the Magnum view asks for: one per
// worker node group not being deleted.
func wantedMachineDeployments(v View) map[string]bool {
	wanted := map[string]bool{}
	for _, ng := range v.NodeGroups {
		if ng.Role == v1alpha1.RoleMaster || ng.Status.Action() == v1alpha1.ActionDelete {
			continue
		}
		wanted[magnum.ChartComponentName(v.StackID, magnum.SanitizedName(ng.Name))] = true
	}
	return wanted
}

// LeftOver is leftOver for a caller that needs nothing else of the judgement (serve's
// leader, every few seconds over the fleet): the GitOps chain is judged only for a cluster
// that has a candidate at all, which almost none has.
func LeftOver(v View, o Objects, opts Options) []ObjectRef {
	if o.Application == nil || o.HelmRelease != nil || v.Status.Action() == v1alpha1.ActionDelete {
		return nil
	}
	wanted := wantedMachineDeployments(v)
	if !slices.ContainsFunc(o.MachineDeployments, func(md *unstructured.Unstructured) bool { return !wanted[md.GetName()] }) {
		return nil
	}
	pending, _ := revisionPending(v, o, opts)
	return leftOver(v, o, gitopsChain(v, o, opts, pending, conditionCache{}))
}

// leftOver is what the GitOps tool leaves of a cluster once it has applied the commit,
// which serve deletes itself. Flux leaves nothing: Helm deletes what a release no longer
// renders. Argo CD never prunes a MachineDeployment: Cluster API makes the Cluster its
// owner, and Argo CD leaves an object with an owner out of what it manages, so a deleted
// node group's MachineDeployment would stay, its machines running. Only one the cluster's
// Application applied (its tracking annotation names the Application), that no node group
// wants, that is not being deleted yet, that the Application no longer lists among its
// resources (status.resources: what its desired state holds, so Argo CD's own word that
// the commit removed it, beside the Magnum view's), and only once the Application is at
// the commit (gitops is nil): before that, Argo CD may still be applying a group the view
// wants.
func leftOver(v View, o Objects, gitops *blocker) []ObjectRef {
	if gitops != nil || o.Application == nil || o.HelmRelease != nil || v.Status.Action() == v1alpha1.ActionDelete {
		return nil
	}
	listed, known := applicationResources(o.Application)
	if !known {
		return nil
	}
	wanted := wantedMachineDeployments(v)
	var out []ObjectRef
	for _, md := range o.MachineDeployments {
		if wanted[md.GetName()] || md.GetDeletionTimestamp() != nil || !trackedBy(md, o.Application.GetName()) ||
			listed[md.GroupVersionKind().Kind+"/"+md.GetNamespace()+"/"+md.GetName()] {
			continue
		}
		out = append(out, ObjectRef{GVK: md.GroupVersionKind(), Namespace: md.GetNamespace(), Name: md.GetName()})
	}
	return out
}

// trackedBy tells whether Argo CD's Application app applied u. An Application outside
// Argo CD's own namespace is spelled "<namespace>_<name>" in the annotation.
func trackedBy(u *unstructured.Unstructured, app string) bool {
	owner, _, ok := strings.Cut(u.GetAnnotations()[ArgoTrackingAnnotation], ":")
	if !ok {
		return false
	}
	if _, name, qualified := strings.Cut(owner, "_"); qualified {
		owner = name
	}
	return owner == app
}

// applicationResources are the objects an Application lists in status.resources, as
// kind/namespace/name; known is false while it lists none (not compared yet), when
// nothing may be taken as gone from its desired state.
func applicationResources(app *unstructured.Unstructured) (listed map[string]bool, known bool) {
	list := sliceAt(app, "status", "resources")
	if len(list) == 0 {
		return nil, false
	}
	listed = make(map[string]bool, len(list))
	for _, r := range list {
		listed[str(r["kind"])+"/"+str(r["namespace"])+"/"+str(r["name"])] = true
	}
	return listed, true
}
