package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

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
)

// Operations lists every valid Operation, in the order Magnum documents them.
var Operations = []Operation{CreateCluster, UpdateCluster, ResizeCluster, UpgradeCluster,
	DeleteCluster, CreateNodeGroup, UpdateNodeGroup, DeleteNodeGroup}

// targetsNodeGroup reports whether the operation acts on the event's "nodegroup".
func (o Operation) targetsNodeGroup() bool {
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
	UUID              string `json:"uuid"`
	Name              string `json:"name"`
	ProjectID         string `json:"project_id"`
	UserID            string `json:"user_id,omitempty"`
	StackID           string `json:"stack_id,omitempty"`
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
	Status       string `json:"status,omitempty"`
	StatusReason string `json:"status_reason,omitempty"`
	UpdatedAt    string `json:"updated_at,omitempty"`
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
	Status       string `json:"status,omitempty"`
	UpdatedAt    string `json:"updated_at,omitempty"`
}

// IsMaster reports whether the group is a control-plane group: Magnum's only special role.
func (ng NodeGroup) IsMaster() bool { return ng.Role == "master" }

// Resolved carries what the driver looks up in OpenStack at every render.
type Resolved struct {
	Image *Image `json:"image,omitempty"`
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

// Sensitive is a secret string. It prints as "<redacted>" through fmt and log/slog so it
// cannot leak into logs or errors by accident; JSON keeps the value (documents need it).
type Sensitive string

// String implements fmt.Stringer.
func (Sensitive) String() string { return "<redacted>" }

// GoString implements fmt.GoStringer.
func (Sensitive) GoString() string { return `"<redacted>"` }

// Reveal returns the secret value, for the code that writes it into a Secret.
func (s Sensitive) Reveal() string { return string(s) }

// Labels are Magnum labels. Magnum stores them as strings; a number or boolean in the
// document is converted as Python's str() would ("2", "True").
type Labels map[string]string

// UnmarshalJSON implements json.Unmarshaler.
func (l *Labels) UnmarshalJSON(b []byte) error {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return fmt.Errorf("labels must be a map of strings: %w", err)
	}
	out := make(Labels, len(m))
	for k, v := range m {
		switch t := v.(type) {
		case string:
			out[k] = t
		case json.Number:
			out[k] = t.String()
		case bool:
			out[k] = strings.ToUpper(strconv.FormatBool(t)[:1]) + strconv.FormatBool(t)[1:]
		default:
			return fmt.Errorf("label %q must be a string, got %s", k, jsonKind(v))
		}
	}
	*l = out
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

// eventKeys are the top-level keys a ClusterEvent may have. Unknown top-level keys are
// rejected (a typo there silently changes meaning); unknown keys inside cluster,
// cluster_template and nodegroups are accepted because Magnum's objects carry many fields
// the driver does not read.
var eventKeys = []string{"apiVersion", "kind", "id", "operation", "nodegroup", "context",
	"cluster", "cluster_template", "nodegroups", "resolved", "secrets"}

// DecodeEvent parses a ClusterEvent from YAML or JSON and checks its shape (apiVersion,
// kind, operation, keys). Semantic rules are checked when it is rendered.
func DecodeEvent(data []byte) (*ClusterEvent, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &FieldError{Field: "(document)", Message: "not valid YAML or JSON: " + err.Error()}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(j, &top); err != nil || top == nil {
		return nil, &FieldError{Field: "(document)", Message: "must be a ClusterEvent mapping"}
	}
	var p problems
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(eventKeys, k) {
			p.add(k, "unknown field (known: %s)", strings.Join(eventKeys, ", "))
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	var ev ClusterEvent
	d := json.NewDecoder(bytes.NewReader(j))
	if err := d.Decode(&ev); err != nil {
		return nil, &FieldError{Field: decodeField(err), Message: decodeMessage(err)}
	}
	if ev.APIVersion != APIVersion {
		p.add("apiVersion", "must be %q, got %q", APIVersion, ev.APIVersion)
	}
	if ev.Kind != EventKind {
		p.add("kind", "must be %q, got %q", EventKind, ev.Kind)
	}
	if !slices.Contains(Operations, ev.Operation) {
		p.add("operation", "unknown operation %q (valid: %s)", ev.Operation, joinOps())
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return &ev, nil
}

func joinOps() string {
	s := make([]string, len(Operations))
	for i, o := range Operations {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// decodeField names the field a json decoding error is about.
func decodeField(err error) string {
	var te *json.UnmarshalTypeError
	if ok := asType(err, &te); ok && te.Field != "" {
		return te.Field
	}
	return "(document)"
}

func decodeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if ok := asType(err, &te); ok {
		return fmt.Sprintf("must be %s, got %s", goTypeName(te.Type.String()), te.Value)
	}
	// Errors from Labels.UnmarshalJSON and friends carry no value, only the rule.
	return err.Error()
}

func goTypeName(t string) string {
	switch t {
	case "int", "*int":
		return "an integer"
	case "string":
		return "a string"
	case "bool", "*bool":
		return "a boolean"
	}
	if strings.HasPrefix(t, "[]") {
		return "a list"
	}
	if strings.HasPrefix(t, "map[") {
		return "a map"
	}
	return "an object"
}
