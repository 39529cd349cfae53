package status

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kinds are what the reader watches: the Flux HelmRelease and the Cluster API, CAPO and
// addon objects of every cluster, read as v1beta1 (the chart's version; CAPI converts).
var Kinds = []schema.GroupVersionKind{
	{Group: fluxHelmGroup, Version: "v2", Kind: "HelmRelease"},
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"},
	{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta1", Kind: "KubeadmControlPlane"},
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "MachineDeployment"},
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"},
	{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "OpenStackCluster"},
	{Group: addonsGroup, Version: "v1alpha1", Kind: "HelmRelease"},
	{Group: addonsGroup, Version: "v1alpha1", Kind: "Manifests"},
	{Group: fluxKustomizeGroup, Version: "v1", Kind: "Kustomization"},
}

// DefaultKustomization is the Flux Kustomization that applies the repository, as in
// deploy/flux/kustomization.yaml.
const DefaultKustomization = "flux-system/magnum-clusters"

// Source lists every object of a kind. A controller-runtime cache answers from its
// informers, so a sweep costs one LIST and one WATCH per kind, however many clusters.
type Source interface {
	List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error)
}

// ClientSource lists through a controller-runtime client, usually a cache's.
type ClientSource struct{ Reader client.Reader }

// List implements Source.
func (s ClientSource) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := s.Reader.List(ctx, l); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
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
}

// TakeSnapshot lists every kind once. A kind whose CRD is absent contributes nothing
// (addons then count as Unknown); any other error fails the snapshot.
func TakeSnapshot(ctx context.Context, src Source) (*Snapshot, error) {
	s := &Snapshot{byCluster: map[string][]*unstructured.Unstructured{},
		kustomizations: map[string]*unstructured.Unstructured{}, Kustomization: DefaultKustomization}
	for _, gvk := range Kinds {
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
		for _, o := range objs {
			if gvk.Group == fluxKustomizeGroup {
				s.kustomizations[o.GetNamespace()+"/"+o.GetName()] = o
				continue
			}
			key := o.GetNamespace() + "/" + clusterOf(o)
			s.byCluster[key] = append(s.byCluster[key], o)
		}
	}
	return s, nil
}

// clusterOf names the cluster an object belongs to.
func clusterOf(o *unstructured.Unstructured) string {
	for _, k := range []string{labelChartCluster, labelCAPICluster, labelAddonCluster} {
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
	o.Kustomization = s.kustomizations[s.Kustomization]
	return o
}

// Sweep judges every cluster from one snapshot. When the management cluster cannot be
// read, every cluster keeps its Magnum status and gets health UNKNOWN with the reason:
// an outage of the reader must not look like an outage of the clusters.
func Sweep(ctx context.Context, src Source, views []View, opts Options) []Report {
	snap, err := TakeSnapshot(ctx, src)
	out := make([]Report, len(views))
	for i, v := range views {
		if err != nil {
			out[i] = Unreadable(v, err)
			continue
		}
		out[i] = Map(v, snap.Objects(v), opts)
	}
	return out
}

// Unreadable is the report for a cluster whose objects could not be read.
func Unreadable(v View, err error) Report {
	reason := "management cluster unreachable: " + err.Error()
	var r Report
	r.ClusterUUID, r.StackID, r.Status = v.ClusterUUID, v.StackID, v.Status
	r.HealthStatus = UnknownHealth
	r.HealthReason = map[string]string{"cluster": reason, "infrastructure": reason, "controlplane": reason, "nodegroup": reason}
	for _, ng := range v.NodeGroups {
		r.NodeGroups = append(r.NodeGroups, NodeGroupReport{Name: ng.Name, Status: ng.Status, NodeCount: ng.NodeCount})
	}
	return r
}

// ErrNotFound is returned by a Lookup for an unknown cluster.
var ErrNotFound = errors.New("status: cluster not found")
