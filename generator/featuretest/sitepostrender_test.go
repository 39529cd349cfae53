package featuretest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestSitePostRenderersOnTheChart puts the real chart's clusters on CAPD's in-memory
// backend with the site post-renderers the end-to-end tests configure
// (fixtures/postrenderers/capd-inmemory.yaml), applied as helm-controller applies them: no
// OpenStack infrastructure object is left, and every reference CAPI follows points at an
// object of the new kind that the same release holds.
func TestSitePostRenderersOnTheChart(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "fixtures", "postrenderers", "capd-inmemory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var site []helmv2.PostRenderer
	if err := yaml.UnmarshalStrict(data, &site); err != nil {
		t.Fatal(err)
	}
	raw, err := fixtures.Events.ReadFile("events/01-prod-a-create.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"0.24.1", "0.27.0"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ev, err := v1alpha1.DecodeEvent(raw)
			if err != nil {
				t.Fatal(err)
			}
			ev.ClusterTemplate.Labels["capi_helm_chart_version"] = version
			cfg := generator.DefaultConfig()
			cfg.Flux.PostRenderers = site
			res, err := generator.Render(ev, generator.MustSite(cfg))
			if err != nil {
				t.Fatal(err)
			}
			ch, err := chartrender.LoadVersion(version)
			if errors.Is(err, chartrender.ErrNoCharts) {
				t.Skipf("skipping: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			rendered, err := chartrender.Render(ch, res.ReleaseName, res.Namespace, helmValues(t, res))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := postRender(rendered, res.Objects.HelmRelease.Spec.PostRenderers)
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			names := map[string]bool{}
			for _, o := range objs {
				count[o.GetKind()]++
				names[o.GetKind()+"/"+o.GetName()] = true
			}
			if count["OpenStackCluster"]+count["OpenStackMachineTemplate"] > 0 {
				t.Errorf("OpenStack infrastructure left: %v", count)
			}
			if count["DevCluster"] != 1 || count["DevMachineTemplate"] < 2 {
				t.Errorf("want 1 DevCluster and a DevMachineTemplate each for the control plane and the workers, got %v", count)
			}
			refs := map[string][]string{
				"Cluster":             {"spec", "infrastructureRef"},
				"KubeadmControlPlane": {"spec", "machineTemplate", "infrastructureRef"},
				"MachineDeployment":   {"spec", "template", "spec", "infrastructureRef"},
			}
			for _, o := range objs {
				path, ok := refs[o.GetKind()]
				if !ok {
					continue
				}
				ref, _, _ := unstructured.NestedStringMap(o.Object, path...)
				if !names[ref["kind"]+"/"+ref["name"]] {
					t.Errorf("%s %s refers to %s %s, which the release does not hold", o.GetKind(), o.GetName(), ref["kind"], ref["name"])
				}
			}
			for _, o := range objs {
				if o.GetKind() != "DevMachineTemplate" {
					continue
				}
				if _, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec", "backend", "inMemory", "vm"); !ok {
					t.Errorf("DevMachineTemplate %s has no in-memory backend: %v", o.GetName(), o.Object["spec"])
				}
			}
		})
	}
}
