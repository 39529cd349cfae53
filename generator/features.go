package generator

import (
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// The cluster features neither Python driver renders onto the openstack-cluster chart (OIDC,
// placement, scale-from-zero, certificate rotation, API server options, private
// registries), as labels. Their values are read raw, not through the driver's character
// filter (which would turn "https://issuer" into "https//issuer"): each feature validates
// its own labels strictly instead, and a label that is absent leaves the values exactly as
// the driver renders them.

// Label scopes: where a feature label may be set.
const (
	scopeCluster   = "cluster, template"
	scopeNodeGroup = "node group, cluster, template"
)

// featureLabel documents one feature label: the table in docs/features.md is generated from these rows
// (TestFeatureLabelTable), so the documentation cannot drift from the code.
type featureLabel struct {
	// Name is the label key, as VEXXHOST's magnum-cluster-api names it where it has one.
	Name string
	// Scope says which objects' labels are read, in order of precedence.
	Scope string
	// Path is the chart value (or post-renderer patch) the label sets.
	Path string
	// Charts says which chart versions support it.
	Charts string
	// Default is what an absent label means.
	Default string
	// Feature is the name the adopted_features label opts the label in by, on a cluster
	// another driver created; empty for a label that is never held back.
	Feature string
	// field marks a row that is a Magnum field, not a feature label (min_node_count,
	// node_labels, node_taints): it has no entry in features.label_defaults.
	field bool
}

// Chart versions that introduced a value the features use.
const (
	// oidcSince: the oidc.* values (apiserver OIDC flags) appeared in chart 0.11.0.
	oidcSince = "0.11.0"
	// scaleFromZeroSince: the chart accepts machineCountMin 0 from 0.26.0 (≥ 1 before).
	scaleFromZeroSince = "0.26.0"
	// certificatesExpiryValueSince: controlPlane.certificatesExpiryDays is on the chart's
	// main branch after 0.27.0 and in no release yet; the next release is assumed to carry
	// it. Older charts get the same KCP field through a post-renderer patch.
	certificatesExpiryValueSince = "0.28.0"
)

// featureLabels lists every feature label, in the order of the table in docs/features.md.
var featureLabels = []featureLabel{
	{"oidc_issuer_url", scopeCluster, "`oidc.issuerUrl`", "≥ " + oidcSince, "unset: no OIDC", "oidc", false},
	{"oidc_client_id", scopeCluster, "`oidc.clientId`", "≥ " + oidcSince, "required with `oidc_issuer_url`", "oidc", false},
	{"oidc_username_claim", scopeCluster, "`oidc.usernameClaim`", "≥ " + oidcSince, "chart: `sub`", "oidc", false},
	{"oidc_username_prefix", scopeCluster, "`oidc.usernamePrefix`", "≥ " + oidcSince, "chart: `oidc:`", "oidc", false},
	{"oidc_groups_claim", scopeCluster, "`oidc.groupsClaim`", "≥ " + oidcSince, "chart: `groups`", "oidc", false},
	{"oidc_groups_prefix", scopeCluster, "`oidc.groupsPrefix`", "≥ " + oidcSince, "chart: `oidc:`", "oidc", false},
	{"availability_zone", scopeNodeGroup, "`nodeGroups[].failureDomain`", "all", "unset: Nova picks", "placement", false},
	{"control_plane_availability_zones", scopeCluster, "`controlPlane.failureDomains`, `controlPlane.omitFailureDomain: false`", "all", "unset: Nova picks", "placement", false},
	{"server_group_id", scopeNodeGroup, "`nodeGroups[].serverGroupId`", "all", "unset: no server group", "placement", false},
	{"control_plane_server_group_id", scopeCluster, "`controlPlane.serverGroupId`", "all", "unset: no server group", "placement", false},
	{"min_node_count", "node group field; label (default worker)", "`0` → `nodeGroups[].machineCountMin: 0`, and post-renderer: MachineDeployment `capacity.cluster-autoscaler.kubernetes.io/{cpu,memory,ephemeral-disk,labels}`", "≥ " + scaleFromZeroSince + ", Flux", "below 1 refused on older charts (the driver's rule)", "", true},
	{"node_labels", "node group field (Magnum API 1.14), worker groups", "`nodeGroups[].nodeLabels`", "all", "unset: the chart's node-group label only", "node_labels", true},
	{"node_taints", "node group field (Magnum API 1.14), worker groups", "`nodeGroups[].kubeadmConfigSpec.joinConfiguration.nodeRegistration.taints`", "all", "unset: no taints", "node_taints", true},
	{"autoscaler_gpu_count", scopeNodeGroup, "post-renderer: MachineDeployment `capacity.cluster-autoscaler.kubernetes.io/gpu-count`", "≥ " + scaleFromZeroSince + ", Flux", "unset: no GPU", "scale_from_zero", false},
	{"autoscaler_gpu_type", scopeNodeGroup, "post-renderer: MachineDeployment `capacity.cluster-autoscaler.kubernetes.io/gpu-type`", "≥ " + scaleFromZeroSince + ", Flux", "`nvidia.com/gpu`", "scale_from_zero", false},
	{"certificates_expiry_days", scopeCluster, "`controlPlane.certificatesExpiryDays` (chart ≥ " + certificatesExpiryValueSince + "); else post-renderer: KubeadmControlPlane `spec.rolloutBefore.certificatesExpiryDays`", "all (Flux); ≥ " + certificatesExpiryValueSince + " (Argo CD)", "unset: no automatic rotation", "certificate_rotation", false},
	{"api_server_cert_sans", scopeCluster, "`controlPlane.kubeadmConfigSpec.clusterConfiguration.apiServer.certSANs`", "all", "unset", "api_server", false},
	{"api_server_tls_cipher_suites", scopeCluster, "`controlPlane.kubeadmConfigSpec.clusterConfiguration.apiServer.extraArgs.tls-cipher-suites`", "all", "unset: Go's defaults", "api_server", false},
	{"audit_log_enabled", scopeCluster, "`controlPlane.kubeadmConfigSpec`: audit policy file, `audit-*` apiserver flags, volumes", "all", "`false`", "audit_log", false},
	{"audit_log_max_age", scopeCluster, "`…apiServer.extraArgs.audit-log-maxage`", "all", "`30` (days)", "audit_log", false},
	{"audit_log_max_backup", scopeCluster, "`…apiServer.extraArgs.audit-log-maxbackup`", "all", "`10`", "audit_log", false},
	{"audit_log_max_size", scopeCluster, "`…apiServer.extraArgs.audit-log-maxsize`", "all", "`100` (MB)", "audit_log", false},
	{"registry_mirror_set", scopeCluster, "`registryMirrors` (site `registries.mirror_sets`)", "all", "`registries.default_mirror_set`", "registries", false},
	{adoptedFeaturesLabel, scopeCluster, "none: on an adopted cluster, the features (this table's last column, comma-separated, or `all`) that apply", "all", "unset: none", "", false},
}

// IsFeatureLabel reports whether key is a feature label: one the driver does not read (so
// not the pseudo-row of min_node_count), whose values are features beyond the driver.
func IsFeatureLabel(key string) bool {
	for _, f := range featureLabels {
		if f.Name == key {
			return !f.field
		}
	}
	return false
}

// FeaturesConfig holds the site defaults of the feature labels.
type FeaturesConfig struct {
	// LabelDefaults gives a feature label a site-wide value, read after the cluster's and
	// the template's labels (e.g. oidc_issuer_url for every cluster of a cloud).
	LabelDefaults map[string]string `json:"label_defaults,omitempty"`
}

func (c *FeaturesConfig) validate(p *problems) {
	for k, v := range c.LabelDefaults {
		if !IsFeatureLabel(k) {
			p.add("features.label_defaults."+k, "not a feature label (see the label table in docs/features.md)")
		}
		if strings.ContainsFunc(v, isControl) {
			p.add("features.label_defaults."+k, "contains control characters")
		}
	}
}

// feature reads a cluster-scope feature label: the cluster's label, then the template's,
// then the site default. The value is trimmed; the field names where it came from. On an
// adopted cluster a label its feature is not opted in for reads as absent (featureOn).
func (r *render) feature(key string) (value, field string, ok bool) {
	value, field, ok = r.lookupFeature(key)
	return value, field, ok && r.featureOn(key, field)
}

// lookupFeature is feature without the adoption rule.
func (r *render) lookupFeature(key string) (value, field string, ok bool) {
	for _, src := range []struct {
		labels map[string]string
		field  string
	}{
		{r.ev.Cluster.Labels, "cluster.labels."},
		{r.ev.ClusterTemplate.Labels, "cluster_template.labels."},
		{r.cfg.Features.LabelDefaults, "features.label_defaults."},
	} {
		if v, found := src.labels[key]; found {
			return r.featureValue(src.field+key, v)
		}
	}
	return "", "", false
}

// groupFeature reads a node-group-scope feature label: the group's own label first, then
// as feature does.
func (r *render) groupFeature(g group, key string) (value, field string, ok bool) {
	if v, found := g.Labels[key]; found {
		value, field, ok = r.featureValue(g.field+".labels."+key, v)
		return value, field, ok && r.featureOn(key, field)
	}
	return r.feature(key)
}

// featureValue trims a raw label value; an empty value counts as absent, and control
// characters are refused (they would reach kubeadm files and flags).
func (r *render) featureValue(field, v string) (string, string, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", field, false
	}
	if strings.ContainsFunc(v, isControl) {
		r.p.add(field, "contains control characters")
		return "", field, false
	}
	return v, field, true
}

func isControl(c rune) bool { return c < 0x20 || c == 0x7f }

// needChart refuses a feature the chart being rendered has no value for, naming the label
// and both versions.
func (r *render) needChart(field, what, since string) bool {
	if r.chart.atLeast(since) {
		return true
	}
	r.p.add(field, "chart %s has no %s (it needs openstack-cluster %s or newer)", r.chartLabel(), what, since)
	return false
}

// featureInt parses an integer feature label within [lo, hi].
func (r *render) featureInt(field, v string, lo, hi int) (int, bool) {
	n, ok := parsePythonInt(v)
	if !ok || n < lo || n > hi {
		r.p.add(field, "want an integer from %d to %d, got %q", lo, hi, v)
		return 0, false
	}
	return n, true
}

// featureList splits a comma-separated feature label, dropping blank entries.
func featureList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// zoneRE is what an availability zone may look like here: the chart prints node group
// failure domains unquoted into YAML, so only names that stay plain strings are accepted.
var zoneRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$`)

// plainScalar reports whether v reads back from YAML as the same string, i.e. it can be
// printed unquoted by a chart template without turning into a number, boolean or null.
func plainScalar(v string) bool {
	var out any
	if err := yaml.Unmarshal([]byte(v), &out); err != nil {
		return false
	}
	s, ok := out.(string)
	return ok && s == v
}

// section returns the map at key in m, creating it.
func section(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return m
}

// features renders every feature label onto the values, after the driver's values and
// before the site overlay (which can still override them).
func (r *render) features(v map[string]any, groups []group) {
	r.oidc(v)
	r.placement(v, groups)
	r.certificateRotation(v)
	r.scaleFromZero(v)
	r.apiServerOptions(v)
	r.registries(v)
}
