package status

import (
	"strings"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// nodeGroups applies driver-reference §5.3: each group's objects decide READY, FAILED,
// PENDING or NOT_PRESENT, and that moves its Magnum status by prefix. Worker counts come
// from the MachineDeployment's replicas, which the autoscaler sets.
func nodeGroups(v View, o Objects, opts Options, m memo) (out []NodeGroupReport, nodes, masters int) {
	for _, ng := range v.NodeGroups {
		rep := NodeGroupReport{Name: ng.Name, Status: ng.Status, NodeCount: ng.NodeCount}
		var state string
		if ng.Role == "master" {
			state = "NOT_PRESENT"
			if kcp := o.ControlPlane; kcp != nil {
				state = "PENDING"
				if controlPlaneDone(v, o, opts, m) == nil {
					state = "READY"
				}
				if n, ok := intAt(kcp, p("spec", "replicas")); ok {
					rep.NodeCount = int(n)
				}
			}
			masters += rep.NodeCount
		} else {
			name := generator.ChartComponentName(v.StackID, generator.SanitizedName(ng.Name))
			md := find(o.MachineDeployments, name)
			switch {
			case md == nil && strings.HasPrefix(ng.Status, "DELETE_") && machinesOf(o, ng.Name) > 0:
				state = "PENDING"
			case md == nil:
				state = "NOT_PRESENT"
			default:
				switch phase := stringAt(md, "status", "phase"); {
				case phase == "Failed":
					state = "FAILED"
				case machineDeploymentDone(md, m):
					state = "READY"
				default:
					state = "PENDING"
				}
				if n, ok := intAt(md, p("spec", "replicas")); ok {
					rep.NodeCount = int(n)
				}
			}
		}
		switch {
		case strings.HasPrefix(ng.Status, "DELETE_"):
			if state == "NOT_PRESENT" {
				rep.Gone = !ng.IsDefault
				rep.Status = DeleteComplete
			}
		case strings.HasPrefix(ng.Status, "CREATE_"):
			rep.Status = map[string]string{"READY": CreateComplete, "FAILED": CreateFailed}[state]
		case strings.HasPrefix(ng.Status, "UPDATE_"):
			rep.Status = map[string]string{"READY": UpdateComplete, "FAILED": UpdateFailed}[state]
		}
		if rep.Status == "" {
			rep.Status = ng.Status
		}
		if ng.Role != "master" && !rep.Gone {
			nodes += rep.NodeCount
		}
		out = append(out, rep)
	}
	return out, nodes, masters
}

// machinesOf counts the worker Machines of a node group.
func machinesOf(o Objects, group string) int {
	n := 0
	want := generator.SanitizedName(group)
	for _, m := range o.Machines {
		if label(m, "capi.stackhpc.com/node-group") == want && label(m, "capi.stackhpc.com/component") == "worker" {
			n++
		}
	}
	return n
}
