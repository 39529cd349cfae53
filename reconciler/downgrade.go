package reconciler

import (
	"fmt"
	"path"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// checkDowngrade refuses to move a cluster to an older chart than the one its HelmRelease
// (or Application) in the repository holds, unless the event is an upgrade_cluster, the
// one operation that chooses a chart on purpose. Adopting a cluster the driver installed
// with a newer chart must never silently roll it back.
func checkDowngrade(tree Tree, dir string, ev *v1alpha1.ClusterEvent, res *generator.Result) error {
	if ev.Operation == v1alpha1.UpgradeCluster || ev.Operation == v1alpha1.DeleteCluster || res.Chart.Version == "" {
		return nil
	}
	old, err := chartVersionIn(tree, dir)
	if err != nil || old == "" {
		return err
	}
	was, err1 := semver.NewVersion(old)
	now, err2 := semver.NewVersion(res.Chart.Version)
	if err1 != nil || err2 != nil || !now.LessThan(was) {
		return nil
	}
	return &Error{Kind: KindInvalid, Step: "diff", Err: &v1alpha1.FieldError{Field: "cluster_template.labels.capi_helm_chart_version",
		Message: fmt.Sprintf("chart %s is older than the %s the repository holds for this cluster: only upgrade_cluster may change the chart, and never backwards", res.Chart.Version, old)}}
}

// chartVersionIn reads the chart version of a cluster directory's HelmRelease or
// Application; "" when there is none or it names no version.
func chartVersionIn(tree Tree, dir string) (string, error) {
	for _, f := range []string{generator.HelmReleaseFile, generator.ApplicationFile} {
		b, ok, err := tree.ReadFile(path.Join(dir, f))
		if err != nil || !ok {
			if err != nil {
				return "", err
			}
			continue
		}
		var doc struct {
			Spec struct {
				Chart struct {
					Spec struct {
						Version string `json:"version"`
					} `json:"spec"`
				} `json:"chart"`
				Source struct {
					TargetRevision string `json:"targetRevision"`
				} `json:"source"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return "", fmt.Errorf("%s: %w", path.Join(dir, f), err)
		}
		if v := doc.Spec.Chart.Spec.Version; v != "" {
			return v, nil
		}
		return doc.Spec.Source.TargetRevision, nil
	}
	return "", nil
}
