package generator_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
)

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
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}
