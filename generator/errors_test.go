package generator_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

func intp(i int) *int { return &i }

// TestBadInput checks that each broken input is refused with an error that names the
// field and the rule, wraps ErrInvalidInput, and never quotes a secret.
func TestBadInput(t *testing.T) {
	t.Parallel()
	secretValues := func(ev *v1alpha1.ClusterEvent) []string {
		s := ev.Secrets
		return []string{s.ApplicationCredential.Secret.Reveal(), s.Certificates.CA.Key.Reveal()[30:60]}
	}
	cases := []struct {
		name   string
		mutate func(ev *v1alpha1.ClusterEvent, cfg *generator.Config)
		field  string
		rule   string
	}{
		{"missing kube_version", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Resolved.Image.KubeVersion = "" },
			"resolved.image.kube_version", "does not have a kube_version property"},
		{"missing os_distro", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Resolved.Image.OSDistro = "" },
			"resolved.image.os_distro", "does not have an os_distro property"},
		{"missing image", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Resolved.Image = nil },
			"resolved.image.id", "required"},
		{"image id that is not a UUID", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Resolved.Image.ID = "imageid1" },
			"resolved.image.id", "not a Glance image UUID"},
		{"pre-release kube_version", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Resolved.Image.KubeVersion = "v1.30.0-rc.1" },
			"resolved.image.kube_version", "not a Kubernetes release version"},
		{"node group name too short", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.NodeGroups[1].Name = "ng" },
			"nodegroups[ng].name", "at least 3 characters"},
		{"node group name starts with a digit", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.NodeGroups[1].Name = "1abc" },
			"nodegroups[1abc].name", "starting with a letter"},
		{"node group name reserved", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.NodeGroups[1].Name = "Control_Plane" },
			"nodegroups[Control_Plane].name", "reserved"},
		{"duplicate node group names", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups = append(ev.NodeGroups, ev.NodeGroups[1])
			ev.NodeGroups[2].Name, ev.NodeGroups[2].IsDefault = "Default_Worker", false
		}, "nodegroups[Default_Worker].name", "the same as nodegroups[default-worker]"},
		{"node group names collide after the chart's 63-character cut", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			long := strings.Repeat("x", 60)
			ev.NodeGroups = append(ev.NodeGroups, ev.NodeGroups[1], ev.NodeGroups[1])
			ev.NodeGroups[2].Name, ev.NodeGroups[2].IsDefault = "w"+long+"a", false
			ev.NodeGroups[3].Name, ev.NodeGroups[3].IsDefault = "w"+long+"b", false
		}, "nodegroups[w" + strings.Repeat("x", 60) + "b].name", "collides with nodegroups[w" + strings.Repeat("x", 60) + "a]"},
		{"negative node count of a cluster without node groups", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups, ev.Cluster.NodeCount = nil, intp(-1)
		}, "cluster.node_count", "must not be negative"},
		{"even control plane of a cluster without node groups", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.NodeGroups, ev.Cluster.MasterCount = nil, intp(2)
		}, "cluster.master_count", "odd number"},
		{"negative node count", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.NodeGroups[1].NodeCount = -1 },
			"nodegroups[default-worker].node_count", "must not be negative"},
		{"even control plane", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.NodeGroups[0].NodeCount = 2 },
			"nodegroups[default-master].node_count", "odd number"},
		{"autoscaling min above node_count", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"auto_scaling_enabled": "true", "min_node_count": "5", "max_node_count": "9"}
		}, "nodegroups[default-worker].min_node_count", "Min node count must be less than or equal to current node count"},
		{"autoscaling max below min", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"auto_scaling_enabled": "true", "min_node_count": "2", "max_node_count": "1"}
		}, "nodegroups[default-worker].max_node_count", "Max node count must be greater than or equal to min node count"},
		{"autoscaling min 0 on a chart before scale-from-zero", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.Labels["capi_helm_chart_version"] = "0.24.1"
			ev.Cluster.Labels = v1alpha1.Labels{"auto_scaling_enabled": "true"}
			ev.NodeGroups = append(ev.NodeGroups, v1alpha1.NodeGroup{Name: "extra", FlavorID: "m1.medium", NodeCount: 2,
				MinNodeCount: intp(0), MaxNodeCount: intp(4)})
		}, "nodegroups[extra].min_node_count", "Min node count must be greater than or equal to 1"},
		{"release name over 53 characters", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.StackID = strings.Repeat("r", 54)
		}, "cluster.stack_id", "Helm allows 53"},
		{"release name not a DNS label", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.StackID = "Prod_A" },
			"cluster.stack_id", "must be a DNS label"},
		{"project id with path characters", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.ProjectID = "proj/../x" },
			"cluster.project_id", "characters a Keystone project id cannot have"},
		{"missing project id", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.ProjectID = "" },
			"cluster.project_id", "required"},
		{"missing cluster uuid", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.UUID = "" },
			"cluster.uuid", "required"},
		{"cluster uuid not a UUID", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.UUID = "prod-a" },
			"cluster.uuid", "not a UUID"},
		{"invalid fixed_subnet_cidr label", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"fixed_subnet_cidr": "10.0.0.0/33"}
		}, "cluster.labels.fixed_subnet_cidr", "invalid CIDR"},
		{"invalid allowed CIDR label", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.Labels["api_master_lb_allowed_cidrs"] = "10.0.0.0/8,300.1.1.1/32"
		}, "cluster_template.labels.api_master_lb_allowed_cidrs", "invalid CIDR \"300.1.1.1/32\""},
		{"invalid overlay pod CIDR", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.ValuesOverlay = map[string]any{"kubeNetwork": map[string]any{"pods": map[string]any{"cidrBlocks": []any{"172.16.0.0/40"}}}}
		}, "values_overlay.kubeNetwork.pods.cidrBlocks[0]", "invalid CIDR"},
		{"unknown CSI default volume type", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Magnum.CapiHelm.CSICinderDefaultVolumeType = ptrTo("gold")
		}, "magnum.capi_helm.csi_cinder_default_volume_type", "gold is not a valid Cinder volume type."},
		{"no volume types", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Resolved.VolumeTypes = nil },
			"resolved.volume_types", "at least one Cinder volume type"},
		{"external network not resolved", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Resolved.Networks = nil },
			"cluster_template.external_network_id", "external network \"public\" not found"},
		{"fixed network not resolved", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.FixedNetwork = "tenant-net" },
			"cluster.fixed_network", "not found in resolved.networks"},
		{"unsupported network driver", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.ClusterTemplate.NetworkDriver = "weave" },
			"cluster_template.network_driver", "not supported by the openstack-cluster chart"},
		{"dns nameserver not an IP", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.DNSNameserver = "8.8.8.8,dns.example"
		},
			"cluster_template.dns_nameserver", "not an IP address"},
		{"chart version label not a version", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.ClusterTemplate.Labels["capi_helm_chart_version"] = "latest"
		}, "cluster_template.labels.capi_helm_chart_version", "not a chart version"},
		{"negative boot volume size", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"boot_volume_size": "-20"}
		}, "cluster.labels.boot_volume_size", "must not be negative"},
		{"flavor with too few vCPUs", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.NodeGroups[1].FlavorID = "m1.small" },
			"nodegroups[default-worker].flavor_id", "Flavor m1.small does not have enough CPU to run Kubernetes. Minimum 2 vcpus required."},
		{"unknown flavor", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Cluster.MasterFlavorID = "x1.huge" },
			"cluster.master_flavor_id", "Flavor x1.huge does not have enough RAM to run Kubernetes. Minimum 2048 MB required."},
		{"nodegroup operation without a target", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Operation, ev.NodeGroup = v1alpha1.UpdateNodeGroup, ""
		}, "nodegroup", "required for update_nodegroup"},
		{"nodegroup target missing", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Operation, ev.NodeGroup = v1alpha1.CreateNodeGroup, "gpu"
		}, "nodegroup", "no node group named \"gpu\""},
		{"deleting a default node group", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Operation, ev.NodeGroup = v1alpha1.DeleteNodeGroup, "default-worker"
		}, "nodegroup", "default or control-plane node group"},
		{"keystone auth without an auth URL", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Cluster.Labels = v1alpha1.Labels{"keystone_auth_enabled": "true"}
			ev.Context.AuthURL, ev.Resolved.KeystonePublicURL = "", ""
		}, "context.auth_url", "required when keystone_auth_enabled"},
		{"application credential without its secret", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Secrets.ApplicationCredential.Secret = ""
		}, "secrets.application_credential.secret", "required"},
		{"CA key that is not PEM", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Secrets.Certificates.Etcd.Key = v1alpha1.Sensitive("hunter2-not-a-key")
		}, "secrets.certificates.etcd.key", "must be PEM"},
		{"certificate where a key belongs", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) {
			ev.Secrets.Certificates.CA.Key = v1alpha1.Sensitive(ev.Secrets.Certificates.CA.Cert)
		}, "secrets.certificates.ca.key", "is a \"CERTIFICATE\""},
		{"missing CA bundle", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Secrets.CABundle = "" },
			"secrets.ca_bundle", "required"},
		{"missing region", func(ev *v1alpha1.ClusterEvent, _ *generator.Config) { ev.Resolved.RegionName = "" },
			"resolved.region_name", "required to write clouds.yaml"},
		{"bad drift detection mode", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) { cfg.Flux.DriftDetection = "fix" },
			"flux.drift_detection", "must be one of enabled, warn, disabled"},
		{"bad reclaim policy option", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) {
			cfg.Magnum.CapiHelmClusterLabels.CSICinderReclaimPolicy = "Recycle"
		}, "magnum.capi_helm_cluster_labels.csi_cinder_reclaim_policy", "must be one of Retain, Delete"},
		{"namespace prefix not a label", func(_ *v1alpha1.ClusterEvent, cfg *generator.Config) { cfg.Magnum.CapiHelm.NamespacePrefix = "Magnum" },
			"magnum.capi_helm.namespace_prefix", "lower-case DNS label"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := fixtureEvent(t, "01-prod-a-create.yaml")
			cfg := defaultConfig()
			secrets := secretValues(ev)
			tc.mutate(ev, cfg)
			res, err := render(ev, cfg)
			if err == nil {
				t.Fatalf("rendered %v, want an error on %s", res, tc.field)
			}
			assertFieldError(t, err, tc.field, tc.rule)
			for _, s := range secrets {
				if s != "" && strings.Contains(err.Error(), s) {
					t.Errorf("error quotes a secret value: %v", err)
				}
			}
		})
	}
}

func assertFieldError(t *testing.T, err error, field, rule string) {
	t.Helper()
	if !errors.Is(err, v1alpha1.ErrInvalidInput) {
		t.Errorf("error does not wrap ErrInvalidInput: %v", err)
	}
	var fes v1alpha1.InputErrors
	var fe *v1alpha1.FieldError
	var list []*v1alpha1.FieldError
	switch {
	case errors.As(err, &fes):
		list = fes
	case errors.As(err, &fe):
		list = []*v1alpha1.FieldError{fe}
	default:
		t.Fatalf("error is not a FieldError: %T %v", err, err)
	}
	for _, e := range list {
		if e.Field == field && strings.Contains(e.Message, rule) {
			return
		}
	}
	t.Errorf("no error on %s saying %q; got:\n%v", field, rule, err)
}

func ptrTo[T any](v T) *T { return &v }

// TestDecodeBadInput covers documents that fail before rendering.
func TestDecodeBadInput(t *testing.T) {
	t.Parallel()
	base := func(extra string) string {
		return "apiVersion: magnum-gitops.io/v1alpha1\nkind: ClusterEvent\noperation: create_cluster\n" + extra
	}
	cases := []struct{ name, doc, field, rule string }{
		{"unknown operation", "apiVersion: magnum-gitops.io/v1alpha1\nkind: ClusterEvent\noperation: rebuild_cluster\n",
			"operation", "unknown operation \"rebuild_cluster\""},
		{"wrong apiVersion", "apiVersion: v1\nkind: ClusterEvent\noperation: create_cluster\n", "apiVersion", "must be \"magnum-gitops.io/v1alpha1\""},
		{"wrong kind", "apiVersion: magnum-gitops.io/v1alpha1\nkind: Cluster\noperation: create_cluster\n", "kind", "must be \"ClusterEvent\""},
		{"unknown top-level field", base("clusters: {}\n"), "clusters", "unknown field"},
		{"label that is a list", base("cluster: {labels: {boot_volume_size: [1, 2]}}\n"), "cluster.labels", "label \"boot_volume_size\" must be a string"},
		{"node count that is text", base("nodegroups: [{name: w, node_count: three}]\n"), "nodegroups.node_count", "must be an integer"},
		{"not YAML", "operation: [unclosed\n", "(document)", "not valid YAML"},
		{"not a mapping", "- a\n- b\n", "(document)", "must be a ClusterEvent mapping"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := v1alpha1.DecodeEvent([]byte(tc.doc))
			if err == nil {
				t.Fatal("decoded, want an error")
			}
			assertFieldError(t, err, tc.field, tc.rule)
		})
	}
}
