package status

import (
	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// groupState is what a node group's objects say, before it is turned into a Magnum status
// (the driver's _get_node_group_status states).
type groupState int

const (
	// notPresent: no KubeadmControlPlane / MachineDeployment for the group.
	notPresent groupState = iota
	// pending: the objects exist and are not done.
	pending
	// ready: the objects are done.
	ready
	// failed: the MachineDeployment reports the Failed phase.
	failed
)

// nodeGroups applies the driver's node group status rule (docs/driver-rules.md, "Status"):
// each group's objects decide its state, and the state completes or fails the group's
// current action. Worker counts come from the MachineDeployment's replicas, which the
// autoscaler sets.
//
// A group in an operation ends only once Flux has applied the operation's commit, the
// cluster's own rule (notApplied is revisionPending's answer): before that its
// MachineDeployment still shows the old, ready state, and an update or upgrade would read
// as complete at once. notApplied (groupsHeld's answer) also holds them while Helm has
// not applied the values, and between the steps of an upgrade chain.
func nodeGroups(v View, o Objects, opts Options, cc conditionCache, notApplied string) (out []NodeGroupReport, nodes, masters int) {
	for _, ng := range v.NodeGroups {
		rep := NodeGroupReport{Name: ng.Name, Status: ng.Status, NodeCount: ng.NodeCount}
		action := ng.Status.Action()
		state := notPresent
		if ng.Role == v1alpha1.RoleMaster {
			if kcp := o.ControlPlane; kcp != nil {
				state = pending
				if controlPlaneDone(v, o, opts, cc) == nil {
					state = ready
				}
				if n, ok := intAt(kcp, fieldPath("spec", "replicas")); ok {
					rep.NodeCount = int(n)
				}
			}
			masters += rep.NodeCount
		} else {
			md := find(o.MachineDeployments, magnum.ChartComponentName(v.StackID, magnum.SanitizedName(ng.Name)))
			switch {
			case md == nil && action == v1alpha1.ActionDelete && machinesOf(o, ng.Name) > 0:
				state = pending
			case md == nil:
				state = notPresent
			default:
				switch {
				case stringAt(md, "status", "phase") == "Failed":
					state = failed
				case machineDeploymentDone(md, cc):
					state = ready
				default:
					state = pending
				}
				if n, ok := intAt(md, fieldPath("spec", "replicas")); ok {
					rep.NodeCount = int(n)
				}
			}
		}
		switch {
		case notApplied != "" && ng.Status.Outcome() == v1alpha1.InProgress:
			// Not applied yet: the objects cannot end the operation.
		case action == v1alpha1.ActionDelete && state == notPresent:
			rep.Gone = !ng.IsDefault
			rep.Status = v1alpha1.DeleteComplete
		case (action == v1alpha1.ActionCreate || action == v1alpha1.ActionUpdate) && state == ready:
			rep.Status = v1alpha1.StatusOf(action, v1alpha1.Complete)
		case (action == v1alpha1.ActionCreate || action == v1alpha1.ActionUpdate) && state == failed:
			rep.Status = v1alpha1.StatusOf(action, v1alpha1.Failed)
		}
		if ng.Role != v1alpha1.RoleMaster && !rep.Gone {
			nodes += rep.NodeCount
		}
		out = append(out, rep)
	}
	return out, nodes, masters
}

// machinesOf counts the worker Machines of a node group.
func machinesOf(o Objects, group string) int {
	n := 0
	want := magnum.SanitizedName(group)
	for _, m := range o.Machines {
		if label(m, magnum.LabelChartNodeGroup) == want && label(m, magnum.LabelChartComponent) == "worker" {
			n++
		}
	}
	return n
}
