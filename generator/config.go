package generator

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// Config is everything rendering depends on besides the event. Its "magnum" section uses
// magnum.conf's own section and option names and defaults, so an operator can copy options
// from an existing driver deployment.
type Config struct {
	Magnum MagnumConfig `json:"magnum"`
	Flux   FluxConfig   `json:"flux"`
	// Format is what deploys each cluster: "flux" (HelmRelease) or "argo" (Application).
	Format string     `json:"format"`
	Argo   ArgoConfig `json:"argo"`
	// ValuesOverlay is deep-merged over the rendered chart values for every cluster: maps
	// merge, lists and scalars replace, and null is sent as null, which Helm takes as
	// "remove this key and the chart's default for it".
	ValuesOverlay map[string]any `json:"values_overlay,omitempty"`
	// ManagementCluster says what the management cluster serves.
	ManagementCluster ManagementClusterConfig `json:"management_cluster,omitempty"`
	// ManagementClusters, when set, are the management clusters the repository feeds, each
	// under its own path in place of flux.path (management.go).
	ManagementClusters []ManagementCluster `json:"management_clusters,omitempty"`
	// Features holds the site defaults of the feature labels (OIDC, placement, …).
	Features FeaturesConfig `json:"features,omitempty"`
	// Registries are the site's container registry mirrors, CAs and credentials.
	Registries RegistriesConfig `json:"registries,omitempty"`
}

// MagnumConfig mirrors the magnum.conf sections the driver reads.
type MagnumConfig struct {
	CapiHelm              CapiHelmConfig      `json:"capi_helm"`
	CapiHelmClusterLabels ClusterLabelsConfig `json:"capi_helm_cluster_labels"`
	Cinder                CinderConfig        `json:"cinder"`
	CinderClient          CinderClientConfig  `json:"cinder_client"`
	Drivers               DriversConfig       `json:"drivers"`
}

// CapiHelmConfig is magnum.conf [capi_helm].
type CapiHelmConfig struct {
	KubeconfigFile                    string   `json:"kubeconfig_file,omitempty"`
	NamespacePrefix                   string   `json:"namespace_prefix"`
	HelmChartRepo                     string   `json:"helm_chart_repo"`
	HelmChartName                     string   `json:"helm_chart_name"`
	DefaultHelmChartVersion           string   `json:"default_helm_chart_version"`
	MinimumFlavorRAM                  int      `json:"minimum_flavor_ram"`
	MinimumFlavorVCPUs                int      `json:"minimum_flavor_vcpus"`
	CSICinderDefaultVolumeType        *string  `json:"csi_cinder_default_volume_type,omitempty"`
	CSICinderAllowedTopologies        []string `json:"csi_cinder_allowed_topologies"`
	AppCredInterfaceType              string   `json:"app_cred_interface_type"`
	APIResources                      string   `json:"api_resources,omitempty"`
	K8sControlPlaneResourceConditions []string `json:"k8s_control_plane_resource_conditions"`
}

// ClusterLabelsConfig is magnum.conf [capi_helm_cluster_labels]: the site default of each
// label, under the label's own name. nil means the option is unset (None).
type ClusterLabelsConfig struct {
	EtcdBlockdeviceSize           int     `json:"etcd_blockdevice_size"`
	EtcdBlockdeviceType           string  `json:"etcd_blockdevice_type"`
	EtcdBlockdeviceVolumeType     string  `json:"etcd_blockdevice_volume_type"`
	EtcdBlockdeviceVolumeAZ       string  `json:"etcd_blockdevice_volume_az"`
	EtcdVolumeSize                int     `json:"etcd_volume_size"`
	EtcdVolumeType                string  `json:"etcd_volume_type"`
	MonitoringEnabled             bool    `json:"monitoring_enabled"`
	KubeDashboardEnabled          bool    `json:"kube_dashboard_enabled"`
	AutoHealingEnabled            bool    `json:"auto_healing_enabled"`
	AutoScalingEnabled            bool    `json:"auto_scaling_enabled"`
	MinNodeCount                  *int    `json:"min_node_count,omitempty"`
	MaxNodeCount                  *int    `json:"max_node_count,omitempty"`
	KeystoneAuthEnabled           bool    `json:"keystone_auth_enabled"`
	CSICinderAvailabilityZone     string  `json:"csi_cinder_availability_zone"`
	CSICinderReclaimPolicy        string  `json:"csi_cinder_reclaim_policy"`
	CSICinderVolumeBindingMode    string  `json:"csi_cinder_volume_binding_mode"`
	CSICinderFSType               string  `json:"csi_cinder_fstype"`
	CSICinderAllowVolumeExpansion bool    `json:"csi_cinder_allow_volume_expansion"`
	OctaviaProvider               string  `json:"octavia_provider"`
	OctaviaLBAlgorithm            string  `json:"octavia_lb_algorithm"`
	OctaviaLBHealthcheck          bool    `json:"octavia_lb_healthcheck"`
	MasterLBFloatingIPEnabled     bool    `json:"master_lb_floating_ip_enabled"`
	FixedSubnetCIDR               string  `json:"fixed_subnet_cidr"`
	APIMasterLBAllowedCIDRs       string  `json:"api_master_lb_allowed_cidrs"`
	ExtraNetworkNames             string  `json:"extra_network_names"`
	BootVolumeType                *string `json:"boot_volume_type,omitempty"`
	BootVolumeSize                *int    `json:"boot_volume_size,omitempty"`
	CapiHelmChartVersion          string  `json:"capi_helm_chart_version,omitempty"`
}

// CinderConfig is magnum.conf [cinder].
type CinderConfig struct {
	DefaultBootVolumeType string `json:"default_boot_volume_type"`
	DefaultBootVolumeSize int    `json:"default_boot_volume_size"`
}

// CinderClientConfig is magnum.conf [cinder_client]; its region becomes the clouds.yaml
// region_name when the event does not resolve one.
type CinderClientConfig struct {
	RegionName string `json:"region_name,omitempty"`
}

// DriversConfig is magnum.conf [drivers].
type DriversConfig struct {
	VerifyCA bool `json:"verify_ca"`
	// OpenstackCAFile is read by the caller (the generator does no I/O) into
	// SecretMaterial.CABundle when the event has none.
	OpenstackCAFile string `json:"openstack_ca_file,omitempty"`
}

// ManagementClusterConfig describes the CAPI management cluster the repository is applied to.
type ManagementClusterConfig struct {
	// CAPOAPIVersions are the infrastructure.cluster.x-k8s.io versions its CAPO serves (CAPO
	// ≥ 0.12 serves only v1beta1). When set, a chart that writes another version is refused;
	// when empty, it is only reported.
	CAPOAPIVersions []string `json:"capo_api_versions,omitempty"`
}

// FluxConfig shapes the Flux objects and the repository layout.
type FluxConfig struct {
	// Path is the directory of the Git repository that holds the rendered tree: the path a
	// Flux Kustomization reconciles.
	Path string `json:"path"`
	// SourceNamespace is where the shared HelmRepository/OCIRepository objects live.
	SourceNamespace string `json:"source_namespace"`
	// Interval is the HelmRelease and source reconcile interval.
	Interval Duration `json:"interval"`
	// Timeout is the HelmRelease timeout for Helm actions (the driver's --timeout 5m).
	Timeout Duration `json:"timeout"`
	// RetryInterval is how often a failed install or upgrade is retried (RetryOnFailure).
	RetryInterval Duration `json:"retry_interval"`
	// UninstallTimeout bounds helm uninstall; long, because deleting a Cluster is slow.
	UninstallTimeout Duration `json:"uninstall_timeout"`
	// MaxHistory is the Helm release history kept (the driver's --history-max 10).
	MaxHistory int `json:"max_history"`
	// DriftDetection is the HelmRelease driftDetection.mode: enabled, warn or disabled.
	DriftDetection string `json:"drift_detection"`
	// Layout is how Flux (or in Argo mode, Argo CD) applies the tree: LayoutSingle
	// (default), LayoutPerNamespace or LayoutBranchPerNamespace, whose GitRepositories and
	// Kustomizations reconcile at Interval and time out after Timeout, retrying after
	// RetryInterval (in Argo mode, a parent Application per namespace: argolayout.go).
	Layout string `json:"layout"`
	// Git is the repository the per-namespace GitRepositories fetch (per-namespace only).
	Git FluxGitConfig `json:"git,omitempty"`
	// DecryptionSecret holds the age key the per-namespace Kustomizations decrypt with.
	DecryptionSecret string `json:"decryption_secret"`
	// PostRenderers are the site's own patches to the chart's rendered objects, as in a
	// HelmRelease's spec.postRenderers (sitepostrender.go).
	PostRenderers []helmv2.PostRenderer `json:"post_renderers,omitempty"`
}

// Duration is a time.Duration written as Go/Kubernetes duration text ("5m", "1h30m").
type Duration struct{ time.Duration }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. 5m, 1h30m)", s)
	}
	d.Duration = v
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// DefaultConfig returns the magnum-capi-helm 1.4.0 and Magnum defaults, plus ours for Flux.
func DefaultConfig() Config {
	return Config{
		Magnum: MagnumConfig{
			CapiHelm: CapiHelmConfig{
				NamespacePrefix:            "magnum",
				HelmChartRepo:              "https://azimuth-cloud.github.io/capi-helm-charts",
				HelmChartName:              "openstack-cluster",
				DefaultHelmChartVersion:    "0.10.1",
				MinimumFlavorRAM:           2048,
				MinimumFlavorVCPUs:         2,
				CSICinderAllowedTopologies: []string{},
				AppCredInterfaceType:       "public",
				K8sControlPlaneResourceConditions: []string{"MachinesReady", "Ready",
					"EtcdClusterHealthy", "ControlPlaneComponentsHealthy"},
			},
			CapiHelmClusterLabels: ClusterLabelsConfig{
				EtcdBlockdeviceType:           "volume",
				KubeDashboardEnabled:          true,
				AutoHealingEnabled:            true,
				CSICinderAvailabilityZone:     "nova",
				CSICinderReclaimPolicy:        "Retain",
				CSICinderVolumeBindingMode:    "WaitForFirstConsumer",
				CSICinderFSType:               "ext4",
				CSICinderAllowVolumeExpansion: true,
				OctaviaProvider:               "amphora",
				OctaviaLBHealthcheck:          true,
				MasterLBFloatingIPEnabled:     true,
				FixedSubnetCIDR:               "10.0.0.0/24",
			},
			Drivers: DriversConfig{VerifyCA: true},
		},
		Format: FormatFlux,
		Argo: ArgoConfig{
			Namespace:         "argocd",
			Project:           "default",
			DestinationServer: "https://kubernetes.default.svc",
			CascadeDelete:     true,
		},
		Flux: FluxConfig{
			Path:             "clusters/magnum",
			SourceNamespace:  "flux-system",
			Interval:         Duration{10 * time.Minute},
			Timeout:          Duration{5 * time.Minute},
			RetryInterval:    Duration{5 * time.Minute},
			UninstallTimeout: Duration{30 * time.Minute},
			MaxHistory:       10,
			DriftDetection:   "warn",
			Layout:           LayoutSingle,
			Git:              FluxGitConfig{Branch: defaultGitBranch},
			DecryptionSecret: defaultDecryptionSecret,
		},
	}
}

// Validate checks the configuration and names each offending option.
func (c *Config) Validate() error {
	var p problems
	ch := c.Magnum.CapiHelm
	if ch.NamespacePrefix == "" || magnum.SanitizedName(ch.NamespacePrefix) != ch.NamespacePrefix {
		p.add("magnum.capi_helm.namespace_prefix", "must be a lower-case DNS label, got %q", ch.NamespacePrefix)
	}
	if ch.HelmChartName == "" {
		p.add("magnum.capi_helm.helm_chart_name", "must not be empty")
	}
	if ch.HelmChartRepo == "" && !strings.HasPrefix(ch.HelmChartName, "oci://") {
		p.add("magnum.capi_helm.helm_chart_repo", "must be set unless helm_chart_name is an oci:// reference")
	}
	// Chart locations land in Git in clear (and in the source's name): never quote them,
	// refuse credentials, which belong in the source's secretRef.
	if ch.HelmChartRepo != "" {
		u, err := url.Parse(ch.HelmChartRepo)
		switch {
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			p.add("magnum.capi_helm.helm_chart_repo", "must be an http(s) URL")
		case URLCarriesCredentials(u):
			p.add("magnum.capi_helm.helm_chart_repo", "must not carry a user, password, token or query")
		}
	}
	if strings.HasPrefix(ch.HelmChartName, "oci://") {
		if u, err := url.Parse(ch.HelmChartName); err != nil || URLCarriesCredentials(u) {
			p.add("magnum.capi_helm.helm_chart_name", "must be an oci:// reference without a user, password, token or query")
		}
	}
	if ch.MinimumFlavorRAM < 0 {
		p.add("magnum.capi_helm.minimum_flavor_ram", "must not be negative")
	}
	if ch.MinimumFlavorVCPUs < 0 {
		p.add("magnum.capi_helm.minimum_flavor_vcpus", "must not be negative")
	}
	if !slices.Contains([]string{"public", "internal", "admin"}, ch.AppCredInterfaceType) {
		p.add("magnum.capi_helm.app_cred_interface_type", "must be public, internal or admin, got %q", ch.AppCredInterfaceType)
	}
	lc := c.Magnum.CapiHelmClusterLabels
	// oslo.config enforces these choices on configuration values (not on labels).
	choice := func(field, v string, allowed ...string) {
		if !slices.Contains(allowed, v) {
			p.add("magnum.capi_helm_cluster_labels."+field, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
		}
	}
	choice("etcd_blockdevice_type", lc.EtcdBlockdeviceType, "volume", "local")
	choice("csi_cinder_reclaim_policy", lc.CSICinderReclaimPolicy, "Retain", "Delete")
	choice("csi_cinder_volume_binding_mode", lc.CSICinderVolumeBindingMode, "WaitForFirstConsumer", "Immediate")
	if _, err := netip.ParsePrefix(lc.FixedSubnetCIDR); err != nil {
		p.add("magnum.capi_helm_cluster_labels.fixed_subnet_cidr", "invalid CIDR %q", lc.FixedSubnetCIDR)
	}
	for _, c := range strings.Split(lc.APIMasterLBAllowedCIDRs, ",") {
		if c = strings.TrimSpace(c); c != "" {
			if _, err := netip.ParsePrefix(c); err != nil {
				p.add("magnum.capi_helm_cluster_labels.api_master_lb_allowed_cidrs", "invalid CIDR %q", c)
			}
		}
	}
	if lc.MinNodeCount != nil && *lc.MinNodeCount < 0 {
		p.add("magnum.capi_helm_cluster_labels.min_node_count", "must not be negative")
	}
	if lc.MaxNodeCount != nil && *lc.MaxNodeCount < 0 {
		p.add("magnum.capi_helm_cluster_labels.max_node_count", "must not be negative")
	}
	f := c.Flux
	if f.Path == "" || strings.HasPrefix(f.Path, "/") || slices.Contains(strings.Split(f.Path, "/"), "..") {
		p.add("flux.path", "must be a relative path inside the repository, got %q", f.Path)
	}
	if magnum.SanitizedName(f.SourceNamespace) != f.SourceNamespace || f.SourceNamespace == "" {
		p.add("flux.source_namespace", "must be a namespace name, got %q", f.SourceNamespace)
	}
	for name, d := range map[string]Duration{"interval": f.Interval, "timeout": f.Timeout,
		"retry_interval": f.RetryInterval, "uninstall_timeout": f.UninstallTimeout} {
		if d.Duration <= 0 {
			p.add("flux."+name, "must be a positive duration")
		}
	}
	if f.MaxHistory < 0 {
		p.add("flux.max_history", "must not be negative")
	}
	choiceFlux := []string{"enabled", "warn", "disabled"}
	if !slices.Contains(choiceFlux, f.DriftDetection) {
		p.add("flux.drift_detection", "must be one of enabled, warn, disabled, got %q", f.DriftDetection)
	}
	f.validateLayout(&p, c.Format)
	c.validateManagementClusters(&p)
	f.validatePostRenderers(&p, c.Format, c.Argo.RepoURL)
	if c.Format != FormatFlux && c.Format != FormatArgo {
		p.add("format", "must be flux or argo, got %q", c.Format)
	}
	if c.Format == FormatArgo {
		if magnum.SanitizedName(c.Argo.Namespace) != c.Argo.Namespace || c.Argo.Namespace == "" {
			p.add("argo.namespace", "must be a namespace name, got %q", c.Argo.Namespace)
		}
		if c.Argo.Project == "" {
			p.add("argo.project", "must not be empty")
		}
		if !strings.HasPrefix(c.Argo.DestinationServer, "https://") {
			p.add("argo.destination_server", "must be an https:// URL, got %q", c.Argo.DestinationServer)
		}
		c.Argo.validateRepo(&p)
		if c.Flux.PerNamespace() && c.Argo.RepoURL == "" {
			p.add("argo.repo_url", "must be set with flux.layout %s: the namespaces' parent Applications fetch it", c.Flux.Layout)
		}
	}
	c.Features.validate(&p)
	c.Registries.validate(&p, c.Format)
	slices.SortFunc(p.list, func(a, b *v1alpha1.FieldError) int { return strings.Compare(a.Field, b.Field) })
	return p.err()
}

// validateRepo checks argo.repo_url and argo.target_revision, the source of the
// Applications that take chart patches (argo.go). The URL lands in Git in clear: never
// quote it, refuse credentials (Argo CD takes them from its repository Secrets).
func (a *ArgoConfig) validateRepo(p *problems) {
	if a.RepoURL == "" {
		return
	}
	if !strings.Contains(a.RepoURL, "://") {
		// scp-like git@host:path, as Argo CD takes it: a user names the account, not a secret.
		if !strings.Contains(a.RepoURL, ":") || strings.ContainsAny(a.RepoURL, " ?#") {
			p.add("argo.repo_url", "must be the repository as Argo CD fetches it (an https://, http:// or ssh:// URL, or user@host:path)")
		}
	} else {
		u, err := url.Parse(a.RepoURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "ssh"):
			p.add("argo.repo_url", "must be the repository as Argo CD fetches it (an https://, http:// or ssh:// URL, or user@host:path)")
		case URLCarriesCredentials(u):
			p.add("argo.repo_url", "must not carry a user, password, token or query: give Argo CD the credentials in a repository Secret")
		}
	}
	if a.TargetRevision == "" || strings.ContainsAny(a.TargetRevision, " ~^:?*[\\") {
		p.add("argo.target_revision", "must be the branch Argo CD follows, got %q", a.TargetRevision)
	}
}
