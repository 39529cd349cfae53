// Package servicechart is the service's own Helm chart, deploy/chart/magnum-gitops, seen
// through the Helm SDK: loaded, linted, rendered, packaged reproducibly, and rendered into
// the kubectl manifests of deploy/service, which are generated from it (make
// deploy-manifests) so that the chart is their one source of truth.
package servicechart

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Dir is the chart's directory, relative to the repository root.
const Dir = "deploy/chart/magnum-gitops"

// KubeVersion is the oldest Kubernetes the chart supports (its kubeVersion): renders and
// lint assume it, so that nothing newer slips in unnoticed.
var KubeVersion = chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}

// ErrInvalidValues reports values the chart refuses: a value of the wrong type (the
// schema), or a missing required one (the templates' required and fail). The message
// names the value.
var ErrInvalidValues = errors.New("invalid chart values")

// Load loads the chart from its directory (root is the repository root).
func Load(root string) (*chart.Chart, error) {
	return loader.LoadDir(filepath.Join(root, Dir))
}

// Render renders the chart as `helm template` does (a client-only dry-run install, hooks
// included in the manifest, no NOTES) and returns the manifest: every object in Helm's
// install order, each after a "# Source:" line. values are merged over values.yaml and
// checked against values.schema.json first.
func Render(ch *chart.Chart, release, namespace string, values map[string]any) (string, error) {
	// Through JSON, as helm-controller receives a HelmRelease's values: numbers are
	// float64 as the templates and the schema expect.
	raw, err := json.Marshal(values)
	if err != nil {
		return "", err
	}
	vals, err := chartutil.ReadValues(raw)
	if err != nil {
		return "", err
	}
	install := action.NewInstall(&action.Configuration{})
	install.ClientOnly, install.DryRun, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = release, namespace
	kv := KubeVersion
	install.KubeVersion = &kv
	rel, err := install.Run(ch, vals.AsMap())
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidValues, err)
	}
	return rel.Manifest, nil
}
