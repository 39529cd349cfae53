package status

import (
	"cmp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// health is the driver's health monitor (docs/driver-rules.md, "Health") with condition polarity:
// four reasons, "Ready" or what is wrong, from management-cluster objects only.
func health(v View, o Objects, cc conditionCache) (v1alpha1.HealthStatus, map[string]string) {
	reasons := map[string]string{}
	if o.Cluster == nil {
		reasons["cluster"] = "Cluster resource not found."
	} else if c := cc.conditions(o.Cluster); c.ClusterReady() && len(c.Waiting()) == 0 {
		reasons["cluster"] = "Ready"
	} else if w := c.Waiting(); len(w) > 0 {
		reasons["cluster"] = "Waiting on " + pyList(w)
	} else {
		// Every v1beta1 condition is True, yet the v1beta2 Available is not (e.g. a failing
		// remote connection probe): name it, with what it says, rather than "Waiting on []".
		a := c.V1Beta2("Available")
		reasons["cluster"] = "Waiting on " + pyList([]string{a.Type})
		if msg := oneLine(cmp.Or(a.Message, a.Reason)); msg != "" {
			reasons["cluster"] += ": " + msg
		}
	}
	switch ic := o.InfraCluster; {
	case ic == nil:
		reasons["infrastructure"] = "Infrastructure resource not found."
	case stringAt(ic, "status", "failureReason") != "":
		reasons["infrastructure"] = stringAt(ic, "status", "failureReason") + ": " + stringAt(ic, "status", "failureMessage")
	case !infraProvisioned(ic, cc):
		reasons["infrastructure"] = "Infrastructure not ready."
	default:
		reasons["infrastructure"] = "Ready"
	}
	if kcp := o.ControlPlane; kcp == nil {
		reasons["controlplane"] = "Control plane resource not found."
	} else if w := cc.conditions(kcp).Waiting(); len(w) > 0 {
		reasons["controlplane"] = "Waiting on " + pyList(w)
	} else {
		reasons["controlplane"] = "Ready"
	}
	var groups []string
	for _, ng := range v.NodeGroups {
		if ng.Role == v1alpha1.RoleMaster {
			continue
		}
		md := find(o.MachineDeployments, magnum.ChartComponentName(v.StackID, magnum.SanitizedName(ng.Name)))
		switch {
		case md == nil && ng.Status.Action() == v1alpha1.ActionDelete:
			// Being deleted: no MachineDeployment is the delete done, not a missing resource.
		case md == nil:
			groups = append(groups, ng.Name+" resource not found.")
		default:
			if w := cc.conditions(md).Waiting(); len(w) > 0 {
				groups = append(groups, ng.Name+" waiting on "+pyList(w))
			}
		}
	}
	reasons["nodegroup"] = "Ready"
	if len(groups) > 0 {
		reasons["nodegroup"] = strings.Join(groups, ",")
	}
	for _, r := range reasons {
		if r != "Ready" {
			return v1alpha1.Unhealthy, reasons
		}
	}
	return v1alpha1.Healthy, reasons
}

// infraProvisioned reads an infrastructure cluster's readiness in either contract: v1beta1's
// status.ready, v1beta2's status.initialization.provisioned (how a Cluster stored as v1beta2
// refers to it, CAPD's DevCluster for one), or a True Ready condition (CAPO's).
func infraProvisioned(ic *unstructured.Unstructured, cc conditionCache) bool {
	return stringAt(ic, "status", "ready") == "true" || stringAt(ic, "status", "initialization", "provisioned") == "true" ||
		cc.conditions(ic).V1Beta2("Ready").Status == True
}
