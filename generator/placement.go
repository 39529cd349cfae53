package generator

import (
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// placement renders where machines run: a failure domain (Nova availability zone) per node
// group, the control plane's failure domains, and Nova server groups. An empty zone is
// never written: CAPI ≥ 1.10 rejects an empty-string failureDomain, and an empty label
// means "let Nova pick" as it does for VEXXHOST's driver.
func (r *render) placement(v map[string]any, groups []group) {
	if zones, field, ok := r.feature("control_plane_availability_zones"); ok {
		list := []any{}
		seen := map[string]bool{}
		for _, z := range featureList(zones) {
			switch {
			case !zoneRE.MatchString(z) || !plainScalar(z):
				r.p.add(field, "%q is not an availability zone name this chart can render (letters, digits, '.', '_', ':', '-')", z)
			case seen[z]:
				r.p.add(field, "zone %q is listed twice", z)
			default:
				list = append(list, z)
			}
			seen[z] = true
		}
		if len(list) == 0 {
			r.p.add(field, "lists no zone: leave the label unset to let Nova pick")
		} else {
			cp := section(v, "controlPlane")
			cp["failureDomains"] = list
			// The chart's default, true, makes CAPO ignore the list.
			cp["omitFailureDomain"] = false
		}
	}
	if id, field, ok := r.feature("control_plane_server_group_id"); ok && r.serverGroupID(field, id) {
		section(v, "controlPlane")["serverGroupId"] = id
	}
	entries, _ := v["nodeGroups"].([]any)
	i := 0
	for _, g := range groups {
		if g.IsMaster() {
			continue
		}
		if i >= len(entries) {
			break
		}
		entry := entries[i].(map[string]any)
		i++
		if az, field, ok := r.groupFeature(g, "availability_zone"); ok {
			if !zoneRE.MatchString(az) || !plainScalar(az) {
				r.p.add(field, "%q is not an availability zone name this chart can render (the chart prints it unquoted: letters, digits, '.', '_', ':', '-')", az)
			} else {
				entry["failureDomain"] = az
			}
		}
		if id, field, ok := r.groupFeature(g, "server_group_id"); ok && r.serverGroupID(field, id) {
			entry["serverGroupId"] = id
		}
	}
}

// serverGroupID checks a Nova server group id: CAPO looks server groups up by id (a UUID);
// a name would be rejected by its schema or silently ignored.
func (r *render) serverGroupID(field, id string) bool {
	if !magnum.IsUUIDLike(id) {
		r.p.add(field, "%q is not a Nova server group UUID", id)
		return false
	}
	return true
}
