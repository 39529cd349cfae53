package status

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Applied is the one answer to "has Flux (or Argo CD) applied the commit that carries this operation?",
// for the status mapping, the service's API and its loops alike. It reports whether the
// Kustomization k has applied revision (a commit id), and the revision it applied last.
// Applied means the last applied revision includes it (that commit, or a later one with it
// in its history as Options.Ancestry says), or the Kustomization's history
// (status.history, kept by kustomize-controller v1.3 and later) holds a successful reconciliation of it: a later
// commit applied since then does not take that back, and without a clone of the repository
// (the status CLI) the history is all that says so. The service's own later commits (a
// delete's steps) would otherwise make an applied delete look pending again.
//
// In Argo mode k is the Application that syncs the repository, and argoApplied reads it
// the same way (status.sync.revision, status.history).
func Applied(k *unstructured.Unstructured, revision string, opts Options) (applied string, ok bool) {
	if isApplication(k) {
		return argoApplied(k, revision, opts)
	}
	applied = stringAt(k, "status", "lastAppliedRevision")
	if revision == "" {
		return applied, false
	}
	history, _, _ := unstructured.NestedSlice(k.Object, "status", "history")
	for _, h := range history {
		e, _ := h.(map[string]any)
		rev, _, _ := unstructured.NestedString(e, "metadata", "revision")
		result, _, _ := unstructured.NestedString(e, "lastReconciledStatus")
		if AppliedCommit(rev) == revision && result == "ReconciliationSucceeded" {
			return applied, true
		}
	}
	return applied, applied != "" && opts.includes(applied, revision)
}
