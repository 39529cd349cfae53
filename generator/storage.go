package generator

import (
	"slices"

	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// csiCinder builds one StorageClass per Cinder volume type: the default type ([capi_helm]
// csi_cinder_default_volume_type, else the first listed) becomes defaultStorageClass, the
// rest additionalStorageClasses in Cinder's order (docs/driver-rules.md, "Storage classes
// (Cinder CSI)"), and no two classes share a name.
func (r *render) csiCinder() map[string]any {
	types := r.ev.Resolved.VolumeTypes
	if len(types) == 0 {
		r.p.add("resolved.volume_types", "at least one Cinder volume type is required (the default StorageClass is built from it)")
		return nil
	}
	def := types[0]
	if want := r.cfg.Magnum.CapiHelm.CSICinderDefaultVolumeType; want != nil && *want != "" {
		if !slices.Contains(types, *want) {
			r.p.add("magnum.capi_helm.csi_cinder_default_volume_type", "%s is not a valid Cinder volume type.", *want)
		}
		def = *want
	}
	l, lc := r.labels, r.lc
	topologies := r.allowedTopologies()
	class := func(t string) map[string]any {
		return map[string]any{
			"name":                 magnum.SanitizedName(t),
			"reclaimPolicy":        l.str("csi_cinder_reclaim_policy", lc.CSICinderReclaimPolicy),
			"allowVolumeExpansion": l.boolean("csi_cinder_allow_volume_expansion", lc.CSICinderAllowVolumeExpansion),
			"volumeBindingMode":    l.str("csi_cinder_volume_binding_mode", lc.CSICinderVolumeBindingMode),
			"availabilityZone":     l.str("csi_cinder_availability_zone", lc.CSICinderAvailabilityZone),
			"volumeType":           t,
			"allowedTopologies":    deepCopy(topologies),
			"fstype":               l.str("csi_cinder_fstype", lc.CSICinderFSType),
			"enabled":              true,
		}
	}
	out := map[string]any{"additionalStorageClasses": []any{}}
	// One StorageClass per name: the default type's class holds its name whatever its place
	// in Cinder's order, and of the other types whose names collide the first listed wins.
	owner := map[string]string{}
	if slices.Contains(types, def) {
		owner[magnum.SanitizedName(def)] = def
	}
	for _, t := range types {
		name := magnum.SanitizedName(t)
		if name == "" {
			r.p.add("resolved.volume_types", "volume type %q has no characters a StorageClass name can use", t)
			continue
		}
		if t == def {
			out["defaultStorageClass"] = class(t)
			continue
		}
		if kept, taken := owner[name]; taken {
			// The driver renders both, and the second StorageClass of one name fails the
			// addon; one class is kept rather than blocking every operation on the cluster.
			r.deviate("addons.openstack.csiCinder.additionalStorageClasses",
				"volume types %q and %q both become StorageClass %q: only %q gets a StorageClass; the driver renders both, which the addon cannot install", kept, t, name, kept)
			continue
		}
		owner[name] = t
		out["additionalStorageClasses"] = append(out["additionalStorageClasses"].([]any), class(t))
	}
	return out
}

// allowedTopologies is [capi_helm] csi_cinder_allowed_topologies. Every openstack-cluster
// chart up to 0.27.0 prints a StorageClass's allowedTopologies with the wrong indentation
// inside the addon's template, so any non-empty value fails the Helm render ("did not find
// expected key"): the driver's verbatim zone names as much as proper topology selector
// terms (TestChartDeviations proves both). Refusing here says so at once instead of a
// failed install later.
func (r *render) allowedTopologies() []any {
	if zones := r.cfg.Magnum.CapiHelm.CSICinderAllowedTopologies; len(zones) > 0 {
		r.p.add("magnum.capi_helm.csi_cinder_allowed_topologies", "the openstack-cluster chart (through %s) cannot render a StorageClass with allowedTopologies: leave it empty", r.chartLabel())
	}
	return []any{}
}
