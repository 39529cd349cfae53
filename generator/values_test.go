package generator_test

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// TestParityBaseline is the driver's own test_create_cluster case (docs/driver-rules.md,
// "Values"), with the storage classes of "Storage classes (Cinder CSI)" and a real Glance
// UUID for the test's "imageid1", which CAPO rejects.
func TestParityBaseline(t *testing.T) {
	t.Parallel()
	res := fixtureResult(t, "10-baseline-driver-defaults.yaml")
	want := yamlData(t, `
kubernetesVersion: "1.27.4"
machineImageId: 0f5e3a1c-7b2d-4e8f-9a6b-1c2d3e4f5a6b
machineSSHKeyName: null
cloudCredentialsSecretName: cluster-example-a-111111111111-cloud-credentials
etcd: {}
apiServer: {associateFloatingIP: true, enableLoadBalancer: true, loadBalancerProvider: amphora}
clusterNetworking:
  dnsNameservers: ["8.8.1.1"]
  externalNetworkId: d1f02cfb-d27f-4068-9332-84d907cb0e2e
  internalNetwork: {networkFilter: null, subnetFilter: null, nodeCidr: 10.0.0.0/24}
osDistro: ubuntu
controlPlane: {machineFlavor: flavor_small, machineCount: 3, healthCheck: {enabled: true}}
nodeGroupDefaults: {healthCheck: {enabled: true}}
nodeGroups: [{name: test-worker, machineFlavor: flavor_medium, machineCount: 3}]
addons:
  openstack:
    csiCinder:
      defaultStorageClass: {name: default, reclaimPolicy: Retain, allowVolumeExpansion: true, volumeBindingMode: WaitForFirstConsumer,
        availabilityZone: nova, volumeType: __DEFAULT__, allowedTopologies: [], fstype: ext4, enabled: true}
      additionalStorageClasses:
      - {name: ssd-fast, reclaimPolicy: Retain, allowVolumeExpansion: true, volumeBindingMode: WaitForFirstConsumer,
         availabilityZone: nova, volumeType: ssd.fast, allowedTopologies: [], fstype: ext4, enabled: true}
      - {name: hdd-slow, reclaimPolicy: Retain, allowVolumeExpansion: true, volumeBindingMode: WaitForFirstConsumer,
         availabilityZone: nova, volumeType: HDD_Slow, allowedTopologies: [], fstype: ext4, enabled: true}
    cloudConfig: {LoadBalancer: {lb-provider: amphora, lb-method: ROUND_ROBIN, create-monitor: true}}
  monitoring: {enabled: false}
  kubernetesDashboard: {enabled: true}
  ingress: {enabled: false}
`)
	if diff := cmp.Diff(want, jsonData(t, res.Values)); diff != "" {
		t.Errorf("values differ from the driver's (-want +got):\n%s", diff)
	}
	if res.ReleaseName != "cluster-example-a-111111111111" || res.Namespace != "magnum-fakeproject" ||
		res.Chart.Version != "0.10.1" || res.Chart.Name != "openstack-cluster" ||
		res.Chart.Repository != "https://azimuth-cloud.github.io/capi-helm-charts" {
		t.Errorf("release %s/%s chart %+v", res.Namespace, res.ReleaseName, res.Chart)
	}
	if len(res.Deviations) != 0 {
		t.Errorf("the driver's own test case needs no deviation, got %v", res.Deviations)
	}
}

// TestParityBootVolume is the boot volume decision table (docs/driver-rules.md, "Root volume").
func TestParityBootVolume(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		cinderType string
		cinderSize int
		siteType   *string
		siteSize   *int
		labels     v1alpha1.Labels
		want       map[string]any // nil: no machineRootVolume
	}{
		{"nothing set", "", 0, nil, nil, nil, nil},
		{"cinder defaults", "nvme", 12, nil, nil, nil, map[string]any{"volumeType": "nvme", "diskSize": 12.0}},
		{"label size", "", 15, nil, nil, v1alpha1.Labels{"boot_volume_size": "32"}, map[string]any{"diskSize": 32.0}},
		{"bad label size", "", 15, nil, nil, v1alpha1.Labels{"boot_volume_size": "NotANumber"}, map[string]any{"diskSize": 15.0}},
		{"site defaults win over cinder", "ignored", 99, ptrTo("site-type"), ptrTo(50), nil, map[string]any{"volumeType": "site-type", "diskSize": 50.0}},
		{"size 0 means no disk", "", 15, nil, nil, v1alpha1.Labels{"boot_volume_size": "0"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := renderValues(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
				cfg.Magnum.Cinder.DefaultBootVolumeType, cfg.Magnum.Cinder.DefaultBootVolumeSize = tc.cinderType, tc.cinderSize
				cfg.Magnum.CapiHelmClusterLabels.BootVolumeType, cfg.Magnum.CapiHelmClusterLabels.BootVolumeSize = tc.siteType, tc.siteSize
				ev.Cluster.Labels = tc.labels
			})
			for _, k := range []string{"controlPlane", "nodeGroupDefaults"} {
				got, _ := at(v, k+".machineRootVolume").(map[string]any)
				if tc.want == nil {
					if has(v, k+".machineRootVolume") {
						t.Errorf("%s.machineRootVolume = %v, want none", k, got)
					}
				} else if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("%s.machineRootVolume (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

// TestParityEtcd checks docs/driver-rules.md, "etcd".
func TestParityEtcd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		labels v1alpha1.Labels
		want   string
	}{
		{v1alpha1.Labels{"etcd_blockdevice_size": "10", "etcd_blockdevice_volume_type": "nvme"}, `{"blockDevice":{"size":10,"type":"Volume","volumeType":"nvme"}}`},
		{v1alpha1.Labels{"etcd_volume_size": "10", "etcd_volume_type": "nvme"}, `{"blockDevice":{"size":10,"type":"Volume","volumeType":"nvme"}}`},
		{v1alpha1.Labels{"etcd_blockdevice_size": "10", "etcd_blockdevice_type": "local"}, `{"blockDevice":{"size":10,"type":"Local"}}`},
		{v1alpha1.Labels{"etcd_blockdevice_size": "bad", "etcd_volume_size": "7"}, `{"blockDevice":{"size":7,"type":"Volume"}}`},
		{v1alpha1.Labels{"etcd_blockdevice_size": "-1"}, `{}`},
		{v1alpha1.Labels{"etcd_blockdevice_size": "5", "etcd_blockdevice_volume_az": "az-1", "etcd_blockdevice_type": "LOCAL"},
			`{"blockDevice":{"availabilityZone":"az-1","size":5,"type":"Volume"}}`},
	}
	for _, tc := range cases {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.Labels = tc.labels })
		if got := string(mustJSONCompact(t, v["etcd"])); got != tc.want {
			t.Errorf("labels %v: etcd = %s, want %s", tc.labels, got, tc.want)
		}
	}
}

// TestParityConditionalValues covers keystone auth, extra networks, CNI and allowed CIDRs.
func TestParityConditionalValues(t *testing.T) {
	t.Parallel()
	v := renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		ev.Cluster.Labels = v1alpha1.Labels{"keystone_auth_enabled": "true", "extra_network_names": "net-a net-b"}
	})
	if v["authWebhook"] != "k8s-keystone-auth" {
		t.Errorf("authWebhook = %v", v["authWebhook"])
	}
	if diff := cmp.Diff(map[string]any{"enabled": true, "values": map[string]any{
		"openstackAuthUrl": "https://keystone.example.org:5000/v3", "projectId": "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"}},
		at(v, "addons.openstack.k8sKeystoneAuth")); diff != "" {
		t.Errorf("k8sKeystoneAuth (-want +got):\n%s", diff)
	}
	wantPorts := yamlData(t, `[{}, {network: {name: net-a}, securityGroups: []}, {network: {name: net-b}, securityGroups: []}]`)
	if diff := cmp.Diff(wantPorts, at(v, "nodeGroupDefaults.machineNetworking.ports")); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if has(v, "controlPlane.machineNetworking") {
		t.Error("extra networks must not reach the control plane")
	}
	// The deprecated label is read only when the new one resolves empty.
	v = renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
		ev.Cluster.Labels = v1alpha1.Labels{"extra_network_names": "new", "extra_network_name": "old"}
	})
	if got := at(v, "nodeGroupDefaults.machineNetworking.ports").([]any); len(got) != 2 || !strings.Contains(string(mustJSONCompact(t, got)), "new") {
		t.Errorf("ports = %v", got)
	}
	// Label numbers and booleans arrive as Python would stringify them.
	ev, err := v1alpha1.DecodeEvent([]byte(strings.Replace(string(mustRead(t, "01-prod-a-create.yaml")),
		"labels: {}\n  floating_ip_enabled", "labels: {monitoring_enabled: true, boot_volume_size: 30}\n  floating_ip_enabled", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Cluster.Labels["monitoring_enabled"] != "True" || ev.Cluster.Labels["boot_volume_size"] != "30" {
		t.Errorf("labels = %v", ev.Cluster.Labels)
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

// TestDeviationsOfTheDriverRules: where the driver's rule is followed differently without a
// value path to compare (a name, a group left out), the render still says so, once, and
// only when the rule applies.
func TestDeviationsOfTheDriverRules(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("g", 50)
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.ClusterEvent, *generator.Config)
		key    string
		reason string // a part of the reason
	}{
		{"stack_id generated", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.StackID = "" },
			"stack_id", "suffix from the cluster UUID"},
		{"a node group Magnum deletes", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups = append(ev.NodeGroups, v1alpha1.NodeGroup{Name: "gpu", Role: "worker", FlavorID: "m1.medium",
				NodeCount: 1, Status: v1alpha1.DeleteInProgress})
		}, "nodeGroups", "node group gpu is left out while Magnum deletes it (DELETE_IN_PROGRESS)"},
		{"a MachineDeployment name the chart cuts", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups = append(ev.NodeGroups, v1alpha1.NodeGroup{Name: long, Role: "worker", FlavorID: "m1.medium", NodeCount: 1})
		}, "nodeGroups", "cut to 63 characters as the chart cuts it; the driver looks for \"prod-a-2b7xq4mzkd5h-" + long + "\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plain, err := renderResult(t, func(*v1alpha1.ClusterEvent, *generator.Config) {})
			if err != nil {
				t.Fatal(err)
			}
			if hasDeviation(plain, tc.key) {
				t.Fatalf("the fixture already has a %s deviation: %v", tc.key, plain.Deviations)
			}
			res, err := renderResult(t, tc.mutate)
			if err != nil {
				t.Fatal(err)
			}
			var found []generator.Deviation
			for _, d := range res.Deviations {
				if d.Key == tc.key && strings.Contains(d.Reason, tc.reason) {
					found = append(found, d)
				}
			}
			if len(found) != 1 {
				t.Errorf("deviations %v, want one %s saying %q", res.Deviations, tc.key, tc.reason)
			}
		})
	}
}
