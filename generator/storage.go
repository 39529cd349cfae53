package generator

import (
	"slices"

	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// csiCinder builds one StorageClass per Cinder volume type (driver.py 923-984): the default
// type ([capi_helm] csi_cinder_default_volume_type, else the first listed) becomes
// defaultStorageClass, the rest additionalStorageClasses in Cinder's order.
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
	topologies := make([]any, 0, len(r.cfg.Magnum.CapiHelm.CSICinderAllowedTopologies))
	for _, t := range r.cfg.Magnum.CapiHelm.CSICinderAllowedTopologies {
		topologies = append(topologies, t)
	}
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
	seen := map[string]int{}
	for i, t := range types {
		name := magnum.SanitizedName(t)
		if name == "" {
			r.p.add("resolved.volume_types", "volume type %q has no characters a StorageClass name can use", t)
		} else if j, dup := seen[name]; dup {
			r.p.add("resolved.volume_types", "volume types %q and %q both become StorageClass %q", types[j], t, name)
		}
		seen[name] = i
		if t == def {
			out["defaultStorageClass"] = class(t)
		} else {
			out["additionalStorageClasses"] = append(out["additionalStorageClasses"].([]any), class(t))
		}
	}
	return out
}
