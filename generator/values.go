package generator

import (
	"cmp"
	"fmt"
	"net/netip"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	"github.com/fluxcd/pkg/apis/kustomize"
)

// render holds the state of one rendering: inputs, the label view, and what it found.
type render struct {
	ev      *v1alpha1.ClusterEvent
	cfg     *Config
	lc      *ClusterLabelsConfig
	labels  labelSet
	chart   Chart
	release string
	p       problems
	devs    []Deviation
	// patches are the HelmRelease post-renderer patches the features need.
	patches []kustomize.Patch
	// zeroGroups are the autoscaled node groups that may scale from zero.
	zeroGroups []zeroGroup
	// adoption holds back the features an adopted cluster is not opted in for.
	adoption adoption
	warnings []string
}

// Deviation records a place where the output differs on purpose from what magnum-capi-helm
// 1.4.0 would send, with the reason.
type Deviation struct {
	// Key is the values key (or object) concerned.
	Key string `json:"key"`
	// Reason says what the driver would do and why this is better for the chart.
	Reason string `json:"reason"`
}

func (r *render) deviate(key, format string, args ...any) {
	r.devs = append(r.devs, Deviation{Key: key, Reason: fmt.Sprintf(format, args...)})
}

// labelField names the document field a label came from, for error messages.
func (r *render) labelField(key string) string {
	if _, ok := r.ev.Cluster.Labels[key]; ok {
		return "cluster.labels." + key
	}
	if _, ok := r.ev.ClusterTemplate.Labels[key]; ok {
		return "cluster_template.labels." + key
	}
	return "magnum.capi_helm_cluster_labels." + key
}

// values builds the openstack-cluster chart values exactly as the driver's
// _update_helm_release does (docs/driver-rules.md, "Values"), then applies the site overlay.
func (r *render) values(groups []group) map[string]any {
	ev, lc, l := r.ev, r.lc, r.labels
	autoHealing := l.boolean("auto_healing_enabled", lc.AutoHealingEnabled)
	provider := l.str("octavia_provider", lc.OctaviaProvider)

	v := map[string]any{
		"kubernetesVersion":          r.kubernetesVersion(),
		"machineImageId":             r.imageID(),
		"machineSSHKeyName":          nullIfEmpty(cmp.Or(ev.Cluster.Keypair, ev.ClusterTemplate.KeypairID)),
		"cloudCredentialsSecretName": magnum.ResourceName(r.release, "cloud-credentials"),
		"etcd":                       r.etcd(),
		"apiServer": map[string]any{
			"associateFloatingIP":  l.boolean("master_lb_floating_ip_enabled", lc.MasterLBFloatingIPEnabled),
			"enableLoadBalancer":   true,
			"loadBalancerProvider": provider,
		},
		"clusterNetworking": map[string]any{
			"dnsNameservers":    r.dnsNameservers(),
			"externalNetworkId": r.externalNetwork(),
			"internalNetwork": map[string]any{
				"networkFilter": r.idFilter("cluster.fixed_network",
					cmp.Or(ev.Cluster.FixedNetwork, ev.ClusterTemplate.FixedNetwork), ev.Resolved.Networks, "resolved.networks"),
				"subnetFilter": r.idFilter("cluster.fixed_subnet",
					cmp.Or(ev.Cluster.FixedSubnet, ev.ClusterTemplate.FixedSubnet), ev.Resolved.Subnets, "resolved.subnets"),
				"nodeCidr": r.nodeCIDR(),
			},
		},
		"osDistro": r.osDistro(),
		"controlPlane": map[string]any{
			"machineFlavor": nullIfEmpty(ev.Cluster.MasterFlavorID),
			"machineCount":  r.masterCount(groups),
			"healthCheck":   map[string]any{"enabled": autoHealing},
		},
		"nodeGroupDefaults": map[string]any{"healthCheck": map[string]any{"enabled": autoHealing}},
		"nodeGroups":        r.nodeGroups(groups),
		"addons": map[string]any{
			"openstack": map[string]any{
				"csiCinder": r.csiCinder(),
				"cloudConfig": map[string]any{"LoadBalancer": map[string]any{
					"lb-provider":    provider,
					"lb-method":      r.lbMethod(provider),
					"create-monitor": l.boolean("octavia_lb_healthcheck", lc.OctaviaLBHealthcheck),
				}},
			},
			"monitoring": map[string]any{"enabled": l.boolean("monitoring_enabled", lc.MonitoringEnabled)},
			"ingress":    map[string]any{"enabled": false},
		},
	}
	addons := v["addons"].(map[string]any)
	dashboard := l.boolean("kube_dashboard_enabled", lc.KubeDashboardEnabled)
	if r.chart.atLeast("0.20.0") {
		r.deviate("addons.kubernetesDashboard", "omitted: the dashboard addon was removed in chart 0.20.0, "+
			"so the driver's key (enabled: %t) has no effect on chart %s", dashboard, r.chartLabel())
	} else {
		addons["kubernetesDashboard"] = map[string]any{"enabled": dashboard}
	}

	// Conditional values, in the driver's order (docs/driver-rules.md, "Values").
	r.rootVolume(v)
	r.extraNetworks(v)
	r.keystoneAuth(v)
	r.allowedCIDRs(v)
	r.cni(v)
	r.features(v, groups)

	if len(r.cfg.ValuesOverlay) > 0 {
		v = mergeOverlay(v, r.cfg.ValuesOverlay)
		r.checkOverlayCIDRs(v)
	}
	r.checkNodeGroupSkew(v)
	return v
}

func (r *render) chartLabel() string {
	if r.chart.Version == "" {
		return "(newest)"
	}
	return r.chart.Version
}

func (r *render) imageID() any {
	if r.ev.Resolved.Image == nil || r.ev.Resolved.Image.ID == "" {
		r.p.add("resolved.image.id", "required: the Glance id of cluster_template.image_id")
		return nil
	}
	if id := r.ev.Resolved.Image.ID; !magnum.IsUUIDLike(id) {
		// CAPO v1beta1 types image.id as a UUID and rejects anything else.
		r.p.add("resolved.image.id", "%q is not a Glance image UUID", id)
	}
	return r.ev.Resolved.Image.ID
}

// kubernetesVersion reads the image property kube_version (never the kube_tag label). The
// driver strips a leading "v" and then deletes everything but digits and dots, which mangles
// suffixed versions ("1.28.3+k3s1" becomes "1.28.331"); those are refused here instead.
func (r *render) kubernetesVersion() any {
	img := r.ev.Resolved.Image
	if img == nil || img.KubeVersion == "" {
		r.p.add("resolved.image.kube_version", "required: image %s does not have a kube_version property", r.imageName())
		return nil
	}
	v := strings.TrimLeft(img.KubeVersion, "v")
	if !isKubeVersion(v) {
		r.p.add("resolved.image.kube_version", "%q is not a Kubernetes release version (want vX.Y.Z)", img.KubeVersion)
		return nil
	}
	return v
}

func (r *render) imageName() string {
	if r.ev.Resolved.Image != nil && r.ev.Resolved.Image.ID != "" {
		return r.ev.Resolved.Image.ID
	}
	return cmp.Or(r.ev.ClusterTemplate.ImageID, "(unknown)")
}

func (r *render) osDistro() any {
	img := r.ev.Resolved.Image
	if img == nil || img.OSDistro == "" {
		r.p.add("resolved.image.os_distro", "required: image %s does not have an os_distro property", r.imageName())
		return nil
	}
	return notOSDistroChars.ReplaceAllString(img.OSDistro, "")
}

// dnsNameservers is oslo split_by_commas of the template's dns_nameserver, null when empty.
func (r *render) dnsNameservers() any {
	var out []any
	for _, s := range strings.Split(r.ev.ClusterTemplate.DNSNameserver, ",") {
		s = strings.Trim(strings.TrimSpace(s), `"`)
		if s == "" {
			continue
		}
		if a, err := netip.ParseAddr(s); err != nil || a.Zone() != "" {
			r.p.add("cluster_template.dns_nameserver", "%q is not an IP address", s)
			continue
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// externalNetwork resolves the template's external network like neutron.get_external_network_id:
// a UUID passes through, a name is looked up.
func (r *render) externalNetwork() any {
	v := r.ev.ClusterTemplate.ExternalNetworkID
	switch {
	case v == "":
		r.p.add("cluster_template.external_network_id", "required")
		return nil
	case magnum.IsUUIDLike(v):
		return v
	}
	if id, ok := r.ev.Resolved.Networks[v]; ok && id != "" {
		return id
	}
	r.p.add("cluster_template.external_network_id", "external network %q not found in resolved.networks", v)
	return nil
}

// idFilter turns a network or subnet reference into the chart's {"id": ...} filter: a UUID is
// used as-is, a name is resolved, and empty gives null.
func (r *render) idFilter(field, v string, resolved map[string]string, resolvedField string) any {
	if v == "" {
		return nil
	}
	if magnum.IsUUIDLike(v) {
		return map[string]any{"id": v}
	}
	if id, ok := resolved[v]; ok && id != "" {
		return map[string]any{"id": id}
	}
	r.p.add(field, "%q not found in %s", v, resolvedField)
	return nil
}

// nodeCIDR is the fixed_subnet_cidr label. The chart reads it only to create a network,
// when neither a fixed network nor a fixed subnet is given, so only then must it be a CIDR
// (the template prints it as YAML, which drops surrounding spaces).
func (r *render) nodeCIDR() string {
	v := r.labels.str("fixed_subnet_cidr", r.lc.FixedSubnetCIDR)
	if cmp.Or(r.ev.Cluster.FixedNetwork, r.ev.ClusterTemplate.FixedNetwork, r.ev.Cluster.FixedSubnet, r.ev.ClusterTemplate.FixedSubnet) != "" {
		return v
	}
	if _, err := netip.ParsePrefix(strings.TrimSpace(v)); err != nil {
		r.p.add(r.labelField("fixed_subnet_cidr"), "invalid CIDR %q (the chart creates the cluster network from it)", v)
	}
	return v
}

func (r *render) lbMethod(provider string) string {
	def := r.lc.OctaviaLBAlgorithm
	if def == "" {
		def = "ROUND_ROBIN"
		if strings.ToLower(provider) == "ovn" {
			def = "SOURCE_IP_PORT"
		}
	}
	return r.labels.str("octavia_lb_algorithm", def)
}

// etcd renders the etcd block device (docs/driver-rules.md, "etcd").
func (r *render) etcd() map[string]any {
	l, lc := r.labels, r.lc
	size, ok := l.integer("etcd_blockdevice_size", nil)
	if !ok {
		size, _ = l.integer("etcd_volume_size", &lc.EtcdBlockdeviceSize)
	}
	if size == nil || *size <= 0 {
		return map[string]any{}
	}
	bd := map[string]any{"size": *size, "type": "Volume"}
	if l.str("etcd_blockdevice_type", lc.EtcdBlockdeviceType) == "local" {
		bd["type"] = "Local"
		return map[string]any{"blockDevice": bd}
	}
	vt := l.str("etcd_blockdevice_volume_type", "")
	if vt == "" {
		vt = l.str("etcd_volume_type", "")
	}
	if vt == "" {
		vt = lc.EtcdBlockdeviceVolumeType
	}
	if vt != "" {
		bd["volumeType"] = vt
	}
	if az := l.str("etcd_blockdevice_volume_az", lc.EtcdBlockdeviceVolumeAZ); az != "" {
		bd["availabilityZone"] = az
	}
	return map[string]any{"blockDevice": bd}
}

// rootVolume adds machineRootVolume to the control plane and node group defaults.
func (r *render) rootVolume(v map[string]any) {
	l, lc, cinder := r.labels, r.lc, r.cfg.Magnum.Cinder
	typeDef := cinder.DefaultBootVolumeType
	if lc.BootVolumeType != nil && *lc.BootVolumeType != "" {
		typeDef = *lc.BootVolumeType
	}
	sizeDef := cinder.DefaultBootVolumeSize
	if lc.BootVolumeSize != nil {
		sizeDef = *lc.BootVolumeSize
	}
	rv := map[string]any{}
	if t := l.str("boot_volume_type", typeDef); t != "" {
		rv["volumeType"] = t
	}
	size, _ := l.integer("boot_volume_size", &sizeDef)
	switch {
	case *size < 0:
		r.p.add(r.labelField("boot_volume_size"), "must not be negative, got %d", *size)
	case *size > 0:
		rv["diskSize"] = *size
	}
	if len(rv) == 0 {
		return
	}
	for _, k := range []string{"controlPlane", "nodeGroupDefaults"} {
		v[k].(map[string]any)["machineRootVolume"] = deepCopy(rv)
	}
}

// extraNetworks adds a port per extra network to the workers (not the control plane),
// after a leading {} that keeps the default cluster-network port.
func (r *render) extraNetworks(v map[string]any) {
	names := r.labels.str("extra_network_names", r.lc.ExtraNetworkNames)
	if names == "" {
		names = r.labels.str("extra_network_name", "")
	}
	if names == "" {
		return
	}
	ports := []any{map[string]any{}}
	parts := strings.Split(names, " ")
	for _, n := range parts {
		if n == "" {
			continue
		}
		ports = append(ports, map[string]any{"network": map[string]any{"name": n}, "securityGroups": []any{}})
	}
	if len(ports)-1 != len(parts) {
		r.deviate("nodeGroupDefaults.machineNetworking.ports", "empty network names from repeated "+
			"spaces in extra_network_names are dropped; the driver would send a port with network name \"\"")
	}
	ngd := v["nodeGroupDefaults"].(map[string]any)
	ngd["machineNetworking"] = map[string]any{"ports": ports}
}

// keystoneAuth enables k8s-keystone-auth. The driver takes projectId from the request
// context, which is wrong when an admin from another project acts on the cluster; the
// cluster's own project is used here.
func (r *render) keystoneAuth(v map[string]any) {
	if !r.labels.boolean("keystone_auth_enabled", r.lc.KeystoneAuthEnabled) {
		return
	}
	authURL := cmp.Or(r.ev.Context.AuthURL, r.ev.Resolved.KeystonePublicURL)
	if authURL == "" {
		r.p.add("context.auth_url", "required when keystone_auth_enabled is true")
	}
	if ctxProject := r.ev.Context.ProjectID; ctxProject != "" && ctxProject != r.ev.Cluster.ProjectID {
		r.deviate("addons.openstack.k8sKeystoneAuth.values.projectId", "the cluster's project %q is used; "+
			"the driver would use the requesting user's project %q", r.ev.Cluster.ProjectID, ctxProject)
	}
	v["authWebhook"] = "k8s-keystone-auth"
	os := v["addons"].(map[string]any)["openstack"].(map[string]any)
	os["k8sKeystoneAuth"] = map[string]any{"enabled": true, "values": map[string]any{
		"openstackAuthUrl": authURL,
		"projectId":        r.ev.Cluster.ProjectID,
	}}
}

// allowedCIDRs restricts the API load balancer. Chart 0.24.0 renamed the key from
// allowedCidrs to allowedCIDRs; the driver always sends the old spelling, which newer charts
// ignore, so the key follows the chart version here.
func (r *render) allowedCIDRs(v map[string]any) {
	cidrs := r.labels.csv("api_master_lb_allowed_cidrs", r.lc.APIMasterLBAllowedCIDRs)
	if len(cidrs) == 0 {
		return
	}
	list := make([]any, 0, len(cidrs))
	for _, c := range cidrs {
		if _, err := netip.ParsePrefix(c); err != nil {
			r.p.add(r.labelField("api_master_lb_allowed_cidrs"), "invalid CIDR %q", c)
		}
		list = append(list, c)
	}
	key := "allowedCidrs"
	if r.chart.atLeast("0.24.0") {
		key = "allowedCIDRs"
		r.deviate("apiServer.allowedCIDRs", "chart %s reads apiServer.allowedCIDRs; the driver sends "+
			"allowedCidrs, which this chart ignores (capi-helm-charts #675)", r.chartLabel())
	}
	v["apiServer"].(map[string]any)[key] = list
}

// cni maps the template's network_driver to addons.cni.type. Magnum fills an empty
// network_driver with "flannel", which the chart cannot deploy (only calico and cilium
// render a CNI); driver 1.3.0 sent no CNI type at all, so those clusters run the chart's
// default, calico, and keep it here.
func (r *render) cni(v map[string]any) {
	nd := notNetworkDriverChars.ReplaceAllString(r.ev.ClusterTemplate.NetworkDriver, "")
	switch nd {
	case "":
		return
	case "calico", "cilium":
	case "flannel":
		r.deviate("addons.cni.type", "network_driver flannel renders calico: the chart deploys no CNI "+
			"for flannel, and clusters created before driver 1.4.0 already run calico")
		nd = "calico"
	default:
		r.p.add("cluster_template.network_driver", "%q is not supported by the openstack-cluster chart (calico, cilium, or flannel which renders calico)", nd)
		return
	}
	v["addons"].(map[string]any)["cni"] = map[string]any{"type": nd}
}

// checkOverlayCIDRs validates the pod and service CIDRs an overlay sets, the overlay's most
// common use, so a typo fails here rather than in CAPI.
func (r *render) checkOverlayCIDRs(v map[string]any) {
	kn, _ := v["kubeNetwork"].(map[string]any)
	for _, k := range []string{"pods", "services"} {
		sec, _ := kn[k].(map[string]any)
		blocks, _ := sec["cidrBlocks"].([]any)
		for i, b := range blocks {
			s, _ := b.(string)
			if _, err := netip.ParsePrefix(s); err != nil {
				r.p.add(fmt.Sprintf("values_overlay.kubeNetwork.%s.cidrBlocks[%d]", k, i), "invalid CIDR %v", b)
			}
		}
	}
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
