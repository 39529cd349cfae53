package generator

import (
	"encoding/json"
	"errors"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A suspended cluster is one Flux (or Argo CD) must leave alone while an operator works on
// it by hand: its HelmRelease carries spec.suspend: true, its Application no automated
// sync. The suspension is not Magnum's: the caller keeps it (the reconciler, in the
// cluster's record) and hands it to every render, FileOptions.Suspend, so that no event
// undoes it. The generator only writes it.

// argoAutomated is the automated sync policy of every Application the generator writes:
// what a suspension takes away and a resume gives back.
func argoAutomated() map[string]any { return map[string]any{"prune": true, "selfHeal": true} }

// suspendedHelmRelease is hr suspended, a copy: the Result's objects stay as rendered.
func suspendedHelmRelease(hr *helmv2.HelmRelease) *helmv2.HelmRelease {
	c := hr.DeepCopy()
	c.Spec.Suspend = true
	return c
}

// suspendedApplication is a without automated sync, a copy: Argo CD then syncs it only
// when someone asks (argocd app sync), which is its form of a suspended HelmRelease.
func suspendedApplication(a *unstructured.Unstructured) *unstructured.Unstructured {
	c := a.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "spec", "syncPolicy", "automated")
	return c
}

// SetSuspended returns a deploy file as Files writes it (a HelmRelease, or an Application)
// with the suspension set (suspend) or cleared, and nothing else changed. It is how a
// cluster is suspended or resumed without rendering it again: the file is left as the
// repository holds it, even in the middle of a chained upgrade, where rendering the
// cluster's record would skip the chain's remaining steps. The bytes are those Files
// writes with FileOptions.Suspend for the same object, so that the next render of the
// cluster finds nothing to change.
func SetSuspended(file []byte, suspend bool) ([]byte, error) {
	j, err := yaml.YAMLToJSON(file)
	if err != nil {
		return nil, fmt.Errorf("deploy file: %w", err)
	}
	m, err := decodeJSONObject(j)
	if err != nil || m == nil {
		return nil, errors.New("deploy file: not a Kubernetes object")
	}
	spec, _ := m["spec"].(map[string]any)
	if spec == nil {
		return nil, errors.New("deploy file: no spec")
	}
	switch kind, _ := m["kind"].(string); kind {
	case helmv2.HelmReleaseKind:
		delete(spec, "suspend") // omitempty: false is written as nothing
		if suspend {
			spec["suspend"] = true
		}
	case "Application":
		policy, _ := spec["syncPolicy"].(map[string]any)
		if policy == nil {
			policy = map[string]any{}
			spec["syncPolicy"] = policy
		}
		delete(policy, "automated")
		if !suspend {
			policy["automated"] = argoAutomated()
		}
	default:
		return nil, fmt.Errorf("deploy file: a %q, want a HelmRelease or an Application", kind)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return MarshalObjectJSON(out)
}
