package reconciler

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/magnum"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
)

// deployed is what a cluster directory's HelmRelease (or Argo CD Application) holds: the
// chart values and version the repository deploys today.
type deployed struct {
	values       map[string]any
	chartVersion string
	// chartDir is set for an Application with a kustomize source: its chart and values
	// are in the chart kustomization beside it (readChartKustomization).
	chartDir bool
	// upgradeTarget is set while the object deploys a step of a chained upgrade
	// (magnum.AnnotationUpgradeTarget).
	upgradeTarget string
}

// readDeployed reads a cluster directory's HelmRelease or Application once per plan; nil
// when there is none. The gate knows the JSON of a file it wrote or kept, so only a file
// written by someone else is parsed as YAML.
func readDeployed(tree gitrepo.Tree, dir string, g *gate.Gate) (*deployed, error) {
	for _, f := range []string{generator.HelmReleaseFile, generator.ApplicationFile} {
		b, ok, err := tree.ReadFile(path.Join(dir, f))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		d, err := parseDeployed(b, g.JSONOf(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Join(dir, f), err)
		}
		if d.chartDir {
			err = readChartKustomization(tree, dir, d)
		}
		return d, err
	}
	return nil, nil
}

// readChartKustomization reads the chart version and values an Application with a
// kustomize source deploys from the chart kustomization beside it (generator.ChartDir):
// the Application itself names only the branch and the path.
func readChartKustomization(tree gitrepo.Tree, dir string, d *deployed) error {
	f := path.Join(dir, generator.ChartDir, generator.KustomizationFile)
	b, ok, err := tree.ReadFile(f)
	if err != nil || !ok {
		return err // no chart kustomization: nothing known deployed, as without a file
	}
	var k struct {
		HelmCharts []struct {
			Version      string         `json:"version"`
			ValuesInline map[string]any `json:"valuesInline"`
		} `json:"helmCharts"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("%s: %w", f, err)
	}
	if len(k.HelmCharts) > 0 {
		d.chartVersion, d.values = k.HelmCharts[0].Version, k.HelmCharts[0].ValuesInline
	}
	return nil
}

// parseDeployed reads the chart version and values of a HelmRelease or Application file
// b, from its JSON j when known.
func parseDeployed(b, j []byte) (*deployed, error) {
	var doc struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Values json.RawMessage `json:"values"`
			Chart  struct {
				Spec struct {
					Version string `json:"version"`
				} `json:"spec"`
			} `json:"chart"`
			Source struct {
				TargetRevision string `json:"targetRevision"`
				Path           string `json:"path"`
				Helm           struct {
					Values       string          `json:"values"`
					ValuesObject json.RawMessage `json:"valuesObject"`
				} `json:"helm"`
			} `json:"source"`
		} `json:"spec"`
	}
	var err error
	if j != nil {
		err = json.Unmarshal(j, &doc)
	} else {
		err = yaml.Unmarshal(b, &doc)
	}
	if err != nil {
		return nil, err
	}
	d := &deployed{chartVersion: doc.Spec.Chart.Spec.Version, upgradeTarget: doc.Metadata.Annotations[magnum.AnnotationUpgradeTarget]}
	if doc.Spec.Source.Path != "" {
		d.chartDir = true // its targetRevision is a branch, not the chart's version
		return d, nil
	}
	if d.chartVersion == "" {
		d.chartVersion = doc.Spec.Source.TargetRevision
	}
	raw := doc.Spec.Values
	if strings.TrimSpace(string(raw)) == "" {
		raw = doc.Spec.Source.Helm.ValuesObject
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &d.values); err != nil {
			return nil, err
		}
	} else if text := doc.Spec.Source.Helm.Values; text != "" {
		// An Application's values as the generator writes them: Helm values text.
		if err := yaml.Unmarshal([]byte(text), &d.values); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// upgradeState is what the generator's upgrade rules compare a render with: the chart
// version and the values (kubernetesVersion and any per-group override) deployed today.
func (d *deployed) upgradeState() *generator.Deployed {
	if d == nil {
		return nil
	}
	return &generator.Deployed{ChartVersion: d.chartVersion, Values: d.values}
}

// checkUpgrade refuses a render that skips a Kubernetes minor version or moves Kubernetes
// backwards, compared with the HelmRelease the repository holds: generator.CheckUpgrade, fed the deployed state the
// same way checkDowngrade is. Plan calls it right after checkDowngrade.
func checkUpgrade(dep *deployed, ev *v1alpha1.ClusterEvent, res *generator.Result) error {
	if err := generator.CheckUpgrade(ev, res, dep.upgradeState()); err != nil {
		return &failure{Kind: KindInvalid, Step: "diff", Err: err}
	}
	return nil
}
