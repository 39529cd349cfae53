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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
)

// postRender applies a HelmRelease's post-renderers to rendered objects as helm-controller
// does (chartrender.PostRender).
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
	out, err := chartrender.PostRender(manifest.Bytes(), prs)
	if err != nil {
		return nil, err
	}
	return chartrender.Parse(bytes.NewReader(out))
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
