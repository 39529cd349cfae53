package openstack

import (
	"fmt"
	"maps"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/clusters"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/clustertemplates"
	"github.com/gophercloud/gophercloud/v2/openstack/containerinfra/v1/nodegroups"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// Cluster is a Magnum cluster as the API returns it (microversion 1.10).
type Cluster struct {
	UUID              string
	Name              string
	ProjectID         string
	UserID            string
	ClusterTemplateID string
	StackID           string
	Keypair           string
	MasterFlavorID    string
	FlavorID          string
	MasterCount       int
	NodeCount         int
	FixedNetwork      string
	FixedSubnet       string
	Labels            map[string]string
	FloatingIPEnabled bool
	MasterLBEnabled   bool
	CreateTimeout     int
	Status            string
	StatusReason      string
	HealthStatus      string
	// HealthStatusReason is Magnum's dict, values rendered as strings.
	HealthStatusReason map[string]string
	APIAddress         string
	COEVersion         string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// Event returns the cluster as a ClusterEvent carries it.
func (c Cluster) Event() v1alpha1.Cluster {
	return v1alpha1.Cluster{
		UUID: c.UUID, Name: c.Name, ProjectID: c.ProjectID, UserID: c.UserID, StackID: c.StackID,
		Keypair: c.Keypair, MasterFlavorID: c.MasterFlavorID, FlavorID: c.FlavorID,
		MasterCount: ptr(c.MasterCount), NodeCount: ptr(c.NodeCount),
		FixedNetwork: c.FixedNetwork, FixedSubnet: c.FixedSubnet, Labels: maps.Clone(c.Labels),
		FloatingIPEnabled: ptr(c.FloatingIPEnabled), MasterLBEnabled: ptr(c.MasterLBEnabled),
		ClusterTemplateID: c.ClusterTemplateID, CreateTimeout: ptr(c.CreateTimeout),
		Status: v1alpha1.ClusterStatus(c.Status), StatusReason: c.StatusReason, UpdatedAt: timeString(c.UpdatedAt),
	}
}

func clusterFrom(c *clusters.Cluster) Cluster {
	out := Cluster{
		UUID: c.UUID, Name: c.Name, ProjectID: c.ProjectID, UserID: c.UserID,
		ClusterTemplateID: c.ClusterTemplateID, StackID: c.StackID, Keypair: c.KeyPair,
		MasterFlavorID: c.MasterFlavorID, FlavorID: c.FlavorID, MasterCount: c.MasterCount, NodeCount: c.NodeCount,
		FixedNetwork: c.FixedNetwork, FixedSubnet: c.FixedSubnet, Labels: c.Labels,
		FloatingIPEnabled: c.FloatingIPEnabled, MasterLBEnabled: c.MasterLBEnabled, CreateTimeout: c.CreateTimeout,
		Status: c.Status, StatusReason: c.StatusReason, HealthStatus: c.HealthStatus,
		APIAddress: c.APIAddress, COEVersion: c.COEVersion, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	if len(c.HealthStatusReason) > 0 {
		out.HealthStatusReason = make(map[string]string, len(c.HealthStatusReason))
		for k, v := range c.HealthStatusReason {
			if s, ok := v.(string); ok {
				out.HealthStatusReason[k] = s
			} else {
				out.HealthStatusReason[k] = fmt.Sprint(v)
			}
		}
	}
	return out
}

// ClusterTemplate is a Magnum cluster template.
type ClusterTemplate struct {
	UUID              string
	Name              string
	ProjectID         string
	ImageID           string
	KeypairID         string
	ExternalNetworkID string
	FixedNetwork      string
	FixedSubnet       string
	DNSNameserver     string
	NetworkDriver     string
	FlavorID          string
	MasterFlavorID    string
	FloatingIPEnabled bool
	MasterLBEnabled   bool
	COE               string
	ClusterDistro     string
	// Driver is the Magnum driver the template names (e.g. k8s_capi_helm_v1): a field
	// Magnum 2024.1 added; empty from older Magnum, which picks the driver from
	// (server_type, os_distro, coe).
	Driver string
	Public bool
	Hidden bool
	Labels map[string]string
}

// Event returns the template as a ClusterEvent carries it.
func (t ClusterTemplate) Event() v1alpha1.ClusterTemplate {
	return v1alpha1.ClusterTemplate{
		UUID: t.UUID, Name: t.Name, ImageID: t.ImageID, KeypairID: t.KeypairID,
		ExternalNetworkID: t.ExternalNetworkID, FixedNetwork: t.FixedNetwork, FixedSubnet: t.FixedSubnet,
		DNSNameserver: t.DNSNameserver, NetworkDriver: t.NetworkDriver,
		FloatingIPEnabled: ptr(t.FloatingIPEnabled), MasterLBEnabled: ptr(t.MasterLBEnabled),
		Labels: maps.Clone(t.Labels),
	}
}

func templateFrom(t *clustertemplates.ClusterTemplate) ClusterTemplate {
	return ClusterTemplate{
		UUID: t.UUID, Name: t.Name, ProjectID: t.ProjectID, ImageID: t.ImageID, KeypairID: t.KeyPairID,
		ExternalNetworkID: t.ExternalNetworkID, FixedNetwork: t.FixedNetwork, FixedSubnet: t.FixedSubnet,
		DNSNameserver: t.DNSNameServer, NetworkDriver: t.NetworkDriver, FlavorID: t.FlavorID,
		MasterFlavorID: t.MasterFlavorID, FloatingIPEnabled: t.FloatingIPEnabled, MasterLBEnabled: t.MasterLBEnabled,
		COE: t.COE, ClusterDistro: t.ClusterDistro, Public: t.Public, Hidden: t.Hidden, Labels: t.Labels,
	}
}

// NodeGroup is a Magnum node group, read in full.
type NodeGroup struct {
	UUID         string
	Name         string
	ClusterID    string
	ProjectID    string
	Role         string
	FlavorID     string
	ImageID      string
	NodeCount    int
	MinNodeCount int
	MaxNodeCount *int
	IsDefault    bool
	Labels       map[string]string
	Status       string
	StatusReason string
	StackID      string
	Version      string
	UpdatedAt    time.Time
}

// Event returns the node group as a ClusterEvent carries it.
func (n NodeGroup) Event() v1alpha1.NodeGroup {
	var maxCount *int
	if n.MaxNodeCount != nil {
		maxCount = ptr(*n.MaxNodeCount)
	}
	return v1alpha1.NodeGroup{
		UUID: n.UUID, Name: n.Name, Role: n.Role, FlavorID: n.FlavorID, NodeCount: n.NodeCount,
		MinNodeCount: ptr(n.MinNodeCount), MaxNodeCount: maxCount, IsDefault: n.IsDefault,
		Labels: maps.Clone(n.Labels), Status: v1alpha1.ClusterStatus(n.Status), UpdatedAt: timeString(n.UpdatedAt),
	}
}

func nodeGroupFrom(n *nodegroups.NodeGroup) NodeGroup {
	return NodeGroup{
		UUID: n.UUID, Name: n.Name, ClusterID: n.ClusterID, ProjectID: n.ProjectID, Role: n.Role,
		FlavorID: n.FlavorID, ImageID: n.ImageID, NodeCount: n.NodeCount, MinNodeCount: n.MinNodeCount,
		MaxNodeCount: n.MaxNodeCount, IsDefault: n.IsDefault, Labels: n.Labels, Status: n.Status,
		StatusReason: n.StatusReason, StackID: n.StackID, Version: n.Version, UpdatedAt: n.UpdatedAt,
	}
}

func ptr[T any](v T) *T { return &v }
