package chartrender_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
)

// chartVersions are the released openstack-cluster packages in ../shared/charts.
var chartVersions = []string{"0.10.1", "0.24.1", "0.27.0"}

// helmTemplate is the manifest of a client-only dry-run install through Helm's pkg/action,
// what helm template runs: the reference chartrender.Manifest must match byte for byte.
// Only this test links pkg/action.
func helmTemplate(ch *chart.Chart, release, namespace string, values map[string]any) (string, error) {
	raw, err := json.Marshal(values)
	if err != nil {
		return "", err
	}
	vals, err := chartutil.ReadValues(raw)
	if err != nil {
		return "", err
	}
	install := action.NewInstall(&action.Configuration{})
	install.ClientOnly, install.DryRun, install.Replace, install.DisableHooks = true, true, true, true
	install.ReleaseName, install.Namespace = release, namespace
	rel, err := install.Run(ch, vals.AsMap())
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// TestManifestIsHelmTemplates renders every chart version with values that reach the
// control plane, node groups (one autoscaled), addons and the schema, and a release name
// and values Helm refuses, through Manifest and through pkg/action.
func TestManifestIsHelmTemplates(t *testing.T) {
	t.Parallel()
	full := map[string]any{
		"kubernetesVersion":          "1.33.7",
		"machineImageId":             "9f6d2a4e-0c1b-4e7a-8d3f-5b2c7e9a1d04",
		"cloudCredentialsSecretName": "prod-a-cloud-credentials",
		"controlPlane":               map[string]any{"machineCount": 3, "machineFlavor": "m1.medium"},
		"nodeGroups": []any{
			map[string]any{"name": "default-worker", "machineCount": 2, "machineFlavor": "m1.small"},
			map[string]any{"name": "burst", "machineFlavor": "m1.large", "autoscale": true, "machineCountMin": 1, "machineCountMax": 5},
		},
		"addons": map[string]any{"monitoring": map[string]any{"enabled": true}, "ingress": map[string]any{"enabled": true}},
	}
	cases := []struct {
		name, release string
		values        map[string]any
		fails         bool
	}{
		{"chart defaults, which its templates refuse (no flavor)", "prod-a", map[string]any{}, true},
		{"a cluster with addons and an autoscaled group", "prod-a", full, false},
		{"a release name Helm refuses", strings.Repeat("x", 54), full, true},
		{"a value against the schema or the templates", "prod-a", map[string]any{"controlPlane": "three"}, true},
	}
	for _, version := range chartVersions {
		for _, tc := range cases {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				// Each render gets its own load: rendering sets a chart's dependencies.
				path, err := chartrender.FindChart(version)
				if errors.Is(err, chartrender.ErrNoCharts) {
					t.Skipf("skipping: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				ours, helms := mustLoad(t, path), mustLoad(t, path)
				got, err := chartrender.Manifest(ours, tc.release, "magnum-p", tc.values)
				want, herr := helmTemplate(helms, tc.release, "magnum-p", tc.values)
				if (err != nil) != (herr != nil) || (err != nil) != tc.fails {
					t.Fatalf("Manifest: %v; helm template: %v; want a failure: %v", err, herr, tc.fails)
				}
				if got != want {
					t.Errorf("Manifest differs from helm template's (%d against %d bytes)", len(got), len(want))
				}
				if !tc.fails && !strings.Contains(got, "kind: Cluster\n") {
					t.Errorf("no Cluster rendered:\n%.2000s", got)
				}
			})
		}
	}
}

func mustLoad(t *testing.T, path string) *chart.Chart {
	t.Helper()
	ch, err := chartrender.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
