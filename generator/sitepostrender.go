package generator

import (
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"sigs.k8s.io/yaml"
)

// Site post-renderers (flux.post_renderers) are the operator's own patches to the chart's
// rendered objects, in the HelmRelease's spec.postRenderers: what a site otherwise keeps in
// a private fork of the chart (pod and service CIDRs, floating IPs, another infrastructure
// provider). They are Flux's own PostRenderer objects, written as in a HelmRelease, and run
// after the patches the generator itself adds, so a site patch sees the chart's objects as
// the generator's features left them. In Argo mode their patches, in the same order, are
// the kustomize patches of each cluster's Application (argo.go).

// validatePostRenderers checks flux.post_renderers as helm-controller will use them: each
// renderer is a kustomize one (the images field aside), each patch is an RFC 6902 list with a
// target, or a strategic-merge document that names its object or has a target. A patch
// kustomize cannot use would otherwise fail every HelmRelease of the site at install time.
//
// In Argo mode (format: argo) the same patches become each cluster's Application's
// spec.source.kustomize.patches (argo.go), which needs the repository Argo CD reads,
// argoRepoURL; kustomize image overrides have no place there and are refused.
func (f *FluxConfig) validatePostRenderers(p *problems, format, argoRepoURL string) {
	if len(f.PostRenderers) == 0 {
		return
	}
	if format == FormatArgo && argoRepoURL == "" {
		p.add("flux.post_renderers", "Argo CD Applications have no post-renderers: set argo.repo_url (or git.url) so that each cluster's Application takes these patches as kustomize patches, use format flux, or change the chart values with values_overlay")
		return
	}
	for i, pr := range f.PostRenderers {
		field := fmt.Sprintf("flux.post_renderers[%d]", i)
		if pr.Kustomize == nil {
			p.add(field+".kustomize", "must be set: helm-controller's only post-renderer is kustomize")
			continue
		}
		k := pr.Kustomize
		if len(k.Patches) == 0 && len(k.Images) == 0 {
			p.add(field+".kustomize", "must have patches or images")
		}
		for j, patch := range k.Patches {
			validatePatch(p, fmt.Sprintf("%s.kustomize.patches[%d]", field, j), patch.Patch, patch.Target != nil)
		}
		if format == FormatArgo && len(k.Images) > 0 {
			p.add(field+".kustomize.images", "format argo takes the post-renderers' patches only: write an image change as a patch")
		}
		for j, img := range k.Images {
			if strings.TrimSpace(img.Name) == "" {
				p.add(fmt.Sprintf("%s.kustomize.images[%d].name", field, j), "must not be empty")
			}
		}
	}
}

// validatePatch checks one kustomize patch document.
func validatePatch(p *problems, field, doc string, hasTarget bool) {
	if strings.TrimSpace(doc) == "" {
		p.add(field+".patch", "must not be empty")
		return
	}
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		p.add(field+".patch", "is not YAML: %v", err)
		return
	}
	if strings.HasPrefix(strings.TrimSpace(string(js)), "[") {
		if !hasTarget {
			p.add(field+".target", "must be set for an RFC 6902 patch (a list of operations)")
		}
		// DecodePatch refuses an unknown operation; a path it takes as written.
		ops, err := jsonpatch.DecodePatch(js)
		if err != nil {
			p.add(field+".patch", "is not an RFC 6902 patch: %v", err)
			return
		}
		for k, op := range ops {
			if path, err := op.Path(); err != nil || !strings.HasPrefix(path, "/") {
				p.add(fmt.Sprintf("%s.patch[%d].path", field, k), "must be a JSON pointer starting with /")
			}
		}
		return
	}
	var smp map[string]any
	if err := yaml.Unmarshal(js, &smp); err != nil {
		p.add(field+".patch", "must be a strategic-merge document or a list of RFC 6902 operations")
		return
	}
	if hasTarget {
		return
	}
	meta, _ := smp["metadata"].(map[string]any)
	if kind, _ := smp["kind"].(string); kind == "" || meta["name"] == nil {
		p.add(field+".patch", "a strategic-merge patch without a target must name its object (kind and metadata.name)")
	}
}

// sitePostRenderers are the site's post-renderers, copied so that no HelmRelease shares
// the configuration's slices.
func (r *render) sitePostRenderers() []helmv2.PostRenderer {
	out := make([]helmv2.PostRenderer, len(r.cfg.Flux.PostRenderers))
	for i, pr := range r.cfg.Flux.PostRenderers {
		pr.DeepCopyInto(&out[i])
	}
	return out
}
