package status

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// helmReleaseSuspended reports whether the cluster's HelmRelease is suspended
// (spec.suspend: magnum-gitops suspend cluster, or flux suspend helmrelease): Flux then
// acts on nothing, and leaves the HelmRelease's conditions as they were. The judgement
// stands as those conditions have it; only its reason says why nothing will move.
func helmReleaseSuspended(o Objects) bool {
	if o.HelmRelease == nil {
		return false
	}
	s, _, _ := unstructured.NestedBool(o.HelmRelease.Object, "spec", "suspend")
	return s
}

// suspendedReason is a status reason that names the HelmRelease's suspension first, then
// what the judgement found (reason, "" for nothing).
func suspendedReason(stackID, reason string) string {
	s := "HelmRelease " + stackID + " is suspended: Flux changes nothing in the cluster until it is resumed"
	if reason == "" {
		return s
	}
	return s + "; " + reason
}
