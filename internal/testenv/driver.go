package testenv

import (
	"errors"
	"maps"
	"os"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"helm.sh/helm/v3/pkg/release"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
)

// DriverRelease is the deployed Helm release magnum-capi-helm installs for ev, as Helm
// stores it: the chart of the event's version from ../shared/charts, the values the driver
// sends — the generator's for the event without its feature labels, which the driver
// ignores (the parity tests hold them to the driver's) — and the manifest rendered from
// them, post-rendered with site when the site installed its clusters so. It skips the test
// when the charts are missing, unless CI is set.
func DriverRelease(t testing.TB, ev *v1alpha1.ClusterEvent, site ...helmv2.PostRenderer) *release.Release {
	t.Helper()
	plain := *ev
	plain.Adopted = nil
	plain.Cluster.Labels = maps.Clone(ev.Cluster.Labels)
	maps.DeleteFunc(plain.Cluster.Labels, func(k, _ string) bool { return generator.IsFeatureLabel(k) })
	res, err := generator.Render(&plain, generator.MustSite(generator.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := chartrender.LoadVersion(res.Chart.Version)
	if errors.Is(err, chartrender.ErrNoCharts) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := chartrender.Manifest(ch, res.ReleaseName, res.Namespace, res.Values)
	if err != nil {
		t.Fatal(err)
	}
	if len(site) > 0 {
		b, err := chartrender.PostRender([]byte(manifest), site)
		if err != nil {
			t.Fatal(err)
		}
		manifest = string(b)
	}
	return &release.Release{Name: res.ReleaseName, Namespace: res.Namespace, Version: 1, Chart: ch, Config: res.Values,
		Manifest: manifest, Info: &release.Info{Status: release.StatusDeployed}}
}
