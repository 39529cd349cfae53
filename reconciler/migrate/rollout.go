package migrate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
)

// machineFields are, per kind of Cluster API object that owns machines, the spec fields
// whose change makes Cluster API replace them: a MachineDeployment's machine template
// (which names its bootstrap and infrastructure templates, whose names the chart derives
// from their content), a KubeadmControlPlane's version, kubeadm configuration and
// infrastructure template.
var machineFields = map[string][][]string{
	"MachineDeployment":   {{"spec", "template"}},
	"KubeadmControlPlane": {{"spec", "version"}, {"spec", "kubeadmConfigSpec"}, {"spec", "machineTemplate", "infrastructureRef"}},
}

// rollouts compares the objects that own machines in the release's manifest with the
// release's chart rendered with our values (our post-renderers applied, as helm-controller
// applies them), and names every object whose machines would be replaced, or removed. A
// release without a stored manifest is rendered from its own values.
func rollouts(live *release.Release, theirs, ours map[string]any, res *generator.Result) ([]string, error) {
	var before []*unstructured.Unstructured
	var err error
	if live.Manifest != "" {
		before, err = chartrender.Parse(strings.NewReader(live.Manifest))
	} else {
		before, err = chartrender.Render(live.Chart, res.ReleaseName, res.Namespace, theirs)
	}
	if err != nil {
		return nil, err
	}
	manifest, err := chartrender.Manifest(live.Chart, res.ReleaseName, res.Namespace, ours)
	if err != nil {
		return nil, err
	}
	if hr := res.Objects.HelmRelease; hr != nil && len(hr.Spec.PostRenderers) > 0 {
		b, err := chartrender.PostRender([]byte(manifest), hr.Spec.PostRenderers)
		if err != nil {
			return nil, fmt.Errorf("post-renderers: %w", err)
		}
		manifest = string(b)
	}
	after, err := chartrender.Parse(strings.NewReader(manifest))
	if err != nil {
		return nil, err
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range after {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	var out []string
	for _, o := range before {
		fields, owns := machineFields[o.GetKind()]
		if !owns || o.GroupVersionKind().Group == "" {
			continue
		}
		id := o.GetKind() + "/" + o.GetName()
		now, ok := byName[id]
		if !ok {
			out = append(out, id+": removed with its machines")
			continue
		}
		for _, f := range fields {
			a, _, _ := unstructured.NestedFieldNoCopy(o.Object, f...)
			b, _, _ := unstructured.NestedFieldNoCopy(now.Object, f...)
			if !reflect.DeepEqual(a, b) {
				out = append(out, fmt.Sprintf("%s: %s changes (%s)", id, strings.Join(f, "."), firstDifference(a, b)))
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// firstDifference names the first field path at which two objects differ, for the report.
func firstDifference(a, b any) string {
	pa, _ := plainAny(a)
	pb, _ := plainAny(b)
	if paths := changedPaths(pa, pb); len(paths) > 0 && paths[0] != "" {
		return paths[0]
	}
	return "the whole field"
}

// plainAny is any value through YAML's JSON form, so that changedPaths can walk it.
func plainAny(v any) (any, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = yaml.Unmarshal(b, &out)
	return out, err
}
