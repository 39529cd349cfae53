package generator

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/magnum"

	"github.com/fluxcd/pkg/apis/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

// Output formats.
const (
	FormatFlux = "flux"
	FormatArgo = "argo"
)

// Argo CD names.
const (
	ApplicationFile = "application.yaml"
	// argoFinalizer makes deleting the Application delete what it deployed (the CAPI
	// Cluster, which CAPI then tears down); without it the cluster would be orphaned. It is
	// Argo CD's resources finalizer with background propagation: with the default
	// foreground one the garbage collector deletes the Cluster's dependents itself, its
	// kubeconfig Secret among them, before Cluster API has deleted the machines, which then
	// wait for a workload cluster nobody can reach (seen in TestE2EArgoClusterAPI). In the
	// background Cluster API deletes in its own order, as after helm uninstall.
	argoFinalizer        = "resources-finalizer.argocd.argoproj.io/background"
	argoSyncWave         = "argocd.argoproj.io/sync-wave"
	argoSyncOptions      = "argocd.argoproj.io/sync-options"
	argoApplicationGroup = "argoproj.io/v1alpha1"
	// ChartDir is the subdirectory of a cluster's directory that holds, in Argo mode with
	// chart patches, the kustomization.yaml inflating the chart (chartKustomization).
	ChartDir = "chart"
	// ChartDigestAnnotation carries, on an Application with a kustomize source, a digest of
	// its chart kustomization: a change of values changes the Application too, so Argo CD
	// compares it again at once rather than at its next periodic refresh, when serve could
	// read the old, settled objects as the new operation's outcome.
	ChartDigestAnnotation = "magnum-gitops.io/chart-digest"
)

// ArgoConfig shapes the Argo CD Application written instead of a HelmRelease.
type ArgoConfig struct {
	// Namespace is where Argo CD watches Applications.
	Namespace string `json:"namespace"`
	// Project is the AppProject of every Application.
	Project string `json:"project"`
	// DestinationServer is the management cluster's API as Argo CD knows it.
	DestinationServer string `json:"destination_server"`
	// CascadeDelete adds Argo CD's resources finalizer: deleting the Application deletes
	// the CAPI Cluster. Without it, removing a cluster from Git orphans it.
	CascadeDelete bool `json:"cascade_delete"`
	// RepoURL is the repository magnum-gitops pushes to, as Argo CD's repo-server fetches
	// it: with chart patches (flux.post_renderers, or a feature's own), a cluster's
	// Application has a kustomize source in it (its ChartDir) instead of the chart's Helm
	// repository; with a per-namespace flux.layout, each namespace's parent Application
	// fetches it (argolayout.go). internal/config defaults it to git.url.
	RepoURL string `json:"repo_url,omitempty"`
	// TargetRevision is the branch of RepoURL the Applications follow; internal/config
	// defaults it to git.branch.
	TargetRevision string `json:"target_revision,omitempty"`
}

// application is the Argo CD equivalent of the HelmRelease: the same chart, version,
// release name and values, deployed into the cluster namespace. The parent application
// that syncs this directory applies the Secrets in wave -1 and this Application in wave 0,
// so the CA and credential Secrets exist before CAPI reconciles the Cluster. With chart
// patches its source is kustomizeSource instead of the chart's Helm repository.
func (r *render) application(ns string, values map[string]any) *unstructured.Unstructured {
	a := r.cfg.Argo
	repoURL, chart := r.chart.Repository, r.chart.Name
	if r.chart.IsOCI() {
		ref := strings.TrimPrefix(r.chart.Name, "oci://")
		i := strings.LastIndex(ref, "/")
		repoURL, chart = ref[:i], ref[i+1:]
	}
	annotations := map[string]any{magnum.AnnotationClusterName: r.ev.Cluster.Name, argoSyncWave: "0"}
	source := map[string]any{
		"repoURL":        repoURL,
		"chart":          chart,
		"targetRevision": cmp.Or(r.chart.Version, "*"),
		"helm": map[string]any{
			"releaseName": r.release,
			"values":      valuesText(values),
		},
	}
	if patches := r.argoPatches(); len(patches) > 0 {
		source = r.kustomizeSource(ns, patches)
		annotations[ChartDigestAnnotation] = chartDigest(chartKustomization(r.chart, r.release, ns, values))
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": argoApplicationGroup,
		"kind":       "Application",
		"metadata": map[string]any{
			"name":        r.release,
			"namespace":   a.Namespace,
			"labels":      stringMap(r.objectLabels(true)),
			"annotations": annotations,
		},
		"spec": map[string]any{
			"project":     a.Project,
			"source":      source,
			"destination": map[string]any{"server": a.DestinationServer, "namespace": ns},
			"syncPolicy": map[string]any{
				"automated":   argoAutomated(),
				"syncOptions": []any{"ServerSideApply=true"},
			},
		},
	}}
	if a.CascadeDelete {
		u.SetFinalizers([]string{argoFinalizer})
	}
	return u
}

// Chart patches in Argo mode. An Application has no post-renderer, but Argo CD builds a
// kustomize source with Helm chart inflation (kustomize.buildOptions: --enable-helm in
// argocd-cm) and applies the source's own kustomize patches to what the chart renders:
// the Argo way to do what a HelmRelease's spec.postRenderers do. So a cluster with patches
// (the generator's, then the site's flux.post_renderers, in the order helm-controller runs
// them) gets an Application whose source is its own directory in the repository
// (ChartDir, holding chartKustomization) with the patches in spec.source.kustomize.patches.
// The patches stay in the Application rather than in the kustomization file for two
// reasons: Argo CD processes such a source alone on its clone and cleans the clone after
// it, so the chart kustomize pulls there is never seen by the parent Application's sops
// plugin (which prints every *.yaml below the clusters' path); and the Application shows
// in Argo CD's UI what is patched. A cluster without patches keeps its Helm source.

// argoPatches are the cluster's kustomize patches, as the objects of
// spec.source.kustomize.patches: the generator's (postRender), then those of the site's
// post-renderers, in order. nil when there are none.
func (r *render) argoPatches() []any {
	patches := append([]kustomize.Patch(nil), r.patches...)
	for _, pr := range r.cfg.Flux.PostRenderers {
		if pr.Kustomize != nil {
			patches = append(patches, pr.Kustomize.Patches...)
		}
	}
	if len(patches) == 0 {
		return nil
	}
	return jsonValue(patches).([]any)
}

// kustomizeSource is the source of an Application with patches: the cluster's ChartDir on
// argo.repo_url at argo.target_revision.
func (r *render) kustomizeSource(ns string, patches []any) map[string]any {
	return map[string]any{
		"repoURL":        r.cfg.Argo.RepoURL,
		"targetRevision": r.cfg.Argo.TargetRevision,
		"path":           path.Join(ClusterDir(r.root(), ns, r.release), ChartDir),
		"kustomize":      map[string]any{"patches": patches},
	}
}

// root is the cluster's Result.Root (its management cluster's path), which route
// decided and reported on already.
func (r *render) root() string {
	var res Result
	n := len(r.p.list)
	r.route(&res)
	r.p.list = r.p.list[:n]
	return res.Root
}

// chartKustomization is the kustomization.yaml of a cluster's ChartDir: the chart inflated
// by kustomize's Helm support, with the same release name, namespace and values as the
// HelmRelease (inline: the parent's sops plugin would print a values file as an object),
// its CRDs left out as helm-controller leaves them by default.
func chartKustomization(chart Chart, release, ns string, values map[string]any) *kustypes.Kustomization {
	repo, name := chart.Repository, chart.Name
	if chart.IsOCI() {
		i := strings.LastIndex(chart.Name, "/")
		repo, name = chart.Name[:i], chart.Name[i+1:]
	}
	v, _ := jsonValue(values).(map[string]any)
	return &kustypes.Kustomization{
		TypeMeta: kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		HelmCharts: []kustypes.HelmChart{{
			Name: name, Repo: repo, Version: chart.Version, ReleaseName: release, Namespace: ns,
			IncludeCRDs: false, ValuesInline: v,
		}},
	}
}

// chartDigest is the sha256 of a chart kustomization as Files writes it.
func chartDigest(k *kustypes.Kustomization) string {
	b, err := MarshalObject(k)
	if err != nil {
		panic("generator: chart kustomization is not YAML: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// chartSourcePath is the path of an Application's kustomize source, "" for a Helm source.
func chartSourcePath(app *unstructured.Unstructured) string {
	p, _, _ := unstructured.NestedString(app.Object, "spec", "source", "path")
	return p
}

// jsonValue converts values to the types unstructured objects hold (int64, float64), as if
// they had been read from JSON.
// valuesText is the chart values as Helm values text, for spec.source.helm.values. Not
// valuesObject: Argo CD drops an object's nulls (the chart's way to remove a default) from
// status.sync.comparedTo, so an Application whose values hold one never compares equal to
// its spec and is compared again without pause (docs/figures-argocd.md: 1.7 cores idle at
// 100 clusters); text is compared as it is.
func valuesText(values map[string]any) string {
	b, err := marshalYAML(values)
	if err != nil {
		panic("generator: values are not JSON: " + err.Error())
	}
	return string(b)
}

func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic("generator: values are not JSON: " + err.Error())
	}
	var out any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		panic("generator: values are not JSON: " + err.Error())
	}
	return numbers(out)
}

func numbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = numbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = numbers(e)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
