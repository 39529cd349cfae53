package generator_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/chartrender"
)

// chartVersions are the released packages under ../shared/charts.
var chartVersions = []string{"0.10.1", "0.24.1", "0.27.0"}

// loadChart returns a released chart package, skipping the test when ../shared is absent
// (a user's clone); CI always has it.
func loadChart(t *testing.T, version string) *chart.Chart {
	t.Helper()
	ch, err := chartrender.LoadVersion(version)
	if errors.Is(err, chartrender.ErrNoCharts) {
		t.Skipf("skipping chart render: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// chartFor picks the package matching a result's chart version, else the newest.
func chartFor(res *generator.Result) string {
	if slices.Contains(chartVersions, res.Chart.Version) {
		return res.Chart.Version
	}
	return chartVersions[len(chartVersions)-1]
}

func renderChart(t *testing.T, version string, res *generator.Result, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := chartrender.Render(loadChart(t, version), res.ReleaseName, res.Namespace, values)
	if err != nil {
		t.Fatalf("chart %s: %v", version, err)
	}
	return objs
}

func str(o *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// TestChartRender renders every fixture's values with the real chart and checks that the
// CAPI objects say what the Magnum cluster says.
func TestChartRender(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	for _, name := range fixtureNames(t) {
		ev := fixtureEvent(t, name)
		if ev.Operation == v1alpha1.DeleteCluster {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := render(ev, cfg)
			if err != nil {
				t.Fatal(err)
			}
			version := chartFor(res)
			objs := renderChart(t, version, res, res.Values)
			assertChartObjects(t, version, res, objs)
		})
	}
}

func assertChartObjects(t *testing.T, version string, res *generator.Result, objs []*unstructured.Unstructured) {
	t.Helper()
	v := res.Values
	R := res.ReleaseName
	find := func(kind, name string) *unstructured.Unstructured {
		o := chartrender.Find(objs, kind, name)
		if o == nil {
			t.Fatalf("chart %s rendered no %s %q; it rendered:\n%s", version, kind, name, chartrender.Kinds(objs))
		}
		return o
	}
	want := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}

	cl := find("Cluster", R)
	want("Cluster controlPlaneRef", str(cl, "spec", "controlPlaneRef", "name"), R+"-control-plane")

	kcp := find("KubeadmControlPlane", R+"-control-plane")
	want("KCP spec.version", str(kcp, "spec", "version"), "v"+v["kubernetesVersion"].(string))
	cp := v["controlPlane"].(map[string]any)
	want("KCP spec.replicas", str(kcp, "spec", "replicas"), fmt.Sprint(cp["machineCount"]))
	cpTemplate := find("OpenStackMachineTemplate", str(kcp, "spec", "machineTemplate", "infrastructureRef", "name"))
	want("control plane flavor", str(cpTemplate, "spec", "template", "spec", "flavor"), fmt.Sprint(cp["machineFlavor"]))

	for _, e := range v["nodeGroups"].([]any) {
		ng := e.(map[string]any)
		md := find("MachineDeployment", magnum.ChartComponentName(R, ng["name"].(string)))
		if ng["autoscale"] == true {
			if _, found, _ := unstructured.NestedFieldNoCopy(md.Object, "spec", "replicas"); found {
				t.Errorf("MachineDeployment %s: replicas set on an autoscaled group", md.GetName())
			}
			ann := md.GetAnnotations()
			want("autoscaler min", ann["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"], fmt.Sprint(ng["machineCountMin"]))
			want("autoscaler max", ann["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"], fmt.Sprint(ng["machineCountMax"]))
		} else {
			want(md.GetName()+" replicas", str(md, "spec", "replicas"), fmt.Sprint(ng["machineCount"]))
		}
		osmt := find("OpenStackMachineTemplate", str(md, "spec", "template", "spec", "infrastructureRef", "name"))
		want(md.GetName()+" flavor", str(osmt, "spec", "template", "spec", "flavor"), fmt.Sprint(ng["machineFlavor"]))
		imagePath := []string{"spec", "template", "spec", "image", "id"}
		if version == "0.10.1" { // CAPO v1alpha7
			imagePath = []string{"spec", "template", "spec", "imageUUID"}
		}
		want(md.GetName()+" image", str(osmt, imagePath...), v["machineImageId"].(string))
		if rv, ok := v["nodeGroupDefaults"].(map[string]any)["machineRootVolume"].(map[string]any); ok && rv["diskSize"] != nil {
			want(md.GetName()+" root volume", str(osmt, "spec", "template", "spec", "rootVolume", "sizeGiB"), fmt.Sprint(rv["diskSize"]))
		}
		if ports, ok := v["nodeGroupDefaults"].(map[string]any)["machineNetworking"]; ok {
			got, _, _ := unstructured.NestedSlice(osmt.Object, "spec", "template", "spec", "ports")
			if n := len(ports.(map[string]any)["ports"].([]any)); len(got) != n {
				t.Errorf("%s: %d ports, want %d", md.GetName(), len(got), n)
			}
		}
	}

	osc := find("OpenStackCluster", R)
	api := v["apiServer"].(map[string]any)
	net := v["clusterNetworking"].(map[string]any)
	want("disableAPIServerFloatingIP", str(osc, "spec", "disableAPIServerFloatingIP"), strconv.FormatBool(!api["associateFloatingIP"].(bool)))
	want("apiServerLoadBalancer.enabled", str(osc, "spec", "apiServerLoadBalancer", "enabled"), "true")
	want("apiServerLoadBalancer.provider", str(osc, "spec", "apiServerLoadBalancer", "provider"), fmt.Sprint(api["loadBalancerProvider"]))
	internal := net["internalNetwork"].(map[string]any)
	if version == "0.10.1" { // v1alpha7 field names
		want("externalNetworkId", str(osc, "spec", "externalNetworkId"), fmt.Sprint(net["externalNetworkId"]))
		want("identityRef", str(osc, "spec", "identityRef", "name"), fmt.Sprint(v["cloudCredentialsSecretName"]))
		if cidrs, ok := api["allowedCidrs"]; ok {
			want("allowedCidrs", str(osc, "spec", "apiServerLoadBalancer", "allowedCidrs"), fmt.Sprint(cidrs))
		}
		return
	}
	want("externalNetwork.id", str(osc, "spec", "externalNetwork", "id"), fmt.Sprint(net["externalNetworkId"]))
	want("identityRef", str(osc, "spec", "identityRef", "name"), fmt.Sprint(v["cloudCredentialsSecretName"]))
	if f, ok := internal["networkFilter"].(map[string]any); ok {
		want("network.id", str(osc, "spec", "network", "id"), fmt.Sprint(f["id"]))
	} else {
		subnets, _, _ := unstructured.NestedSlice(osc.Object, "spec", "managedSubnets")
		if len(subnets) != 1 || subnets[0].(map[string]any)["cidr"] != internal["nodeCidr"] {
			t.Errorf("managedSubnets = %v, want one with cidr %v", subnets, internal["nodeCidr"])
		}
	}
	if cidrs, ok := api["allowedCIDRs"]; ok {
		want("allowedCIDRs", str(osc, "spec", "apiServerLoadBalancer", "allowedCIDRs"), fmt.Sprint(cidrs))
	}
	if bd, ok := v["etcd"].(map[string]any)["blockDevice"].(map[string]any); ok {
		devs, _, _ := unstructured.NestedSlice(cpTemplate.Object, "spec", "template", "spec", "additionalBlockDevices")
		if len(devs) != 1 || devs[0].(map[string]any)["name"] != "etcd" ||
			fmt.Sprint(devs[0].(map[string]any)["sizeGiB"]) != fmt.Sprint(bd["size"]) {
			t.Errorf("etcd block device = %v, want one named etcd of %v GiB", devs, bd["size"])
		}
	}
	if cni, ok := v["addons"].(map[string]any)["cni"].(map[string]any); ok {
		find("HelmRelease.addons.stackhpc.com", R+"-cni-"+cni["type"].(string))
	}
}

func cloneValues(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func manifestsEqual(a, b []*unstructured.Unstructured) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].Object, b[i].Object) {
			return false
		}
	}
	return true
}

// The deviations from the driver, each proven against the chart it targets.
func TestChartDeviations(t *testing.T) {
	t.Parallel()

	t.Run("autoscale boolean renders like the driver's string", func(t *testing.T) {
		t.Parallel()
		res := fixtureResult(t, "12-autoscaling-default-worker.yaml")
		driver := cloneValues(t, res.Values)
		driver["nodeGroups"].([]any)[0].(map[string]any)["autoscale"] = "true"
		if !manifestsEqual(renderChart(t, "0.27.0", res, res.Values), renderChart(t, "0.27.0", res, driver)) {
			t.Error("autoscale: true and \"true\" render different objects")
		}
	})

	t.Run("allowedCidrs is ignored by chart 0.24", func(t *testing.T) {
		t.Parallel()
		res := fixtureResult(t, "18-ovn-allowed-cidrs-chart-0.24.yaml")
		driver := cloneValues(t, res.Values)
		api := driver["apiServer"].(map[string]any)
		api["allowedCidrs"], api["allowedCIDRs"] = api["allowedCIDRs"], nil
		delete(api, "allowedCIDRs")
		osc := chartrender.Find(renderChart(t, "0.24.1", res, driver), "OpenStackCluster", res.ReleaseName)
		if got := str(osc, "spec", "apiServerLoadBalancer", "allowedCIDRs"); got != "" {
			t.Errorf("the driver's key reached the OpenStackCluster (%s); the deviation is no longer needed", got)
		}
		osc = chartrender.Find(renderChart(t, "0.24.1", res, res.Values), "OpenStackCluster", res.ReleaseName)
		if got := str(osc, "spec", "apiServerLoadBalancer", "allowedCIDRs"); got == "" {
			t.Error("our allowedCIDRs did not reach the OpenStackCluster")
		}
	})

	t.Run("flannel deploys no CNI", func(t *testing.T) {
		t.Parallel()
		res := fixtureResult(t, "26-flannel-template.yaml")
		driver := cloneValues(t, res.Values)
		driver["addons"].(map[string]any)["cni"] = map[string]any{"type": "flannel"}
		for _, o := range renderChart(t, "0.27.0", res, driver) {
			if o.GetLabels()["capi.stackhpc.com/component"] == "cni" || str(o, "spec", "chart", "name") == "tigera-operator" {
				t.Errorf("flannel rendered a CNI addon %s; the deviation is no longer needed", o.GetName())
			}
		}
		if chartrender.Find(renderChart(t, "0.27.0", res, res.Values), "HelmRelease.addons.stackhpc.com", res.ReleaseName+"-cni-calico") == nil {
			t.Error("our values render no calico addon")
		}
	})

	t.Run("no chart renders allowedTopologies", func(t *testing.T) {
		t.Parallel()
		res := fixtureResult(t, "18-ovn-allowed-cidrs-chart-0.24.yaml")
		terms := []any{map[string]any{"matchLabelExpressions": []any{
			map[string]any{"key": "topology.cinder.csi.openstack.org/zone", "values": []any{"az-1"}}}}}
		for _, version := range []string{"0.10.1", "0.24.1", "0.27.0"} {
			for name, topo := range map[string]any{"the driver's zone names": []any{"az-1"}, "selector terms": terms} {
				v := cloneValues(t, res.Values)
				v["addons"].(map[string]any)["openstack"].(map[string]any)["csiCinder"].(map[string]any)["defaultStorageClass"].(map[string]any)["allowedTopologies"] = topo
				if _, err := chartrender.Render(loadChart(t, version), res.ReleaseName, res.Namespace, v); err == nil {
					t.Errorf("chart %s renders %s: the refusal of csi_cinder_allowed_topologies is no longer needed", version, name)
				}
			}
		}
		ev := fixtureEvent(t, "18-ovn-allowed-cidrs-chart-0.24.yaml")
		cfg := defaultConfig()
		cfg.Magnum.CapiHelm.CSICinderAllowedTopologies = []string{"az-1"}
		if _, err := render(ev, cfg); err == nil || !strings.Contains(err.Error(), "magnum.capi_helm.csi_cinder_allowed_topologies") {
			t.Errorf("render: %v, want a refusal naming the option", err)
		}
	})

	t.Run("kubernetesDashboard has no effect on chart 0.27", func(t *testing.T) {
		t.Parallel()
		res := fixtureResult(t, "01-prod-a-create.yaml")
		driver := cloneValues(t, res.Values)
		driver["addons"].(map[string]any)["kubernetesDashboard"] = map[string]any{"enabled": true}
		if !manifestsEqual(renderChart(t, "0.27.0", res, res.Values), renderChart(t, "0.27.0", res, driver)) {
			t.Error("kubernetesDashboard changes the 0.27.0 output; the deviation is wrong")
		}
	})
}

func chartrenderFind(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := chartrender.Find(objs, kind, name)
	if o == nil {
		t.Fatalf("no %s %q rendered; got:\n%s", kind, name, chartrender.Kinds(objs))
	}
	return o
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
