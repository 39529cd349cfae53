package generator

import (
	"fmt"
	"slices"
	"strings"
)

// adoptedFeaturesLabel names the features beyond the driver that apply to an adopted
// cluster (v1alpha1.ClusterEvent.Adopted): by their names in the label table's last
// column, comma-separated, or all.
const adoptedFeaturesLabel = "adopted_features"

// adoption is what the render needs to know of an adopted cluster: which features the
// operator opted in. A cluster magnum-gitops created has every feature.
type adoption struct {
	adopted bool
	all     bool
	optedIn map[string]bool
	// warned and reported keep one warning and one deviation per label field.
	warned, reported map[string]bool
}

// readAdoption reads the event's adoption and the adopted_features label, which is
// checked on every cluster so that a typo shows before the cluster is adopted.
func (r *render) readAdoption() {
	r.adoption = adoption{adopted: r.ev.Adopted != nil, optedIn: map[string]bool{},
		warned: map[string]bool{}, reported: map[string]bool{}}
	if a := r.ev.Adopted; a != nil && strings.TrimSpace(a.Driver) == "" {
		r.p.add("adopted.driver", "required: the Magnum driver that created the cluster (k8s_capi_helm_v1 for magnum-capi-helm)")
	}
	raw, field, ok := r.lookupFeature(adoptedFeaturesLabel)
	if !ok {
		return
	}
	known := adoptableFeatures()
	for _, name := range featureList(raw) {
		switch {
		case name == "all":
			r.adoption.all = true
		case slices.Contains(known, name):
			r.adoption.optedIn[name] = true
		default:
			r.p.add(field, "%q is not a feature (want all, or some of: %s)", name, strings.Join(known, ", "))
		}
	}
}

// adoptableFeatures are the names adopted_features takes, sorted.
func adoptableFeatures() []string {
	var out []string
	for _, f := range featureLabels {
		if f.Feature != "" && !slices.Contains(out, f.Feature) {
			out = append(out, f.Feature)
		}
	}
	slices.Sort(out)
	return out
}

// featureOfLabel is the feature a label belongs to; empty for one never held back.
func featureOfLabel(key string) featureLabel {
	for _, f := range featureLabels {
		if f.Name == key {
			return f
		}
	}
	return featureLabel{Name: key}
}

// featureOn is the one rule for a feature label found at field: on an adopted cluster it
// applies only when its feature is opted in, and is otherwise ignored with a warning
// (applying it would change the machines the driver built); wherever it applies, the
// values it sets are a deviation from the driver.
func (r *render) featureOn(key, field string) bool {
	f := featureOfLabel(key)
	if f.Feature == "" {
		return true
	}
	if !r.featureAllowed(f.Feature) {
		if !r.adoption.warned[field] {
			r.adoption.warned[field] = true
			r.warn("%s: ignored: the cluster was created by %s and adopted, and feature %s is not in its %s label (applying it changes the machines that driver built)",
				field, r.ev.Adopted.Driver, f.Feature, adoptedFeaturesLabel)
		}
		return false
	}
	if !r.adoption.reported[field] {
		r.adoption.reported[field] = true
		r.deviate(field, "feature %s sets %s; magnum-capi-helm has no such feature", f.Feature, strings.ReplaceAll(f.Path, "`", ""))
	}
	return true
}

// featureAllowed reports whether a feature applies to this cluster.
func (r *render) featureAllowed(feature string) bool {
	a := &r.adoption
	return !a.adopted || a.all || a.optedIn[feature]
}

// warn records a warning of the render: valid input whose effect the operator should know.
func (r *render) warn(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}
