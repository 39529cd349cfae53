package reconciler

import (
	"fmt"

	"github.com/Masterminds/semver/v3"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

// checkDowngrade refuses to move a cluster to an older chart than the one its HelmRelease
// (or Application) in the repository holds, whatever the operation: Helm would roll the
// CAPI objects back to a chart that may not know the fields the newer one set, and adopting
// a cluster the driver installed with a newer chart must never silently roll it back.
func checkDowngrade(dep *deployed, ev *v1alpha1.ClusterEvent, res *generator.Result) error {
	if ev.Operation == v1alpha1.DeleteCluster || res.Chart.Version == "" {
		return nil
	}
	if dep == nil || dep.chartVersion == "" {
		return nil
	}
	old := dep.chartVersion
	was, err1 := semver.NewVersion(old)
	now, err2 := semver.NewVersion(res.Chart.Version)
	if err1 != nil || err2 != nil || !now.LessThan(was) {
		return nil
	}
	return &failure{Kind: KindInvalid, Step: "diff", Err: &v1alpha1.FieldError{Field: "cluster_template.labels.capi_helm_chart_version",
		Message: fmt.Sprintf("chart %s is older than the %s the repository holds for this cluster: only upgrade_cluster may change the chart, and never backwards", res.Chart.Version, old)}}
}
