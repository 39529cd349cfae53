package status

import (
	"fmt"
	"strings"

	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Tri is a condition status read as data: a missing condition is Unknown, never True.
type Tri string

// Condition statuses.
const (
	True    Tri = "True"
	False   Tri = "False"
	Unknown Tri = "Unknown"
)

// Condition is one condition of either layout.
type Condition struct {
	Type     string
	Status   Tri
	Reason   string
	Message  string
	Severity string // v1beta1 only: Error, Warning, Info
}

// negative lists the v1beta2 condition types whose normal state is False: True means
// something is going on (or wrong), not that all is well.
var negative = map[string]bool{
	clusterv1.DeletingCondition:    true,
	clusterv1.ScalingUpCondition:   true,
	clusterv1.ScalingDownCondition: true,
	clusterv1.RollingOutCondition:  true,
	clusterv1.RemediatingCondition: true,
	clusterv1.PausedCondition:      true,
	"Drifted":                      true, // Flux
	"Stalled":                      true, // Flux, kstatus
	"Reconciling":                  true, // Flux, kstatus
}

// Negative reports whether a condition type has negative polarity.
func Negative(t string) bool { return negative[t] }

// Conditions holds an object's conditions in both Cluster API layouts:
//   - read as v1beta1: status.conditions are the old (v1beta1) conditions and
//     status.v1beta2.conditions the new ones;
//   - read as v1beta2: status.conditions are the new ones and
//     status.deprecated.v1beta1.conditions the old ones.
//
// Flux and CAPO objects have one list, kept as the new layout.
type Conditions struct {
	v1beta2, v1beta1 map[string]Condition
}

// ReadConditions reads both layouts of an object's conditions.
func ReadConditions(o *unstructured.Unstructured) Conditions {
	c := Conditions{v1beta2: map[string]Condition{}, v1beta1: map[string]Condition{}}
	if o == nil {
		return c
	}
	read := func(into map[string]Condition, path ...string) {
		raw, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
		list, _ := raw.([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			cond := Condition{Type: str(m["type"]), Status: Tri(str(m["status"])), Reason: str(m["reason"]),
				Message: str(m["message"]), Severity: str(m["severity"])}
			if cond.Status != True && cond.Status != False {
				cond.Status = Unknown
			}
			if cond.Type != "" {
				into[cond.Type] = cond
			}
		}
	}
	group, version := splitAPIVersion(o)
	isCAPI := strings.HasSuffix(group, "cluster.x-k8s.io") && group != "infrastructure.cluster.x-k8s.io"
	switch {
	case isCAPI && version == "v1beta1":
		read(c.v1beta1, "status", "conditions")
		read(c.v1beta2, "status", "v1beta2", "conditions")
	case isCAPI:
		read(c.v1beta2, "status", "conditions")
		read(c.v1beta1, "status", "deprecated", "v1beta1", "conditions")
	default:
		read(c.v1beta2, "status", "conditions")
	}
	return c
}

func str(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// V1Beta2 returns a new-layout (v1beta2, Flux, CAPO) condition; a missing one is Unknown.
func (c Conditions) V1Beta2(t string) Condition {
	if cond, ok := c.v1beta2[t]; ok {
		return cond
	}
	return Condition{Type: t, Status: Unknown}
}

// V1Beta1 returns an old-layout (v1beta1) condition; a missing one is Unknown.
func (c Conditions) V1Beta1(t string) Condition {
	if cond, ok := c.v1beta1[t]; ok {
		return cond
	}
	return Condition{Type: t, Status: Unknown}
}

// HasV1Beta2 reports whether the object carries new-layout conditions at all.
func (c Conditions) HasV1Beta2() bool { return len(c.v1beta2) > 0 }

// HasV1Beta1 reports whether the object carries v1beta1 conditions at all.
func (c Conditions) HasV1Beta1() bool { return len(c.v1beta1) > 0 }

// AllV1Beta1True reports whether all the given v1beta1 conditions are True.
func (c Conditions) AllV1Beta1True(types ...string) bool {
	for _, t := range types {
		if c.V1Beta1(t).Status != True {
			return false
		}
	}
	return true
}

// Waiting lists, in type order, the conditions that are not in their normal state:
// positive ones not True, negative ones True. It reads the v1beta1 layout when present
// (what magnum-capi-helm reports on), else the new one.
func (c Conditions) Waiting() []string {
	set := c.v1beta1
	if len(set) == 0 {
		set = c.v1beta2
	}
	return waiting(set)
}

// Busy lists, in type order, the new-layout conditions of negative polarity that are True:
// what the object is doing (RollingOut, ScalingUp, Deleting, …), which the v1beta1 layout
// has no condition for.
func (c Conditions) Busy() []string {
	var out []string
	for _, t := range sortedKeys(c.v1beta2) {
		if Negative(t) && c.v1beta2[t].Status == True {
			out = append(out, t)
		}
	}
	return out
}

// waiting lists the conditions of set not in their normal state, in type order.
func waiting(set map[string]Condition) []string {
	var out []string
	for _, t := range sortedKeys(set) {
		cond := set[t]
		if Negative(t) {
			if cond.Status == True {
				out = append(out, t)
			}
		} else if cond.Status != True {
			out = append(out, t)
		}
	}
	return out
}

// ClusterReady reports whether a CAPI Cluster is ready: v1beta2 Available True, or, without the
// new conditions, v1beta1 Ready, ControlPlaneReady and InfrastructureReady True.
func (c Conditions) ClusterReady() bool {
	if c.HasV1Beta2() {
		return c.V1Beta2(clusterv1.AvailableCondition).Status == True
	}
	return c.AllV1Beta1True(string(clusterv1beta1.ReadyCondition), string(clusterv1beta1.ControlPlaneReadyCondition), string(clusterv1beta1.InfrastructureReadyCondition))
}

// pyList renders names like Python's repr of a list of strings, as the driver's health
// reasons do: ['Ready', 'ControlPlaneReady'].
func pyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}
