package generator

import (
	"github.com/magnum-gitops/magnum-gitops/magnum"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"sigs.k8s.io/yaml"
)

// API groups and versions of the chart objects the post-renderer patches target (every
// chart up to 0.27.0 writes them as v1beta1).
const (
	capiGroup         = "cluster.x-k8s.io"
	controlPlaneGroup = "controlplane.cluster.x-k8s.io"
	capiVersion       = "v1beta1"
)

// postRender fills a gap of the chart the GitOps way: a kustomize patch in the
// HelmRelease's spec.postRenderers, which helm-controller applies to the chart's rendered
// objects before they reach the API server (neither Python driver can do this). The patch
// is a strategic-merge document naming the object by kind and name, with a target
// selector on group, kind and name, so it never touches anything else. Argo CD
// Applications have no post-renderer: in Argo mode the same patch goes to the
// Application's kustomize source (argo.go), which needs the repository Argo CD reads
// (argo.repo_url); without it the feature is refused, naming the label, and the chart
// value (where a newer chart has one) is the other way.
func (r *render) postRender(field, what, group, kind, name string, patch map[string]any) {
	if r.cfg.Format == FormatArgo && r.cfg.Argo.RepoURL == "" {
		r.p.add(field, "%s needs a post-renderer patch on chart %s, and Argo CD Applications have none: set argo.repo_url (or git.url) so that the cluster's Application takes it as a kustomize patch, use format flux, or a chart version that has a value for it", what, r.chartLabel())
		return
	}
	doc := map[string]any{
		"apiVersion": group + "/" + capiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
	}
	for k, v := range patch {
		if k == "metadata" {
			for mk, mv := range v.(map[string]any) {
				doc["metadata"].(map[string]any)[mk] = mv
			}
			continue
		}
		doc[k] = v
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		panic("generator: post-renderer patch is not YAML: " + err.Error())
	}
	r.patches = append(r.patches, kustomize.Patch{
		Patch:  string(b),
		Target: &kustomize.Selector{Group: group, Version: capiVersion, Kind: kind, Name: name},
	})
}

// postRenderers is the HelmRelease's spec.postRenderers: the generator's own patches, then
// the site's (flux.post_renderers); nil when there are none, so HelmReleases without these
// features stay as they were. argoPatches (argo.go) is the same list, flattened, for an
// Application.
func (r *render) postRenderers() []helmv2.PostRenderer {
	var out []helmv2.PostRenderer
	if len(r.patches) > 0 {
		out = append(out, helmv2.PostRenderer{Kustomize: &helmv2.Kustomize{Patches: r.patches}})
	}
	return append(out, r.sitePostRenderers()...)
}

// controlPlaneName is the chart's KubeadmControlPlane name.
func (r *render) controlPlaneName() string {
	return magnum.ChartComponentName(r.release, "control-plane")
}
