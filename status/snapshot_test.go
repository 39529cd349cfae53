package status_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// recordingSource is a StaticSource that remembers the kinds it was asked for.
type recordingSource struct {
	status.StaticSource
	asked []schema.GroupVersionKind
}

func (r *recordingSource) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	r.asked = append(r.asked, gvk)
	return r.StaticSource.List(ctx, gvk)
}

// TestSnapshotFollowsInfrastructureRef: the infrastructure cluster is the kind the Cluster's
// spec.infrastructureRef names, listed once however many Clusters name it, so a site whose
// post-renderers put its clusters on another provider than CAPO is judged by that
// provider's object (and not "Infrastructure resource not found.").
func TestSnapshotFollowsInfrastructureRef(t *testing.T) {
	kinds := len(status.Kinds)
	t.Parallel()
	obj := func(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: fields}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace("magnum-p1")
		u.SetName(name)
		return u
	}
	cluster := func(name, infraKind string) *unstructured.Unstructured {
		return obj("cluster.x-k8s.io/v1beta1", "Cluster", name, map[string]any{"spec": map[string]any{
			"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": infraKind, "name": name}}})
	}
	dev := func(name string) *unstructured.Unstructured {
		return obj("infrastructure.cluster.x-k8s.io/v1beta1", "DevCluster", name, map[string]any{"status": map[string]any{"ready": true}})
	}
	src := &recordingSource{StaticSource: status.StaticSource{cluster("a", "DevCluster"), cluster("b", "DevCluster"),
		cluster("c", "OpenStackCluster"), dev("a"), dev("b")}}
	snap, err := status.TakeSnapshot(context.Background(), src, status.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	devGVK := schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "DevCluster"}
	count := map[schema.GroupVersionKind]int{}
	for _, gvk := range src.asked {
		count[gvk]++
	}
	if count[devGVK] != 1 || len(count) != len(status.Kinds)+1 {
		t.Errorf("listed %v, want every kind of status.Kinds once and DevCluster once", count)
	}
	for _, tc := range []struct {
		name, kind string
	}{{"a", "DevCluster"}, {"b", "DevCluster"}, {"c", ""}} {
		o := snap.Objects(status.View{Namespace: "magnum-p1", StackID: tc.name})
		got := ""
		if o.InfraCluster != nil {
			got = o.InfraCluster.GetKind()
		}
		if got != tc.kind {
			t.Errorf("cluster %s: infrastructure cluster %q, want %q", tc.name, got, tc.kind)
		}
	}
	if len(status.Kinds) != kinds {
		t.Errorf("status.Kinds was changed in place: %d kinds, was %d", len(status.Kinds), kinds)
	}
}

// sweep judges every view from one snapshot of src as the service does: a management
// cluster that cannot be read leaves every cluster its Magnum status, with health UNKNOWN.
func sweep(ctx context.Context, src status.Source, views []status.View, opts status.Options) []status.Report {
	out := make([]status.Report, len(views))
	snap, err := status.TakeSnapshot(ctx, src, status.Kinds)
	for i, v := range views {
		if err != nil {
			out[i] = status.Unreadable(v, err)
			continue
		}
		out[i] = status.Evaluate(v, snap.Objects(v), opts)
	}
	return out
}

type failingSource struct{ err error }

func (f failingSource) List(context.Context, schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	return nil, f.err
}

// noAddons answers like an API server without the addons.stackhpc.com CRDs.
type noAddons struct{ status.StaticSource }

func (n noAddons) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	if gvk.Group == "addons.stackhpc.com" {
		return nil, &meta.NoKindMatchError{GroupKind: gvk.GroupKind()}
	}
	return n.StaticSource.List(ctx, gvk)
}

func TestSweep(t *testing.T) {
	t.Parallel()
	sf := loadStates(t)["27-all-ready-v1beta1.yaml"]
	v, _, opts := sf.inputs(t, false)
	objs, err := status.LoadObjects(bytes.NewReader(sf.Objects))
	if err != nil {
		t.Fatal(err)
	}
	reports := sweep(context.Background(), status.StaticSource(objs), []status.View{v}, opts)
	if reports[0].Status != v1alpha1.CreateComplete || reports[0].HealthStatus != v1alpha1.Healthy {
		t.Errorf("sweep = %+v", reports[0])
	}
	// Without the addons CRDs the addon state is Unknown: not complete, not an error.
	reports = sweep(context.Background(), noAddons{objs}, []status.View{v}, opts)
	if reports[0].Status != v1alpha1.CreateInProgress || !strings.Contains(reports[0].StatusReason, "addon state unknown") {
		t.Errorf("without addon CRDs: %+v", reports[0])
	}
	// An unreachable API: every cluster keeps its status, health UNKNOWN with the reason.
	reports = sweep(context.Background(), failingSource{errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")}, []status.View{v, v}, opts)
	for _, r := range reports {
		if r.Status != v.Status || r.HealthStatus != v1alpha1.UnknownHealth || !strings.Contains(r.HealthReason["cluster"], "connection refused") {
			t.Errorf("unreachable: %+v", r)
		}
	}
}

// BenchmarkSweep judges 10,000 clusters (about 110,000 objects) served through the
// Source interface the informer cache implements.
func BenchmarkSweep(b *testing.B) {
	sf := loadStates(b)["27-all-ready-v1beta1.yaml"]
	base, err := status.LoadObjects(bytes.NewReader(sf.Objects))
	if err != nil {
		b.Fatal(err)
	}
	v0, _, opts := sf.inputs(b, true)
	const n = 10000
	var objs status.StaticSource
	views := make([]status.View, n)
	for i := 0; i < n; i++ {
		r := fmt.Sprintf("c%05d-2b7xq4mzkd5h", i)
		ns := fmt.Sprintf("magnum-p%03d", i%500)
		for _, o := range base {
			c := o.DeepCopy()
			c.SetNamespace(ns)
			c.SetName(strings.Replace(c.GetName(), v0.StackID, r, 1))
			l := c.GetLabels()
			for k, val := range l {
				l[k] = strings.Replace(val, v0.StackID, r, 1)
			}
			c.SetLabels(l)
			if cn, ok, _ := unstructured.NestedString(c.Object, "spec", "clusterName"); ok {
				unstructured.SetNestedField(c.Object, strings.Replace(cn, v0.StackID, r, 1), "spec", "clusterName")
			}
			objs = append(objs, c)
		}
		v := v0
		v.StackID, v.Namespace, v.ClusterUUID = r, ns, fmt.Sprintf("uuid-%d", i)
		views[i] = v
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := time.Now()
		reports := sweep(context.Background(), objs, views, opts)
		if reports[n-1].Status != v1alpha1.CreateComplete {
			b.Fatalf("last cluster: %+v", reports[n-1])
		}
		b.ReportMetric(float64(time.Since(st).Milliseconds()), "ms/sweep")
	}
	b.ReportMetric(float64(len(objs))/float64(n), "objects/cluster")
}

// TestSweepWaitsForFluxRevision: the Kustomization named by the snapshot decides whether
// the operation's commit is applied yet: the commit itself, or a later one that includes it.
func TestSweepWaitsForFluxRevision(t *testing.T) {
	t.Parallel()
	sf := loadStates(t)["02-flux-revision-not-applied.yaml"]
	v, _, opts := sf.inputs(t, false)
	objs, err := status.LoadObjects(bytes.NewReader(sf.Objects))
	if err != nil {
		t.Fatal(err)
	}
	r := sweep(context.Background(), status.StaticSource(objs), []status.View{v}, opts)[0]
	if r.Status != v1alpha1.UpdateInProgress || !strings.Contains(r.StatusReason, "waiting for Flux to apply revision 89abcdef0123") {
		t.Errorf("report = %+v", r)
	}
	// Flux applies the branch head, so on a busy repository the revision it applied is a
	// later commit than the operation's: Options.Ancestry (the Git history) decides.
	snap, err := status.TakeSnapshot(context.Background(), status.StaticSource(objs), status.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	applied, known := snap.LastApplied(v.Namespace)
	if want := "main@sha1:0123456789abcdef0123456789abcdef01234567"; !known || applied != want {
		t.Fatalf("LastApplied = %q, %t; want %q", applied, known, want)
	}
	withHistory := opts
	withHistory.Ancestry = status.Ancestry{Applied: applied, Includes: true}
	r = sweep(context.Background(), status.StaticSource(objs), []status.View{v}, withHistory)[0]
	if r.Status != v1alpha1.UpdateComplete {
		t.Errorf("with a later applied revision that includes the commit: %+v", r)
	}
	v.Revision = "0123456789abcdef0123456789abcdef01234567" // the applied one
	r = sweep(context.Background(), status.StaticSource(objs), []status.View{v}, opts)[0]
	if r.Status != v1alpha1.UpdateComplete {
		t.Errorf("with the applied revision: %+v", r)
	}
}

// TestAppliedCommit reads the commit out of each spelling of a Flux revision.
func TestAppliedCommit(t *testing.T) {
	t.Parallel()
	const id = "0123456789abcdef0123456789abcdef01234567"
	for in, want := range map[string]string{
		"main@sha1:" + id: id, "sha1:" + id: id, "main/" + id: id, id: id,
		"": "", "main@sha1:0123": "", "main@sha256:" + id + id[:24]: "", "main@sha1:" + strings.ToUpper(id): "",
	} {
		if got := status.AppliedCommit(in); got != want {
			t.Errorf("AppliedCommit(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSnapshotPerNamespace: in the per-namespace layout each project namespace's own
// Kustomization decides, not the root one.
func TestSnapshotPerNamespace(t *testing.T) {
	t.Parallel()
	ks := func(name, applied string) *unstructured.Unstructured {
		k := &unstructured.Unstructured{}
		k.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
		k.SetKind("Kustomization")
		k.SetNamespace("flux-system")
		k.SetName(name)
		_ = unstructured.SetNestedField(k.Object, applied, "status", "lastAppliedRevision")
		return k
	}
	snap, err := status.TakeSnapshot(context.Background(), status.StaticSource([]*unstructured.Unstructured{
		ks("magnum-clusters", "main@sha1:root"), ks("magnum-p1", "main@sha1:one"), ks("magnum-p2", "main@sha1:two")}), status.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, ok := snap.Applied("magnum-p2", "", status.Options{}); !ok || got != "main@sha1:root" {
		t.Errorf("single layout: %q %v", got, ok)
	}
	snap.PerNamespace = "flux-system"
	for ns, want := range map[string]string{"magnum-p1": "main@sha1:one", "magnum-p2": "main@sha1:two", "magnum-p3": ""} {
		got, _, ok := snap.Applied(ns, "", status.Options{})
		if got != want || ok != (want != "") {
			t.Errorf("per-namespace %s: %q %v, want %q", ns, got, ok, want)
		}
		if k := snap.Objects(status.View{Namespace: ns}).Kustomization; (k != nil) != (want != "") {
			t.Errorf("per-namespace %s: Objects found Kustomization %v", ns, k != nil)
		}
	}
}

// chainSource serves objs like an API server without the CRDs of the group absent, and
// remembers the groups it was asked to list.
type chainSource struct {
	objs   status.StaticSource
	absent string
	asked  []string
}

func (c *chainSource) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	c.asked = append(c.asked, gvk.Group)
	if gvk.Group == c.absent {
		return nil, &meta.NoKindMatchError{GroupKind: gvk.GroupKind()}
	}
	return c.objs.List(ctx, gvk)
}

// TestUpgradeChains: the clusters whose Flux HelmRelease, or in Argo mode whose Argo CD
// Application, carries the upgrade-target annotation are listed by Magnum UUID, sorted;
// other HelmReleases and Applications, the addon provider's HelmReleases of the same kind
// name, and the repository's Application (no UUID) are not. A Flux site is never asked for
// Applications; an Argo site without Flux's CRD lists its Applications, and a Flux site
// without it fails, naming the kind.
func TestUpgradeChains(t *testing.T) {
	t.Parallel()
	obj := func(apiVersion, kind, name, uuid, target string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(apiVersion)
		o.SetKind(kind)
		o.SetNamespace("magnum-p")
		o.SetName(name)
		if uuid != "" {
			o.SetLabels(map[string]string{magnum.LabelClusterUUID: uuid})
		}
		if target != "" {
			o.SetAnnotations(map[string]string{magnum.AnnotationUpgradeTarget: target})
		}
		return o
	}
	hr := func(group, name, uuid, target string) *unstructured.Unstructured {
		return obj(group+"/v2", "HelmRelease", name, uuid, target)
	}
	app := func(name, uuid, target string) *unstructured.Unstructured {
		return obj("argoproj.io/v1alpha1", "Application", name, uuid, target)
	}
	objs := status.StaticSource{
		hr(status.FluxHelmGroup, "b", "uuid-b", "1.35.0"),
		hr(status.FluxHelmGroup, "a", "uuid-a", "1.34.3"),
		hr(status.FluxHelmGroup, "c", "uuid-c", ""),
		hr("addons.stackhpc.com", "d", "uuid-d", "1.35.0"),
		app("f", "uuid-f", "1.36.0"),
		app("e", "uuid-e", "1.35.0"),
		app("g", "uuid-g", ""),
		app("magnum-clusters", "", "1.35.0"),
	}
	for _, tc := range []struct {
		name      string
		argo      bool
		absent    string
		want      []string
		wantAsked []string
		wantErr   string
	}{
		{"flux", false, "", []string{"uuid-a", "uuid-b"}, []string{status.FluxHelmGroup}, ""},
		{"argo", true, "", []string{"uuid-a", "uuid-b", "uuid-e", "uuid-f"}, []string{status.FluxHelmGroup, status.ArgoGroup}, ""},
		{"argo without Flux", true, status.FluxHelmGroup, []string{"uuid-e", "uuid-f"}, []string{status.FluxHelmGroup, status.ArgoGroup}, ""},
		{"flux without Flux", false, status.FluxHelmGroup, nil, []string{status.FluxHelmGroup}, "listing HelmRelease.helm.toolkit.fluxcd.io"},
		{"argo without Argo CD", true, status.ArgoGroup, nil, []string{status.FluxHelmGroup, status.ArgoGroup}, "listing Application.argoproj.io"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &chainSource{objs: objs, absent: tc.absent}
			got, err := status.UpgradeChains(context.Background(), src, tc.argo)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("UpgradeChains (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAsked, src.asked); diff != "" {
				t.Errorf("groups listed (-want +got):\n%s", diff)
			}
		})
	}
}
