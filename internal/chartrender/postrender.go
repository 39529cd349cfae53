package chartrender

import (
	"bytes"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// PostRender applies a HelmRelease's post-renderers to a rendered manifest as
// helm-controller does (its internal/postrender): the manifest becomes the single resource
// of a kustomization in an in-memory filesystem, each post-renderer's patches are added
// with their target selectors, and krusty builds it with builtin plugins only; the
// renderers run in order, each on the previous one's output.
func PostRender(manifest []byte, prs []helmv2.PostRenderer) ([]byte, error) {
	out := manifest
	for _, pr := range prs {
		if pr.Kustomize == nil {
			continue
		}
		fs := filesys.MakeFsInMemory()
		const input = "helm-output.yaml"
		if err := fs.WriteFile(input, out); err != nil {
			return nil, err
		}
		k := kustypes.Kustomization{TypeMeta: kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
			Resources: []string{input}}
		for _, p := range pr.Kustomize.Patches {
			k.Patches = append(k.Patches, kustypes.Patch{Patch: p.Patch, Target: adaptSelector(p.Target)})
		}
		for _, img := range pr.Kustomize.Images {
			k.Images = append(k.Images, kustypes.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
		}
		kb, err := yaml.Marshal(k)
		if err != nil {
			return nil, err
		}
		if err := fs.WriteFile("kustomization.yaml", kb); err != nil {
			return nil, err
		}
		opts := krusty.MakeDefaultOptions()
		opts.LoadRestrictions = kustypes.LoadRestrictionsNone
		opts.PluginConfig = kustypes.MakePluginConfig(kustypes.PluginRestrictionsBuiltinsOnly, kustypes.BploUseStaticallyLinked)
		rm, err := krusty.MakeKustomizer(opts).Run(fs, ".")
		if err != nil {
			return nil, fmt.Errorf("kustomize: %w", err)
		}
		if out, err = rm.AsYaml(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// HelmPostRenderer is PostRender as Helm's SDK takes a post-renderer (action.Install's
// PostRenderer), for installing a chart with a HelmRelease's post-renderers outside Flux.
type HelmPostRenderer []helmv2.PostRenderer

// Run implements helm.sh/helm/v3/pkg/postrender.PostRenderer.
func (p HelmPostRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	out, err := PostRender(rendered.Bytes(), p)
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}

// adaptSelector is helm-controller's translation of a Flux selector into kustomize's.
func adaptSelector(s *kustomize.Selector) *kustypes.Selector {
	if s == nil {
		return nil
	}
	out := &kustypes.Selector{AnnotationSelector: s.AnnotationSelector, LabelSelector: s.LabelSelector}
	out.Group, out.Version, out.Kind = s.Group, s.Version, s.Kind
	out.Namespace, out.Name = s.Namespace, s.Name
	return out
}
