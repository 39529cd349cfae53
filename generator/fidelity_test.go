package generator_test

import (
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

func renderResult(t *testing.T, mutate func(*v1alpha1.ClusterEvent, *generator.Config)) (*generator.Result, error) {
	t.Helper()
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	cfg := defaultConfig()
	mutate(ev, cfg)
	return generator.Render(ev, cfg)
}

func chartLabel(v string) func(*v1alpha1.ClusterEvent, *generator.Config) {
	return func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		ev.ClusterTemplate.Labels["capi_helm_chart_version"] = v
	}
}

// TestFidelityChartVersion: an empty label is the newest chart (never the older default),
// Helm's version forms are accepted and normalised, what Helm refuses is refused.
func TestFidelityChartVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		label, want string
		deviation   bool
	}{
		{"", "", false},
		{"0.27.0", "0.27.0", false},
		{"v0.20.0", "0.20.0", true},
		{"0.24", "0.24.0", true},
	} {
		res, err := renderResult(t, chartLabel(tc.label))
		if err != nil {
			t.Fatalf("%q: %v", tc.label, err)
		}
		if res.Chart.Version != tc.want {
			t.Errorf("%q: chart version %q, want %q", tc.label, res.Chart.Version, tc.want)
		}
		if got := hasDeviation(res, "chart.version"); got != tc.deviation {
			t.Errorf("%q: deviation reported %v, want %v (%v)", tc.label, got, tc.deviation, res.Deviations)
		}
		if hr := res.Objects.HelmRelease; hr.Spec.Chart.Spec.Version != tc.want {
			t.Errorf("%q: HelmRelease version %q, want %q", tc.label, hr.Spec.Chart.Spec.Version, tc.want)
		}
	}
	for _, bad := range []string{"latest", "0.x", "1.2.3.4"} {
		if _, err := renderResult(t, chartLabel(bad)); !errors.Is(err, v1alpha1.ErrInvalidInput) ||
			!strings.Contains(err.Error(), "cluster_template.labels.capi_helm_chart_version") {
			t.Errorf("%q: %v, want a refusal naming the label", bad, err)
		}
	}
}

// TestFidelityNodeGroupNames: the chart's name rule applies from 0.15.0 on only.
func TestFidelityNodeGroupNames(t *testing.T) {
	t.Parallel()
	short := func(v string) func(*v1alpha1.ClusterEvent, *generator.Config) {
		return func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			chartLabel(v)(ev, cfg)
			ev.NodeGroups[1].Name = "x"
		}
	}
	if _, err := renderResult(t, short("0.10.1")); err != nil {
		t.Errorf("chart 0.10.1 renders a group called x: %v", err)
	}
	if _, err := renderResult(t, short("0.27.0")); err == nil || !strings.Contains(err.Error(), "nodegroups[x].name") {
		t.Errorf("chart 0.27.0: %v, want the chart's name rule", err)
	}
}

// TestFidelityFixedSubnetCIDR: an invalid CIDR is refused only where the chart reads it.
func TestFidelityFixedSubnetCIDR(t *testing.T) {
	t.Parallel()
	bad := func(withNetwork bool) func(*v1alpha1.ClusterEvent, *generator.Config) {
		return func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"fixed_subnet_cidr": "10.0.0.0/33"}
			if withNetwork {
				ev.Cluster.FixedNetwork, ev.Cluster.FixedSubnet = "d1f02cfb-d27f-4068-9332-84d907cb0e2e", "a1f02cfb-d27f-4068-9332-84d907cb0e2e"
			}
		}
	}
	if _, err := renderResult(t, bad(true)); err != nil {
		t.Errorf("with a fixed network and subnet the chart never reads the CIDR: %v", err)
	}
	if _, err := renderResult(t, bad(false)); err == nil || !strings.Contains(err.Error(), "cluster.labels.fixed_subnet_cidr") {
		t.Errorf("without them: %v, want a refusal", err)
	}
	res, err := renderResult(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		ev.Cluster.Labels = v1alpha1.Labels{"fixed_subnet_cidr": " 10.1.0.0/24 "}
	})
	if err != nil {
		t.Errorf("spaces the chart's YAML drops: %v", err)
	} else if got := at(jsonData(t, res.Values), "clusterNetworking.internalNetwork.nodeCidr"); got != " 10.1.0.0/24 " {
		t.Errorf("nodeCidr = %q, want the driver's value", got)
	}
}

// TestFidelityCAPOVersion: a chart writing v1alpha7 is refused where the site says CAPO
// serves only v1beta1, and reported otherwise.
func TestFidelityCAPOVersion(t *testing.T) {
	t.Parallel()
	res, err := renderResult(t, chartLabel("0.10.1"))
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "v1alpha7") {
		t.Errorf("unconfigured: %v, warnings %v", err, res.Warnings)
	}
	_, err = renderResult(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
		chartLabel("0.10.1")(ev, cfg)
		cfg.ManagementCluster.CAPOAPIVersions = []string{"v1beta1"}
	})
	if err == nil || !strings.Contains(err.Error(), "cluster_template.labels.capi_helm_chart_version: chart 0.10.1 writes infrastructure.cluster.x-k8s.io/v1alpha7") {
		t.Errorf("configured: %v", err)
	}
	if res, err := renderResult(t, chartLabel("0.11.0")); err != nil || len(res.Warnings) != 0 {
		t.Errorf("0.11.0 writes v1beta1: %v %v", err, res.Warnings)
	}
}

// fidelityVectors pair an input with what magnum-capi-helm 1.4.0 would send where ours
// differs: a patch of value paths (nil deletes the path on the driver's side).
var fidelityVectors = []struct {
	name   string
	mutate func(*v1alpha1.ClusterEvent, *generator.Config)
	driver map[string]any
}{
	{"v-prefixed chart version", chartLabel("v0.20.0"), nil},
	{"volume types colliding", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		ev.Resolved.VolumeTypes = []string{"__DEFAULT__", "SSD", "ssd"}
	}, map[string]any{"addons.openstack.csiCinder.additionalStorageClasses": "two classes named ssd"}},
	{"dashboard on chart 0.27", chartLabel("0.27.0"), map[string]any{"addons.kubernetesDashboard": map[string]any{"enabled": false}}},
	{"allowed CIDRs on chart 0.27", func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
		chartLabel("0.27.0")(ev, cfg)
		ev.Cluster.Labels = v1alpha1.Labels{"api_master_lb_allowed_cidrs": "10.0.0.0/8"}
	}, map[string]any{"apiServer.allowedCIDRs": nil, "apiServer.allowedCidrs": []any{"10.0.0.0/8"}}},
	{"keystone auth from another project", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		ev.Cluster.Labels = v1alpha1.Labels{"keystone_auth_enabled": "true"}
		ev.Context.ProjectID = "otherproject"
	}, map[string]any{"addons.openstack.k8sKeystoneAuth.values.projectId": "otherproject"}},
}

// TestDeviationsCoverDifferences: for every vector, each value path where ours differs from
// the driver's is reported in the result's deviations, so an operator sees per cluster what
// changes on adoption.
func TestDeviationsCoverDifferences(t *testing.T) {
	t.Parallel()
	for _, vec := range fidelityVectors {
		res, err := renderResult(t, vec.mutate)
		if err != nil {
			t.Fatalf("%s: %v", vec.name, err)
		}
		ours := jsonData(t, res.Values)
		var keys []string
		for _, d := range res.Deviations {
			keys = append(keys, d.Key)
		}
		paths := make([]string, 0, len(vec.driver))
		for p, want := range vec.driver {
			if reflect.DeepEqual(at(ours, p), want) {
				t.Errorf("%s: %s is the driver's value: not a difference", vec.name, p)
			}
			paths = append(paths, p)
		}
		if vec.name == "v-prefixed chart version" {
			paths = append(paths, "chart.version")
		}
		sort.Strings(paths)
		for _, p := range paths {
			if !slices.ContainsFunc(keys, func(k string) bool {
				return strings.EqualFold(k, p) || strings.HasPrefix(p, k+".") || strings.HasPrefix(k, p)
			}) {
				t.Errorf("%s: %s differs from the driver but no deviation says so (deviations: %v)", vec.name, p, keys)
			}
		}
	}
}

func hasDeviation(res *generator.Result, key string) bool {
	return slices.ContainsFunc(res.Deviations, func(d generator.Deviation) bool { return d.Key == key })
}
