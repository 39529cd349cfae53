package status

import (
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// NewView is the Magnum view of a cluster while its last event is carried out, the one
// rule serve judges by: the cluster in the operation's *_IN_PROGRESS status since the
// event; the group the operation targets (every group, for a cluster-wide operation) in
// progress with the operation's action; a group the sender marked as being deleted still
// so; the others at rest.
func NewView(ev *v1alpha1.ClusterEvent, namespace, stackID string, since time.Time) View {
	v := View{ClusterUUID: ev.Cluster.UUID, Name: ev.Cluster.Name, StackID: stackID,
		Namespace: namespace, Status: ev.Operation.InProgressStatus(), Since: since}
	groups, _ := ev.EffectiveNodeGroups()
	for _, ng := range groups {
		v.NodeGroups = append(v.NodeGroups, NodeGroupView{Name: ng.Name, Role: ng.Role,
			Status: nodeGroupStatus(ev, ng), IsDefault: ng.IsDefault, NodeCount: ng.NodeCount})
	}
	return v
}

// nodeGroupStatus is a group's status during an event (see NewView).
func nodeGroupStatus(ev *v1alpha1.ClusterEvent, ng v1alpha1.NodeGroup) v1alpha1.ClusterStatus {
	switch {
	case ng.Status.Action() == v1alpha1.ActionDelete:
		return v1alpha1.DeleteInProgress
	case !ev.Operation.TargetsNodeGroup():
		return ev.Operation.InProgressStatus()
	case ng.Name != ev.NodeGroup:
		return v1alpha1.UpdateComplete
	}
	switch ev.Operation {
	case v1alpha1.CreateNodeGroup:
		return v1alpha1.CreateInProgress
	case v1alpha1.DeleteNodeGroup:
		return v1alpha1.DeleteInProgress
	}
	return v1alpha1.UpdateInProgress
}

// ViewFromEvent is NewView for a ClusterEvent document that says where Magnum stands (the
// status command's input): the cluster is placed by the document, its operation started at
// updated_at, and every status the document carries wins over the operation's — a
// settled cluster, a group Magnum marked failed earlier, a rollback, which no event of
// serve's holds.
func ViewFromEvent(ev *v1alpha1.ClusterEvent, namespacePrefix string) View {
	c := ev.Cluster
	stackID := c.StackID
	if stackID == "" {
		stackID = magnum.GenerateReleaseName(c.Name, c.UUID)
	}
	var since time.Time
	if t, err := time.Parse(time.RFC3339, c.UpdatedAt); err == nil {
		since = t
	}
	v := NewView(ev, magnum.Namespace(namespacePrefix, c.ProjectID), stackID, since)
	if c.Status != "" {
		v.Status = c.Status
	}
	groups, _ := ev.EffectiveNodeGroups()
	for i, ng := range groups {
		if ng.Status != "" {
			v.NodeGroups[i].Status = ng.Status
		}
	}
	return v
}
