package generator_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

const magnumConf = `
[DEFAULT]
debug = true
transport_url = rabbit://magnum:secret@rabbit:5672/

[capi_helm]
namespace_prefix = mgmt
default_helm_chart_version = 0.27.0
minimum_flavor_vcpus = 4
csi_cinder_default_volume_type = ssd
csi_cinder_allowed_topologies = zone-a, zone-b
# deprecated home of a label default, still honoured:
csi_cinder_fstype = xfs
csi_cinder_reclaim_policy = Delete

[capi_helm_cluster_labels]
auto_scaling_enabled = True
max_node_count = 10
boot_volume_size = None
octavia_provider = ovn
csi_cinder_reclaim_policy = Retain

[cinder]
default_boot_volume_type = standard
default_boot_volume_size = 20

[cinder_client]
region_name = RegionTwo

[drivers]
verify_ca = false
openstack_ca_file = /etc/ssl/certs/cloud-ca.pem

[keystone_authtoken]
password = not-ours
`

func TestParseMagnumConf(t *testing.T) {
	t.Parallel()
	cfg := generator.DefaultConfig()
	if err := generator.ParseMagnumConf([]byte(magnumConf), &cfg.Magnum); err != nil {
		t.Fatal(err)
	}
	m := cfg.Magnum
	l := m.CapiHelmClusterLabels
	for name, got := range map[string]any{
		"namespace_prefix": m.CapiHelm.NamespacePrefix, "default_helm_chart_version": m.CapiHelm.DefaultHelmChartVersion,
		"minimum_flavor_vcpus": m.CapiHelm.MinimumFlavorVCPUs, "csi_cinder_default_volume_type": *m.CapiHelm.CSICinderDefaultVolumeType,
		"csi_cinder_allowed_topologies": strings.Join(m.CapiHelm.CSICinderAllowedTopologies, "|"),
		"auto_scaling_enabled":          l.AutoScalingEnabled, "max_node_count": *l.MaxNodeCount, "boot_volume_size is None": l.BootVolumeSize == nil,
		"octavia_provider": l.OctaviaProvider, "csi_cinder_fstype (deprecated alias)": l.CSICinderFSType,
		"csi_cinder_reclaim_policy (new section wins)": l.CSICinderReclaimPolicy,
		"default_boot_volume_size":                     m.Cinder.DefaultBootVolumeSize, "region_name": m.CinderClient.RegionName,
		"verify_ca": m.Drivers.VerifyCA, "openstack_ca_file": m.Drivers.OpenstackCAFile,
		"unset options keep their defaults": l.CSICinderAvailabilityZone,
	} {
		want := map[string]any{"namespace_prefix": "mgmt", "default_helm_chart_version": "0.27.0", "minimum_flavor_vcpus": 4,
			"csi_cinder_default_volume_type": "ssd", "csi_cinder_allowed_topologies": "zone-a|zone-b", "auto_scaling_enabled": true,
			"max_node_count": 10, "boot_volume_size is None": true, "octavia_provider": "ovn", "csi_cinder_fstype (deprecated alias)": "xfs",
			"csi_cinder_reclaim_policy (new section wins)": "Retain", "default_boot_volume_size": 20, "region_name": "RegionTwo",
			"verify_ca": false, "openstack_ca_file": "/etc/ssl/certs/cloud-ca.pem", "unset options keep their defaults": "nova"}[name]
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the parsed configuration is invalid: %v", err)
	}

	bad := generator.DefaultConfig()
	err := generator.ParseMagnumConf([]byte("[capi_helm_cluster_labels]\nauto_healing_enabled = maybe\nmax_node_count = ten\n"), &bad.Magnum)
	if !errors.Is(err, v1alpha1.ErrInvalidInput) || !strings.Contains(err.Error(), "magnum.conf [capi_helm_cluster_labels] auto_healing_enabled: must be a boolean") ||
		!strings.Contains(err.Error(), "max_node_count: must be an integer") {
		t.Errorf("err = %v", err)
	}
}
