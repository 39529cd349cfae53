package generator_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// renderValues renders fixture 01 after mutate and returns its values as plain JSON data.
func renderValues(t *testing.T, mutate func(*v1alpha1.ClusterEvent, *generator.Config)) map[string]any {
	t.Helper()
	ev := fixtureEvent(t, "01-prod-a-create.yaml")
	cfg := defaultConfig()
	if mutate != nil {
		mutate(ev, cfg)
	}
	res, err := generator.Render(ev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return jsonData(t, res.Values)
}

func jsonData(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func at(v map[string]any, path string) any {
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func has(v map[string]any, path string) bool {
	parts := strings.Split(path, ".")
	m, ok := at(v, strings.Join(parts[:len(parts)-1], ".")).(map[string]any)
	if len(parts) == 1 {
		m, ok = v, true
	}
	if !ok {
		return false
	}
	_, found := m[parts[len(parts)-1]]
	return found
}

func yamlData(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParityNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"cluster_example_$A": "cluster-example-a", "--Prod  A--": "prod-a", "": "", "ÄÖ": "", "a.b.c": "a-b-c",
	} {
		if got := magnum.SanitizedName(in); got != want {
			t.Errorf("SanitizedName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := magnum.ResourceName("r-1", "cloud-credentials"); got != "r-1-cloud-credentials" {
		t.Errorf("ResourceName = %q", got)
	}
	// The driver re-sanitizes R-x, collapsing the "--" of adopted names; the chart does not.
	if got := magnum.ResourceName("a-that--abc", "ca"); got != "a-that-abc-ca" {
		t.Errorf("ResourceName of an adopted -- name = %q", got)
	}
	if got := magnum.ChartComponentName(strings.Repeat("r", 50), strings.Repeat("w", 20)); len(got) != 63 || strings.HasSuffix(got, "-") {
		t.Errorf("ChartComponentName = %q (%d)", got, len(got))
	}
	for pid, want := range map[string]string{"123-456F": "magnum-123456f", "fake_project": "magnum-fakeproject",
		"9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c": "magnum-9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"} {
		if got := magnum.Namespace("magnum", pid); got != want {
			t.Errorf("Namespace(%q) = %q, want %q", pid, got, want)
		}
	}
}

func TestParityGeneratedReleaseName(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^[a-z0-9-]{1,30}-[a-z2-7]{12}$`)
	uuid := "8b2c3d5f-5f60-417e-9d3a-35465768798a"
	r := magnum.GenerateReleaseName("A-very-long-cluster-name-that-exceeds-thirty-chars", uuid)
	if !shape.MatchString(r) || strings.Contains(r, "--") || !strings.HasPrefix(r, "a-very-long-cluster-name-that-") {
		t.Errorf("release name %q: want sanitized(name)[:30] without a trailing '-', then 12 base32 characters", r)
	}
	if r != magnum.GenerateReleaseName("A-very-long-cluster-name-that-exceeds-thirty-chars", strings.ToUpper(uuid)) {
		t.Error("release name is not stable for the same cluster")
	}
	if r == magnum.GenerateReleaseName("A-very-long-cluster-name-that-exceeds-thirty-chars", "9b2c3d5f-5f60-417e-9d3a-35465768798a") {
		t.Error("two clusters with the same name got the same release name")
	}
	res := fixtureResult(t, "27-generated-release-name.yaml")
	if !res.ReleaseNameGenerated || res.ReleaseName != r {
		t.Errorf("render reported stack_id %q (generated %v), want %q", res.ReleaseName, res.ReleaseNameGenerated, r)
	}
	if res := fixtureResult(t, "01-prod-a-create.yaml"); res.ReleaseNameGenerated || res.ReleaseName != "prod-a-2b7xq4mzkd5h" {
		t.Errorf("an existing stack_id must be kept, got %q", res.ReleaseName)
	}
}

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
	if got := jsonData(t, res.Values); !reflect.DeepEqual(got, want) {
		t.Errorf("values differ from the driver's:\n got: %s\nwant: %s", mustJSON(t, got), mustJSON(t, want))
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

// TestParityLabels covers docs/driver-rules.md, "Labels": precedence, filtering,
// bool/int/csv parsing and fallbacks.
func TestParityLabels(t *testing.T) {
	t.Parallel()
	labels := func(l v1alpha1.Labels) func(*v1alpha1.ClusterEvent, *generator.Config) {
		return func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.Labels = l }
	}
	cases := []struct {
		name   string
		mutate func(*v1alpha1.ClusterEvent, *generator.Config)
		path   string
		want   any
	}{
		{"bool true spellings", labels(v1alpha1.Labels{"monitoring_enabled": " YES "}), "addons.monitoring.enabled", true},
		{"bool t", labels(v1alpha1.Labels{"monitoring_enabled": "t"}), "addons.monitoring.enabled", true},
		{"bool on", labels(v1alpha1.Labels{"monitoring_enabled": "On"}), "addons.monitoring.enabled", true},
		{"bool false spellings", labels(v1alpha1.Labels{"auto_healing_enabled": "n"}), "controlPlane.healthCheck.enabled", false},
		{"malformed bool falls back to the default", labels(v1alpha1.Labels{"auto_healing_enabled": "maybe"}), "controlPlane.healthCheck.enabled", true},
		{"empty bool falls back to the default", labels(v1alpha1.Labels{"master_lb_floating_ip_enabled": ""}), "apiServer.associateFloatingIP", true},
		{"int with sign, spaces and underscores", labels(v1alpha1.Labels{"boot_volume_size": " +1_0 "}), "controlPlane.machineRootVolume.diskSize", 10.0},
		{"malformed int falls back to the default", func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Magnum.Cinder.DefaultBootVolumeSize = 15
			ev.Cluster.Labels = v1alpha1.Labels{"boot_volume_size": "NotANumber"}
		}, "nodeGroupDefaults.machineRootVolume.diskSize", 15.0},
		{"cluster label beats template label", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.Labels["octavia_provider"] = "ovn"
			ev.Cluster.Labels = v1alpha1.Labels{"octavia_provider": "amphora"}
		}, "apiServer.loadBalancerProvider", "amphora"},
		{"template label is the default", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.Labels["octavia_provider"] = "ovn"
		}, "addons.openstack.cloudConfig.LoadBalancer.lb-method", "SOURCE_IP_PORT"},
		{"site default from [capi_helm_cluster_labels]", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Magnum.CapiHelmClusterLabels.OctaviaLBAlgorithm = "LEAST_CONNECTIONS"
		}, "addons.openstack.cloudConfig.LoadBalancer.lb-method", "LEAST_CONNECTIONS"},
		{"label values lose unsafe characters", labels(v1alpha1.Labels{"octavia_provider": "amph\nora{{ .Values.x }}: '\"---"}),
			"apiServer.loadBalancerProvider", "amphora .Values.x  ---"},
		{"a default is filtered too when labels exist", func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Magnum.CapiHelmClusterLabels.OctaviaProvider = "amph!ora"
		}, "apiServer.loadBalancerProvider", "amphora"},
		{"a default is not filtered when no label exists", func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Magnum.CapiHelmClusterLabels.OctaviaProvider = "amph!ora"
			ev.Cluster.Labels, ev.ClusterTemplate.Labels = nil, nil
		}, "apiServer.loadBalancerProvider", "amph!ora"},
		{"floating_ip_enabled is ignored for the label", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.FloatingIPEnabled = ptrTo(false)
		}, "apiServer.associateFloatingIP", true},
		{"master_lb_floating_ip_enabled false", labels(v1alpha1.Labels{"master_lb_floating_ip_enabled": "false"}), "apiServer.associateFloatingIP", false},
		{"master_lb_enabled is ignored", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.MasterLBEnabled = ptrTo(false) },
			"apiServer.enableLoadBalancer", true},
		{"chart version only from the template", labels(v1alpha1.Labels{"capi_helm_chart_version": "0.24.1"}), "addons.kubernetesDashboard", nil},
		{"kube_tag is not used", labels(v1alpha1.Labels{"kube_tag": "v1.20.0"}), "kubernetesVersion", "1.33.7"},
		{"dns nameservers split by commas", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.DNSNameserver = "8.8.8.8, 1.1.1.1"
		}, "clusterNetworking.dnsNameservers", []any{"8.8.8.8", "1.1.1.1"}},
		{"empty dns is null", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.ClusterTemplate.DNSNameserver = "" },
			"clusterNetworking.dnsNameservers", nil},
		{"fixed network uuid used as-is", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.FixedNetwork = "6A7B8C9D0E1F4A2B8C3D4E5F6A7B8C9D"
		}, "clusterNetworking.internalNetwork.networkFilter", map[string]any{"id": "6A7B8C9D0E1F4A2B8C3D4E5F6A7B8C9D"}},
		{"fixed network from the template", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.FixedNetwork = "net"
			ev.Resolved.Networks["net"] = "abc"
		}, "clusterNetworking.internalNetwork.networkFilter", map[string]any{"id": "abc"}},
		{"keypair falls back to the template", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Keypair, ev.ClusterTemplate.KeypairID = "", "tmpl-key"
		}, "machineSSHKeyName", "tmpl-key"},
		{"IPv6 allowed CIDRs keep colons", labels(v1alpha1.Labels{"api_master_lb_allowed_cidrs": "2001:db8::/32 , ,10.0.0.0/8"}),
			"apiServer.allowedCIDRs", []any{"2001:db8::/32", "10.0.0.0/8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := renderValues(t, tc.mutate)
			got := at(v, tc.path)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s = %#v, want %#v", tc.path, got, tc.want)
			}
		})
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
				if tc.want == nil && has(v, k+".machineRootVolume") || tc.want != nil && !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s.machineRootVolume = %v, want %v", k, got, tc.want)
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

func mustJSONCompact(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParityAutoscaling checks docs/driver-rules.md, "Node groups and autoscaling".
func TestParityAutoscaling(t *testing.T) {
	t.Parallel()
	worker := func(v map[string]any) map[string]any { return at(v, "nodeGroups").([]any)[0].(map[string]any) }
	t.Run("off: no keys, no validation", func(t *testing.T) {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.NodeGroups[1].MinNodeCount = ptrTo(0) })
		if w := worker(v); len(w) != 3 {
			t.Errorf("worker = %v, want only name, machineFlavor, machineCount", w)
		}
	})
	t.Run("default worker min 1 is unset: min = max, no autoscale", func(t *testing.T) {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"auto_scaling_enabled": "true"}
		})
		if _, ok := worker(v)["autoscale"]; ok {
			t.Errorf("worker = %v, want no autoscale (test_nodegroup_node_count_min_max_equal)", worker(v))
		}
	})
	t.Run("labels set the default worker's range", func(t *testing.T) {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"auto_scaling_enabled": "true", "min_node_count": "2", "max_node_count": "6"}
		})
		w := worker(v)
		if w["autoscale"] != true || w["machineCountMin"] != 2.0 || w["machineCountMax"] != 6.0 || w["machineCount"] != 3.0 {
			t.Errorf("worker = %v", w)
		}
	})
	t.Run("site defaults apply to the default worker only", func(t *testing.T) {
		v := renderValues(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Magnum.CapiHelmClusterLabels.AutoScalingEnabled = true
			cfg.Magnum.CapiHelmClusterLabels.MaxNodeCount = ptrTo(9)
			ev.NodeGroups = append(ev.NodeGroups, v1alpha1.NodeGroup{Name: "extra", FlavorID: "m1.medium", NodeCount: 2, MinNodeCount: ptrTo(2)})
		})
		groups := at(v, "nodeGroups").([]any)
		if w := groups[0].(map[string]any); w["machineCountMax"] != 9.0 || w["machineCountMin"] != 3.0 {
			t.Errorf("default worker = %v", w)
		}
		if e := groups[1].(map[string]any); e["autoscale"] != nil {
			t.Errorf("extra group = %v, want no autoscale (min = max = 2)", e)
		}
	})
}

// TestParityStorageClasses checks docs/driver-rules.md, "Storage classes (Cinder CSI)".
func TestParityStorageClasses(t *testing.T) {
	t.Parallel()
	v := renderValues(t, func(ev *v1alpha1.ClusterEvent, cfg *generator.Config) {
		ev.Resolved.VolumeTypes = []string{"__DEFAULT__", "ssd.fast", "HDD_Slow"}
		cfg.Magnum.CapiHelm.CSICinderDefaultVolumeType = ptrTo("ssd.fast")
		ev.Cluster.Labels = v1alpha1.Labels{"csi_cinder_reclaim_policy": "Delete", "csi_cinder_fstype": "xfs"}
	})
	cs := at(v, "addons.openstack.csiCinder").(map[string]any)
	def := cs["defaultStorageClass"].(map[string]any)
	if def["name"] != "ssd-fast" || def["reclaimPolicy"] != "Delete" || def["fstype"] != "xfs" ||
		!reflect.DeepEqual(def["allowedTopologies"], []any{}) {
		t.Errorf("default class = %v", def)
	}
	var names []string
	for _, c := range cs["additionalStorageClasses"].([]any) {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if !reflect.DeepEqual(names, []string{"default", "hdd-slow"}) {
		t.Errorf("additional classes = %v, want Cinder's order without the default", names)
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
	if got := at(v, "addons.openstack.k8sKeystoneAuth"); !reflect.DeepEqual(got, map[string]any{"enabled": true, "values": map[string]any{
		"openstackAuthUrl": "https://keystone.example.org:5000/v3", "projectId": "9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c"}}) {
		t.Errorf("k8sKeystoneAuth = %v", got)
	}
	wantPorts := yamlData(t, `[{}, {network: {name: net-a}, securityGroups: []}, {network: {name: net-b}, securityGroups: []}]`)
	if got := at(v, "nodeGroupDefaults.machineNetworking.ports"); !reflect.DeepEqual(got, wantPorts) {
		t.Errorf("ports = %v", got)
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

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	ev := fixtureEvent(t, name) // asserts it decodes
	_ = ev
	b, err := readFixture(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
