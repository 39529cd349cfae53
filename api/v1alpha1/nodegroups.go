package v1alpha1

import "strconv"

// NodeGroupField is the document field of the i-th listed node group, named as the operator
// knows it: nodegroups[<name>]; by index when the name cannot tell it apart (empty, a
// number, or shared with another group).
func (ev *ClusterEvent) NodeGroupField(i int) string {
	name := ev.NodeGroups[i].Name
	_, numeric := strconv.Atoi(name)
	usable := name != "" && numeric != nil
	for j := range ev.NodeGroups {
		if j != i && ev.NodeGroups[j].Name == name {
			usable = false
		}
	}
	if !usable {
		return "nodegroups[" + strconv.Itoa(i) + "]"
	}
	return "nodegroups[" + name + "]"
}

// Names of the node groups Magnum creates with every cluster.
const (
	DefaultMasterNodeGroup = "default-master"
	DefaultWorkerNodeGroup = "default-worker"
	// RoleMaster is the only node group role Magnum treats specially.
	RoleMaster = "master"
	// RoleWorker is the role of Magnum's default worker group.
	RoleWorker = "worker"
)

// IsMaster reports whether the group is a control-plane group: Magnum's only special role.
func (ng NodeGroup) IsMaster() bool { return ng.Role == RoleMaster }

// EffectiveNodeGroups returns the event's node groups or, when it lists none, the two Magnum
// creates with a cluster (default-master and default-worker) derived from the cluster's
// counts and flavors, carrying the cluster's status. The second value gives, per group, the
// document field it comes from, for error messages: NodeGroupField for a listed group,
// "cluster" for the two derived from the cluster.
func (ev *ClusterEvent) EffectiveNodeGroups() ([]NodeGroup, []string) {
	if len(ev.NodeGroups) > 0 {
		fields := make([]string, len(ev.NodeGroups))
		for i := range ev.NodeGroups {
			fields[i] = ev.NodeGroupField(i)
		}
		return ev.NodeGroups, fields
	}
	c := ev.Cluster
	masters, workers := 1, 1
	if c.MasterCount != nil {
		masters = *c.MasterCount
	}
	if c.NodeCount != nil {
		workers = *c.NodeCount
	}
	return []NodeGroup{
			{Name: DefaultMasterNodeGroup, Role: RoleMaster, FlavorID: c.MasterFlavorID, NodeCount: masters, IsDefault: true, Status: c.Status},
			{Name: DefaultWorkerNodeGroup, Role: RoleWorker, FlavorID: c.FlavorID, NodeCount: workers, IsDefault: true, Status: c.Status},
		},
		[]string{"cluster", "cluster"}
}
