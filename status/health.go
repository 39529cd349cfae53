package status

import (
	"strings"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// health is the driver's health monitor (driver-reference §5.6) with condition polarity:
// four reasons, "Ready" or what is wrong, from management-cluster objects only.
func health(v View, o Objects, m memo) (string, map[string]string) {
	reasons := map[string]string{}
	if o.Cluster == nil {
		reasons["cluster"] = "Cluster resource not found."
	} else if c := m.conds(o.Cluster); c.ClusterReady() && len(c.Waiting()) == 0 {
		reasons["cluster"] = "Ready"
	} else {
		reasons["cluster"] = "Waiting on " + pyList(c.Waiting())
	}
	switch ic := o.InfraCluster; {
	case ic == nil:
		reasons["infrastructure"] = "Infrastructure resource not found."
	case stringAt(ic, "status", "failureReason") != "":
		reasons["infrastructure"] = stringAt(ic, "status", "failureReason") + ": " + stringAt(ic, "status", "failureMessage")
	case stringAt(ic, "status", "ready") != "true" && m.conds(ic).V2("Ready").Status != True:
		reasons["infrastructure"] = "Infrastructure not ready."
	default:
		reasons["infrastructure"] = "Ready"
	}
	if kcp := o.ControlPlane; kcp == nil {
		reasons["controlplane"] = "Control plane resource not found."
	} else if w := m.conds(kcp).Waiting(); len(w) > 0 {
		reasons["controlplane"] = "Waiting on " + pyList(w)
	} else {
		reasons["controlplane"] = "Ready"
	}
	var groups []string
	for _, ng := range v.NodeGroups {
		if ng.Role == "master" {
			continue
		}
		md := find(o.MachineDeployments, generator.ChartComponentName(v.StackID, generator.SanitizedName(ng.Name)))
		if md == nil {
			groups = append(groups, ng.Name+" resource not found.")
		} else if w := m.conds(md).Waiting(); len(w) > 0 {
			groups = append(groups, ng.Name+" waiting on "+pyList(w))
		}
	}
	reasons["nodegroup"] = "Ready"
	if len(groups) > 0 {
		reasons["nodegroup"] = strings.Join(groups, ",")
	}
	for _, r := range reasons {
		if r != "Ready" {
			return Unhealthy, reasons
		}
	}
	return Healthy, reasons
}
