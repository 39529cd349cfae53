package status

import (
	"cmp"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ArgoGroup is the API group of Argo CD's Application.
const ArgoGroup = "argoproj.io"

// argoApplication is Argo CD's Application, which stands in Argo mode where Flux has two
// objects: the repository's Application (the operator's, syncing the clusters' directory,
// as the Kustomization applies it) and each cluster's own (the chart, as the HelmRelease).
var argoApplication = schema.GroupVersionKind{Group: ArgoGroup, Version: "v1alpha1", Kind: "Application"}

// isApplication tells Argo CD's Application.
func isApplication(u *unstructured.Unstructured) bool {
	group, _ := splitAPIVersion(u)
	return u != nil && group == ArgoGroup && kindOf(u) == "Application"
}

// argoApplied is Applied for the Application that syncs the repository. Its
// status.sync.revision is the revision Argo CD compared with the cluster, synced or not (a
// sync that failed leaves it at the failed commit, OutOfSync; a source that does not
// render leaves the branch name there): it counts as applied only while Synced. What Argo
// CD did apply is its deployment history (status.history, one entry per successful sync,
// newest last): the revision applied last, and whether revision is among them, or included
// in the last applied one (Options.Ancestry). A multi-source Application's first source is
// the repository (status.sync.revisions, history revisions).
func argoApplied(app *unstructured.Unstructured, revision string, opts Options) (applied string, ok bool) {
	first := func(rev string, revs []string) string {
		if rev == "" && len(revs) > 0 {
			return revs[0]
		}
		return rev
	}
	var deployed []string
	for _, h := range sliceAt(app, "status", "history") {
		rev, _ := h["revision"].(string)
		var revs []string
		if list, ok := h["revisions"].([]any); ok {
			for _, r := range list {
				s, _ := r.(string)
				revs = append(revs, s)
			}
		}
		deployed = append(deployed, first(rev, revs))
	}
	if len(deployed) > 0 {
		applied = deployed[len(deployed)-1]
	}
	if stringAt(app, "status", "sync", "status") == "Synced" {
		revs, _, _ := unstructured.NestedStringSlice(app.Object, "status", "sync", "revisions")
		applied = cmp.Or(first(stringAt(app, "status", "sync", "revision"), revs), applied)
	}
	if revision == "" {
		return applied, false
	}
	for _, d := range deployed {
		if d == revision {
			return applied, true
		}
	}
	return applied, applied != "" && opts.includes(applied, revision)
}

// argoChain is gitopsChain for a cluster's own Application: what stands between the
// commit and the chart's objects, in Argo CD's own words. A sync that failed or errored,
// or an error condition (ComparisonError, InvalidSpecError, SyncError …), fails the
// operation now: Argo CD retries a failed automated sync only when the source changes. An
// Application out of sync, syncing, or not Healthy yet is in progress, and the operation's
// deadline judges it.
func argoChain(v View, app *unstructured.Unstructured) *blocker {
	name := "Application " + app.GetName()
	for _, c := range sliceAt(app, "status", "conditions") {
		typ, _ := c["type"].(string)
		if strings.HasSuffix(typ, "Error") {
			msg, _ := c["message"].(string)
			return &blocker{failed: true, reason: fmt.Sprintf("%s: %s: %s", name, typ, oneLine(msg))}
		}
	}
	phase := stringAt(app, "status", "operationState", "phase")
	opMessage := oneLine(stringAt(app, "status", "operationState", "message"))
	switch phase {
	case "Failed", "Error":
		verb := map[string]string{"Failed": "failed", "Error": "errored"}[phase]
		return &blocker{failed: true, reason: fmt.Sprintf("Argo CD sync of %s %s: %s", name, verb, opMessage)}
	case "Running", "Terminating":
		return &blocker{reason: fmt.Sprintf("Argo CD is syncing %s: %s", name, cmp.Or(opMessage, "in progress"))}
	}
	if sync := stringAt(app, "status", "sync", "status"); sync != "Synced" {
		return &blocker{reason: fmt.Sprintf("waiting for Argo CD to sync %s (%s)", name, cmp.Or(sync, "Unknown"))}
	}
	// The chart's objects are applied. While they come up (Progressing) the Cluster API
	// conditions behind them say more than Argo CD's health checks; Degraded holds the
	// operation with Argo CD's message until its deadline.
	if stringAt(app, "status", "health", "status") == "Degraded" {
		return &blocker{reason: fmt.Sprintf("%s is Degraded: %s", name, cmp.Or(oneLine(stringAt(app, "status", "health", "message")), "see its resources' health in Argo CD"))}
	}
	return nil
}

// sliceAt is the list of maps at path; nil when absent.
func sliceAt(u *unstructured.Unstructured, path ...string) []map[string]any {
	if u == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(u.Object, path...)
	out := make([]map[string]any, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
