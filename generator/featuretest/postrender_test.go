// Package featuretest proves the cluster features against the real openstack-cluster
// charts: each feature fixture is rendered for every chart version in ../shared/charts,
// the chart is rendered with the Helm SDK, the HelmRelease's post-renderer patches are
// applied with kustomize's Go API the way helm-controller applies them, and the CAPI
// objects are checked for the setting and validated by a real API server. It is a package
// of its own so the generator's unit tests start no API server.
package featuretest

import (
	"bytes"
	"fmt"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
)

// postRender applies a HelmRelease's post-renderers to rendered objects as helm-controller
// does (internal/postrender): the Helm output becomes the single resource of a
// kustomization in an in-memory filesystem, each post-renderer's patches are added with
// their target selectors, and krusty builds it with builtin plugins only.
func postRender(objs []*unstructured.Unstructured, prs []helmv2.PostRenderer) ([]*unstructured.Unstructured, error) {
	var manifest bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		manifest.WriteString("---\n")
		manifest.Write(b)
	}
	for _, pr := range prs {
		if pr.Kustomize == nil {
			continue
		}
		fs := filesys.MakeFsInMemory()
		const input = "helm-output.yaml"
		if err := fs.WriteFile(input, manifest.Bytes()); err != nil {
			return nil, err
		}
		k := kustypes.Kustomization{TypeMeta: kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
			Resources: []string{input}}
		for _, p := range pr.Kustomize.Patches {
			k.Patches = append(k.Patches, kustypes.Patch{Patch: p.Patch, Target: adaptSelector(p.Target)})
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
		out, err := rm.AsYaml()
		if err != nil {
			return nil, err
		}
		manifest.Reset()
		manifest.Write(out)
	}
	return chartrender.Parse(bytes.NewReader(manifest.Bytes()))
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

// kinds counts objects by kind, for checking that a patch added or removed nothing.
func kinds(objs []*unstructured.Unstructured) string {
	n := map[string]int{}
	for _, o := range objs {
		n[o.GetKind()]++
	}
	var parts []string
	for k, c := range n {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c))
	}
	return strings.Join(sortStrings(parts), ",")
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}
