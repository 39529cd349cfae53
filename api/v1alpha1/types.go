package v1alpha1

// APIVersion and Kind identify a ClusterEvent document.
const (
	APIVersion = "magnum-gitops.io/v1alpha1"
	EventKind  = "ClusterEvent"
)

// Operation is the Magnum driver call an event stands for.
type Operation string

// The operations of a Magnum driver that change a cluster.
const (
	CreateCluster   Operation = "create_cluster"
	UpdateCluster   Operation = "update_cluster"
	ResizeCluster   Operation = "resize_cluster"
	UpgradeCluster  Operation = "upgrade_cluster"
	DeleteCluster   Operation = "delete_cluster"
	CreateNodeGroup Operation = "create_nodegroup"
	UpdateNodeGroup Operation = "update_nodegroup"
	DeleteNodeGroup Operation = "delete_nodegroup"
	// RotateCredential (Magnum ≥ 21) carries a new application credential: only the
	// cloud-credentials Secret changes.
	RotateCredential Operation = "rotate_credential"
)

// Operations lists every valid Operation, in the order Magnum documents them.
var Operations = []Operation{CreateCluster, UpdateCluster, ResizeCluster, UpgradeCluster,
	DeleteCluster, CreateNodeGroup, UpdateNodeGroup, DeleteNodeGroup, RotateCredential}

// TargetsNodeGroup reports whether the operation acts on the event's "nodegroup".
func (o Operation) TargetsNodeGroup() bool {
	return o == CreateNodeGroup || o == UpdateNodeGroup || o == DeleteNodeGroup
}

// ClusterEvent is one Magnum cluster change, with everything needed to render it: the
// cluster, its template and node groups as Magnum's API returns them, the OpenStack facts the
// driver would look up, and optionally the Secret material. The cluster fields describe the
// desired state after the operation (as the Magnum conductor has saved it before calling the
// driver).
type ClusterEvent struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// ID is an idempotency key, carried into commit trailers.
	ID        string    `json:"id,omitempty"`
	Operation Operation `json:"operation"`
	// NodeGroup names the target of *_nodegroup operations and, optionally, of resize.
	NodeGroup       string          `json:"nodegroup,omitempty"`
	Context         RequestContext  `json:"context"`
	Cluster         Cluster         `json:"cluster"`
	ClusterTemplate ClusterTemplate `json:"cluster_template"`
	// NodeGroups is the cluster's node groups in Magnum's list (creation) order. When empty,
	// the default-master and default-worker groups Magnum creates are derived from the
	// cluster fields.
	NodeGroups []NodeGroup     `json:"nodegroups,omitempty"`
	Resolved   Resolved        `json:"resolved"`
	Secrets    *SecretMaterial `json:"secrets,omitempty"`
	// Params are the driver call's own arguments, for the record; rendering reads the
	// cluster fields, which Magnum has already updated from them.
	Params *Params `json:"params,omitempty"`
	// Magnum says which Magnum and driver sent the event, for the record.
	Magnum *Origin `json:"magnum,omitempty"`
	// Adopted marks a cluster another driver created and magnum-gitops took over: its
	// machines were built from that driver's values, so no feature beyond the driver
	// reaches it until the adopted_features label opts the feature in. The cluster's
	// record in the repository keeps it, so later events need not carry it.
	Adopted *Adoption `json:"adopted,omitempty"`
}

// Adoption says which driver created an adopted cluster; the commit that adopted it says
// when.
type Adoption struct {
	// Driver is the Magnum driver that created the cluster (k8s_capi_helm_v1 for
	// magnum-capi-helm).
	Driver string `json:"driver"`
}

// Params are the arguments of the Magnum driver call behind an event.
type Params struct {
	CreateTimeout  *int     `json:"create_timeout,omitempty"`
	NodeCount      *int     `json:"node_count,omitempty"`
	NodesToRemove  []string `json:"nodes_to_remove,omitempty"`
	MaxBatchSize   *int     `json:"max_batch_size,omitempty"`
	FromTemplateID string   `json:"from_template_id,omitempty"`
}

// Origin identifies the Magnum deployment and driver that sent an event.
type Origin struct {
	Version       string `json:"version,omitempty"`
	Driver        string `json:"driver,omitempty"`
	ConductorHost string `json:"conductor_host,omitempty"`
}

// RequestContext is the requesting user's context. The driver reads the Keystone auth URL
// from it for k8s-keystone-auth.
type RequestContext struct {
	ProjectID string `json:"project_id,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	AuthURL   string `json:"auth_url,omitempty"`
}

// Cluster holds the Magnum cluster fields the driver reads, with the API's field names.
// Other Magnum fields may be present in the document and are ignored.
type Cluster struct {
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	ProjectID string `json:"project_id"`
	UserID    string `json:"user_id,omitempty"`
	StackID   string `json:"stack_id,omitempty"`
	// ClusterID is stack_id as Magnum's API names it from microversion 1.13 on (the same
	// column); it is read when stack_id is absent.
	ClusterID         string `json:"cluster_id,omitempty"`
	Keypair           string `json:"keypair,omitempty"`
	MasterFlavorID    string `json:"master_flavor_id,omitempty"`
	FlavorID          string `json:"flavor_id,omitempty"`
	MasterCount       *int   `json:"master_count,omitempty"`
	NodeCount         *int   `json:"node_count,omitempty"`
	FixedNetwork      string `json:"fixed_network,omitempty"`
	FixedSubnet       string `json:"fixed_subnet,omitempty"`
	Labels            Labels `json:"labels,omitempty"`
	FloatingIPEnabled *bool  `json:"floating_ip_enabled,omitempty"`
	MasterLBEnabled   *bool  `json:"master_lb_enabled,omitempty"`
	ClusterTemplateID string `json:"cluster_template_id,omitempty"`
	CreateTimeout     *int   `json:"create_timeout,omitempty"`
	// Status, StatusReason and UpdatedAt are the current Magnum state, read by the status
	// mapping (not by rendering).
	Status       ClusterStatus `json:"status,omitempty"`
	StatusReason string        `json:"status_reason,omitempty"`
	UpdatedAt    string        `json:"updated_at,omitempty"`
}

// ClusterTemplate holds the template fields the driver reads.
type ClusterTemplate struct {
	UUID              string `json:"uuid,omitempty"`
	Name              string `json:"name,omitempty"`
	ImageID           string `json:"image_id,omitempty"`
	KeypairID         string `json:"keypair_id,omitempty"`
	ExternalNetworkID string `json:"external_network_id,omitempty"`
	FixedNetwork      string `json:"fixed_network,omitempty"`
	FixedSubnet       string `json:"fixed_subnet,omitempty"`
	DNSNameserver     string `json:"dns_nameserver,omitempty"`
	NetworkDriver     string `json:"network_driver,omitempty"`
	FloatingIPEnabled *bool  `json:"floating_ip_enabled,omitempty"`
	MasterLBEnabled   *bool  `json:"master_lb_enabled,omitempty"`
	Labels            Labels `json:"labels,omitempty"`
}

// NodeGroup is a Magnum node group.
type NodeGroup struct {
	UUID         string `json:"uuid,omitempty"`
	Name         string `json:"name"`
	Role         string `json:"role,omitempty"`
	FlavorID     string `json:"flavor_id,omitempty"`
	NodeCount    int    `json:"node_count"`
	MinNodeCount *int   `json:"min_node_count,omitempty"`
	MaxNodeCount *int   `json:"max_node_count,omitempty"`
	IsDefault    bool   `json:"is_default,omitempty"`
	Labels       Labels `json:"labels,omitempty"`
	// NodeLabels and NodeTaints (Magnum API 1.14, worker groups only) are put on the
	// group's Kubernetes nodes.
	NodeLabels map[string]string `json:"node_labels,omitempty"`
	NodeTaints []Taint           `json:"node_taints,omitempty"`
	Status     ClusterStatus     `json:"status,omitempty"`
	UpdatedAt  string            `json:"updated_at,omitempty"`
}

// Taint is a Kubernetes node taint as Magnum's node group API takes it.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Resolved carries what the driver looks up in OpenStack at every render.
type Resolved struct {
	Image *Image `json:"image,omitempty"`
	// UpgradeImages are images a chained upgrade may step through: when the cluster runs a
	// Kubernetes version more than one minor behind Image's, it is taken there one minor at
	// a time, each step on the newest image of its minor listed here (generator.UpgradeStep).
	UpgradeImages []Image `json:"upgrade_images,omitempty"`
	// Networks and Subnets map a Neutron name (or id) to its id.
	Networks map[string]string `json:"networks,omitempty"`
	Subnets  map[string]string `json:"subnets,omitempty"`
	// VolumeTypes is every Cinder volume type name, in Cinder's list order.
	VolumeTypes []string `json:"volume_types,omitempty"`
	// Flavors maps a Nova flavor name or id to its size. When present, flavors are validated
	// like the driver does; when absent, validation is skipped.
	Flavors           map[string]Flavor `json:"flavors,omitempty"`
	KeystonePublicURL string            `json:"keystone_public_url,omitempty"`
	RegionName        string            `json:"region_name,omitempty"`
}

// Image is the Glance image of the cluster template.
type Image struct {
	ID          string `json:"id"`
	KubeVersion string `json:"kube_version,omitempty"`
	OSDistro    string `json:"os_distro,omitempty"`
}

// Flavor is the part of a Nova flavor the driver checks.
type Flavor struct {
	VCPUs int `json:"vcpus"`
	RAMMB int `json:"ram_mb"`
	// DiskGB is the flavor's root disk (0: none, the node boots from a volume).
	DiskGB int `json:"disk_gb,omitempty"`
}

// SecretMaterial is what the cluster's Secrets are made of.
type SecretMaterial struct {
	ApplicationCredential *ApplicationCredential `json:"application_credential,omitempty"`
	// CABundle becomes the cloud-credentials "cacert" key.
	CABundle     Sensitive     `json:"ca_bundle,omitempty"`
	Certificates *Certificates `json:"certificates,omitempty"`
}

// ApplicationCredential is a Keystone application credential.
type ApplicationCredential struct {
	ID     string    `json:"id"`
	Secret Sensitive `json:"secret"`
}

// Certificates are Magnum's cluster certificates, each a PEM certificate and PKCS#8 key.
type Certificates struct {
	CA           *KeyPair `json:"ca,omitempty"`
	Etcd         *KeyPair `json:"etcd,omitempty"`
	FrontProxy   *KeyPair `json:"front_proxy,omitempty"`
	MagnumClient *KeyPair `json:"magnum_client,omitempty"`
}

// KeyPair is one PEM certificate and its private key.
type KeyPair struct {
	Cert string    `json:"cert"`
	Key  Sensitive `json:"key"`
}
