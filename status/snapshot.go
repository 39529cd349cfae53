package status

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fluxHelmRelease is Flux's HelmRelease, as the reader reads it.
var fluxHelmRelease = schema.GroupVersionKind{Group: FluxHelmGroup, Version: "v2", Kind: "HelmRelease"}

// Kinds are what the reader watches: the Flux HelmRelease and the Cluster API, CAPO and
// addon objects of every cluster, read as v1beta1 (the chart's version; CAPI converts).
// TakeSnapshot adds the infrastructure cluster kinds the Clusters name, when not CAPO's.
var Kinds = []schema.GroupVersionKind{
	fluxHelmRelease,
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"},
	{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta1", Kind: "KubeadmControlPlane"},
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "MachineDeployment"},
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"},
	{Group: infrastructureGroup, Version: "v1beta1", Kind: "OpenStackCluster"},
	{Group: addonsGroup, Version: "v1alpha1", Kind: "HelmRelease"},
	{Group: addonsGroup, Version: "v1alpha1", Kind: "Manifests"},
	{Group: FluxKustomizeGroup, Version: "v1", Kind: "Kustomization"},
}

// KindsOf is what the reader lists for a repository's output format: Kinds, and in Argo
// mode Argo CD's Application too. A Flux site is never asked to let serve read
// Applications, nor to have their CRD.
func KindsOf(argo bool) []schema.GroupVersionKind {
	if !argo {
		return Kinds
	}
	return append(slices.Clone(Kinds), argoApplication)
}

// infrastructureGroup is the API group of every infrastructure provider's kinds.
const infrastructureGroup = "infrastructure.cluster.x-k8s.io"

// DefaultKustomization is the Flux Kustomization that applies the repository, as in
// deploy/flux/kustomization.yaml.
const DefaultKustomization = "flux-system/magnum-clusters"

// Source lists every object of a kind. A controller-runtime cache answers from its
// informers, so a sweep costs one LIST and one WATCH per kind, however many clusters.
type Source interface {
	List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error)
}

// StaticSource serves a fixed list of objects (a file, a test).
type StaticSource []*unstructured.Unstructured

// List implements Source.
func (s StaticSource) List(_ context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range s {
		if g, _ := splitAPIVersion(o); g == gvk.Group && kindOf(o) == gvk.Kind {
			out = append(out, o)
		}
	}
	return out, nil
}

// Snapshot indexes one listing of every kind by cluster.
type Snapshot struct {
	byCluster      map[string][]*unstructured.Unstructured // namespace/R → its objects
	kustomizations map[string]*unstructured.Unstructured   // namespace/name
	addonsUnknown  bool
	// Kustomization names (namespace/name) the Flux Kustomization whose applied revision is
	// compared with a view's Revision; DefaultKustomization unless set.
	Kustomization string
	// PerNamespace, in the per-namespace repository layout, is the Flux namespace in which
	// each project namespace has its own Kustomization (magnum.FluxObjectName): a
	// cluster's revision is compared with what that one applied.
	PerNamespace string
}

// TakeSnapshot lists every kind of kinds (KindsOf) once. A kind whose CRD is absent contributes nothing
// (addons then count as Unknown); any other error fails the snapshot.
func TakeSnapshot(ctx context.Context, src Source, kinds []schema.GroupVersionKind) (*Snapshot, error) {
	s := &Snapshot{byCluster: map[string][]*unstructured.Unstructured{},
		kustomizations: map[string]*unstructured.Unstructured{}, Kustomization: DefaultKustomization}
	for i := 0; i < len(kinds); i++ {
		gvk := kinds[i]
		objs, err := src.List(ctx, gvk)
		if meta.IsNoMatchError(err) {
			// An absent CRD: that state is Unknown, not an error.
			if gvk.Group == addonsGroup {
				s.addonsUnknown = true
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvk.GroupKind(), err)
		}
		if gvk.Kind == "Cluster" && gvk.Group == "cluster.x-k8s.io" {
			kinds = withInfrastructureKinds(kinds, objs)
		}
		for _, o := range objs {
			if gvk.Group == FluxKustomizeGroup {
				s.kustomizations[o.GetNamespace()+"/"+o.GetName()] = o
				continue
			}
			if gvk.Group == ArgoGroup {
				// The repository's Application is named like a Kustomization (serve.kustomization:
				// argocd/magnum-clusters); a cluster's own deploys into the cluster's namespace.
				s.kustomizations[o.GetNamespace()+"/"+o.GetName()] = o
				if dest := stringAt(o, "spec", "destination", "namespace"); dest != "" {
					s.byCluster[dest+"/"+o.GetName()] = append(s.byCluster[dest+"/"+o.GetName()], o)
				}
				continue
			}
			key := o.GetNamespace() + "/" + clusterOf(o)
			s.byCluster[key] = append(s.byCluster[key], o)
		}
	}
	return s, nil
}

// withInfrastructureKinds adds to kinds, once each, the infrastructure cluster kinds the
// Clusters refer to (spec.infrastructureRef): a site's post-renderers may put its clusters
// on another provider than CAPO, and the status must follow the kind the Cluster really
// uses. kinds is never modified in place: Kinds is shared.
func withInfrastructureKinds(kinds []schema.GroupVersionKind, clusters []*unstructured.Unstructured) []schema.GroupVersionKind {
	for _, c := range clusters {
		ref, _, _ := unstructured.NestedStringMap(c.Object, "spec", "infrastructureRef")
		gv, err := schema.ParseGroupVersion(ref["apiVersion"])
		if err != nil || gv.Group != infrastructureGroup || ref["kind"] == "" {
			continue
		}
		gvk := gv.WithKind(ref["kind"])
		if !slices.Contains(kinds, gvk) {
			kinds = append(slices.Clip(kinds), gvk)
		}
	}
	return kinds
}

// clusterOf names the cluster an object belongs to.
func clusterOf(o *unstructured.Unstructured) string {
	for _, k := range []string{magnum.LabelChartCluster, magnum.LabelClusterName, magnum.LabelAddonCluster} {
		if v := label(o, k); v != "" {
			return v
		}
	}
	if c := stringAt(o, "spec", "clusterName"); c != "" {
		return c
	}
	return o.GetName() // the Flux HelmRelease, Cluster and OpenStackCluster are named R
}

// Objects returns one cluster's objects.
func (s *Snapshot) Objects(v View) Objects {
	o := Classify(s.byCluster[v.Namespace+"/"+v.StackID], v.StackID, v.Namespace)
	o.AddonsUnknown = s.addonsUnknown
	o.Kustomization = s.kustomizations[s.KustomizationFor(v.Namespace)]
	return o
}

// KustomizationFor names (namespace/name) the Kustomization that applies a namespace's
// clusters.
func (s *Snapshot) KustomizationFor(namespace string) string {
	if s.PerNamespace != "" {
		return s.PerNamespace + "/" + magnum.FluxObjectName(namespace)
	}
	return s.Kustomization
}

// Discover makes a view for every Flux HelmRelease (or Argo CD Application) magnum-gitops manages, as if an update
// were in progress, so that the judgement says where each cluster stands when Magnum's
// side is not at hand. The node groups come from the release's values.
func (s *Snapshot) Discover() []View {
	var out []View
	for _, objs := range s.byCluster {
		for _, hr := range objs {
			g, _ := splitAPIVersion(hr)
			argo := isApplication(hr)
			// A namespace's parent Application (the per-namespace layouts in Argo mode) is
			// magnum-gitops' too, but of no cluster.
			if !argo && (g != FluxHelmGroup || kindOf(hr) != "HelmRelease") || label(hr, magnum.LabelManagedBy) != magnum.ManagedBy ||
				argo && label(hr, magnum.LabelClusterUUID) == "" {
				continue
			}
			raw, _, _ := unstructured.NestedFieldNoCopy(hr.Object, "spec", "values")
			values, _ := raw.(map[string]any)
			ns := hr.GetNamespace()
			if argo {
				values, ns = applicationValues(hr), stringAt(hr, "spec", "destination", "namespace")
			}
			out = append(out, View{ClusterUUID: label(hr, magnum.LabelClusterUUID), StackID: hr.GetName(),
				Name: hr.GetAnnotations()[magnum.AnnotationClusterName], Namespace: ns,
				Status: v1alpha1.UpdateInProgress, NodeGroups: nodeGroupsFromValues(values)})
		}
	}
	slices.SortFunc(out, func(a, b View) int { return cmp.Compare(a.Namespace+"/"+a.StackID, b.Namespace+"/"+b.StackID) })
	return out
}

// nodeGroupsFromValues reads the node groups of chart values (a HelmRelease's
// spec.values, an Application's applicationValues): the control plane and every nodeGroups
// entry.
func nodeGroupsFromValues(values map[string]any) []NodeGroupView {
	out := []NodeGroupView{{Name: v1alpha1.DefaultMasterNodeGroup, Role: v1alpha1.RoleMaster, Status: v1alpha1.UpdateInProgress, IsDefault: true}}
	groups, _, _ := unstructured.NestedSlice(values, "nodeGroups")
	for _, g := range groups {
		m, _ := g.(map[string]any)
		n, _ := m["machineCount"].(int64)
		out = append(out, NodeGroupView{Name: str(m["name"]), Role: v1alpha1.RoleWorker, Status: v1alpha1.UpdateInProgress, NodeCount: int(n)})
	}
	return out
}

// Unreadable is the report for a cluster whose objects could not be read.
func Unreadable(v View, err error) Report {
	reason := "management cluster unreachable: " + err.Error()
	var r Report
	r.ClusterUUID, r.StackID, r.Status = v.ClusterUUID, v.StackID, v.Status
	r.HealthStatus = v1alpha1.UnknownHealth
	r.HealthReason = map[string]string{"cluster": reason, "infrastructure": reason, "controlplane": reason, "nodegroup": reason}
	for _, ng := range v.NodeGroups {
		r.NodeGroups = append(r.NodeGroups, NodeGroupReport{Name: ng.Name, Status: ng.Status, NodeCount: ng.NodeCount})
	}
	return r
}

// LastApplied is the revision the Kustomization that applies a namespace last applied
// (status.lastAppliedRevision), the one Options.Ancestry speaks of; known is false when
// the Kustomization is not in the snapshot.
func (s *Snapshot) LastApplied(namespace string) (applied string, known bool) {
	k := s.kustomizations[s.KustomizationFor(namespace)]
	if k == nil {
		return "", false
	}
	return stringAt(k, "status", "lastAppliedRevision"), true
}

// Applied is Applied for the Kustomization that applies a namespace: the revision it last
// applied (status.lastAppliedRevision, e.g. "main@sha1:…") and whether that, or its
// history, includes revision; known is false when the Kustomization is not in the
// snapshot.
func (s *Snapshot) Applied(namespace, revision string, opts Options) (applied string, ok, known bool) {
	k := s.kustomizations[s.KustomizationFor(namespace)]
	if k == nil {
		return "", false, false
	}
	applied, ok = Applied(k, revision, opts)
	return applied, ok, true
}

// AppliedCommit is the commit id in a Flux revision: "main@sha1:<id>" (Flux v2.1 and
// later), "sha1:<id>" or the older "main/<id>"; empty when there is none.
func AppliedCommit(revision string) string {
	id := revision[strings.LastIndexAny(revision, ":/")+1:]
	if len(id) != 40 || strings.Trim(id, "0123456789abcdef") != "" {
		return ""
	}
	return id
}

// UpgradeChains lists, by Magnum UUID, the clusters whose Flux HelmRelease, or in Argo mode
// (argo) whose Argo CD Application, deploys a step of a chained upgrade
// (magnum.AnnotationUpgradeTarget): the leader requeues them. It lists those kinds alone,
// not a whole snapshot, and Applications only when argo is set, as KindsOf does: a Flux
// site is never asked to let serve read them. An Argo site may have no Flux: there an
// absent HelmRelease CRD contributes nothing, as in TakeSnapshot.
func UpgradeChains(ctx context.Context, src Source, argo bool) ([]string, error) {
	kinds := []schema.GroupVersionKind{fluxHelmRelease}
	if argo {
		kinds = append(kinds, argoApplication)
	}
	var out []string
	for _, gvk := range kinds {
		objs, err := src.List(ctx, gvk)
		if argo && gvk == fluxHelmRelease && meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvk.GroupKind(), err)
		}
		for _, o := range objs {
			if o.GetAnnotations()[magnum.AnnotationUpgradeTarget] == "" {
				continue
			}
			if uuid := label(o, magnum.LabelClusterUUID); uuid != "" {
				out = append(out, uuid)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
