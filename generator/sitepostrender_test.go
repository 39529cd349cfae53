package generator_test

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// sitePatches is a site's post-renderer as an operator writes it in the configuration: the
// pod CIDR the chart has no label for, and the OpenStack infrastructure kind replaced.
const sitePatches = `
- kustomize:
    patches:
    - target: {group: cluster.x-k8s.io, version: v1beta1, kind: Cluster}
      patch: |
        - {op: replace, path: /spec/clusterNetwork/pods/cidrBlocks, value: [172.20.0.0/16]}
    - patch: |
        apiVersion: cluster.x-k8s.io/v1beta1
        kind: MachineHealthCheck
        metadata: {name: prod-a-2b7xq4mzkd5h-control-plane}
        spec: {nodeStartupTimeout: 30m}
`

func siteRenderers(t *testing.T, doc string) []helmv2.PostRenderer {
	t.Helper()
	var prs []helmv2.PostRenderer
	if err := yaml.UnmarshalStrict([]byte(doc), &prs); err != nil {
		t.Fatal(err)
	}
	return prs
}

// TestSitePostRenderers: the site's post-renderers reach every HelmRelease after the
// generator's own patches, unchanged.
func TestSitePostRenderers(t *testing.T) {
	t.Parallel()
	site := siteRenderers(t, sitePatches)
	cases := []struct {
		name   string
		labels v1alpha1.Labels
		want   int // post-renderers in the HelmRelease: the generator's own, then the site's
	}{
		{"no patch of its own", nil, 1},
		// Chart 0.24.1 has no value for certificates_expiry_days: the generator patches the
		// KubeadmControlPlane itself.
		{"the generator's patch first", v1alpha1.Labels{"certificates_expiry_days": "21", "capi_helm_chart_version": "0.24.1"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := defaultConfig()
			cfg.Flux.PostRenderers = site
			ev := fixtureEvent(t, "01-prod-a-create.yaml")
			for k, v := range tc.labels {
				ev.Cluster.Labels[k] = v
			}
			res, err := render(ev, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Objects.HelmRelease.Spec.PostRenderers
			if len(got) != tc.want {
				t.Fatalf("%d post-renderers, want %d: %+v", len(got), tc.want, got)
			}
			if diff := cmp.Diff(site[0], got[len(got)-1]); diff != "" {
				t.Errorf("the site's post-renderer changed on its way (-config +HelmRelease):\n%s", diff)
			}
			got[len(got)-1].Kustomize.Patches[0].Patch = "changed"
			if cfg.Flux.PostRenderers[0].Kustomize.Patches[0].Patch == "changed" {
				t.Error("the HelmRelease shares the configuration's patches")
			}
		})
	}
}

// TestSitePostRenderersRefused: a patch kustomize could not apply is refused when the
// configuration is read, naming the field, instead of failing every HelmRelease later.
func TestSitePostRenderersRefused(t *testing.T) {
	t.Parallel()
	jsonPatch := func(doc string, target *kustomize.Selector) []helmv2.PostRenderer {
		return []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomize.Patch{{Patch: doc, Target: target}}}}}
	}
	cluster := &kustomize.Selector{Group: "cluster.x-k8s.io", Kind: "Cluster"}
	cases := []struct {
		name   string
		format string
		prs    []helmv2.PostRenderer
		field  string
		rule   string
	}{
		{"argo", generator.FormatArgo, siteRenderers(t, sitePatches), "flux.post_renderers", "Argo CD Applications have no post-renderers"},
		{"no kustomize", "", []helmv2.PostRenderer{{}}, "flux.post_renderers[0].kustomize", "must be set"},
		{"nothing to do", "", []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{}}}, "flux.post_renderers[0].kustomize", "must have patches or images"},
		{"empty patch", "", jsonPatch(" ", cluster), "flux.post_renderers[0].kustomize.patches[0].patch", "must not be empty"},
		{"not yaml", "", jsonPatch("- {op: [", cluster), "flux.post_renderers[0].kustomize.patches[0].patch", "is not YAML"},
		{"json patch without target", "", jsonPatch("- {op: remove, path: /spec/paused}", nil), "flux.post_renderers[0].kustomize.patches[0].target", "must be set for an RFC 6902 patch"},
		{"unknown op", "", jsonPatch("- {op: delete, path: /spec}", cluster), "flux.post_renderers[0].kustomize.patches[0].patch", "unsupported operation"},
		{"relative path", "", jsonPatch("- {op: remove, path: spec}", cluster), "flux.post_renderers[0].kustomize.patches[0].patch[0].path", "JSON pointer"},
		{"anonymous strategic merge", "", jsonPatch("spec: {paused: true}", nil), "flux.post_renderers[0].kustomize.patches[0].patch", "must name its object"},
		{"scalar", "", jsonPatch("true", cluster), "flux.post_renderers[0].kustomize.patches[0].patch", "strategic-merge document or a list"},
		{"image without name", "", []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Images: []kustomize.Image{{NewTag: "v2"}}}}},
			"flux.post_renderers[0].kustomize.images[0].name", "must not be empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := defaultConfig()
			if tc.format != "" {
				cfg.Format = tc.format
			}
			cfg.Flux.PostRenderers = tc.prs
			res, err := render(fixtureEvent(t, "01-prod-a-create.yaml"), cfg)
			if err == nil {
				t.Fatalf("rendered %v, want an error on %s", res.ReleaseName, tc.field)
			}
			assertFieldError(t, err, tc.field, tc.rule)
		})
	}
	// A strategic-merge patch with a target needs no name; a JSON patch with one is fine.
	cfg := defaultConfig()
	cfg.Flux.PostRenderers = append(jsonPatch("spec: {paused: false}", cluster), jsonPatch("- {op: add, path: /spec/paused, value: false}", cluster)...)
	if _, err := render(fixtureEvent(t, "01-prod-a-create.yaml"), cfg); err != nil {
		t.Errorf("valid patches refused: %v", err)
	}
}
