package status

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// ArgoGroup is the API group of Argo CD's Application.
const ArgoGroup = "argoproj.io"

// argoApplication is Argo CD's Application, which stands in Argo mode where Flux has two
// objects: the repository's Application (the operator's, syncing the clusters' directory,
// as the Kustomization applies it) and each cluster's own (the chart, as the HelmRelease).
var argoApplication = schema.GroupVersionKind{Group: ArgoGroup, Version: "v1alpha1", Kind: "Application"}

// isApplication tells Argo CD's Application.
func isApplication(u *unstructured.Unstructured) bool {
	if u == nil {
		return false
	}
	group, _ := splitAPIVersion(u)
	return group == ArgoGroup && kindOf(u) == "Application"
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
// commit and the chart's objects, in Argo CD's own words. Its status speaks of the commit
// only once Argo CD has compared the Application's spec as it is now and, for a source in
// the repository (a chart directory with patches, read at the branch), a revision that
// includes the commit (argoCompared); until then what it says is of the cluster before the
// operation. A sync of that comparison that failed or errored, or an error condition
// (ComparisonError, InvalidSpecError …), fails the operation now: Argo CD retries a failed
// automated sync only when the source changes. An Application out of sync, syncing, or
// not Healthy yet is in progress, and the operation's deadline judges it.
func argoChain(v View, app *unstructured.Unstructured, opts Options) *blocker {
	name := "Application " + app.GetName()
	if waiting := argoCompared(v, app, opts); waiting != "" {
		return &blocker{reason: fmt.Sprintf("waiting for Argo CD to compare %s with %s", name, waiting)}
	}
	current := argoOperationCurrent(app)
	for _, c := range sliceAt(app, "status", "conditions") {
		typ, _ := c["type"].(string)
		// A SyncError is of the last sync, which may be of an earlier comparison.
		if strings.HasSuffix(typ, "Error") && (typ != "SyncError" || current) {
			msg, _ := c["message"].(string)
			return &blocker{failed: true, reason: fmt.Sprintf("%s: %s: %s", name, typ, argoMessage(msg))}
		}
	}
	phase := stringAt(app, "status", "operationState", "phase")
	opMessage := argoMessage(stringAt(app, "status", "operationState", "message"))
	switch phase {
	case "Failed", "Error":
		if !current {
			break // of an earlier revision or spec: the automated sync of this one follows
		}
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

// argoCompared says what the Application's last comparison (status.sync.comparedTo and
// status.sync.revision) lacks to speak of the view's commit: its spec's source as it is now
// (the parent applied the new values or patches, the application controller has not
// compared them yet), or, for a source read from the repository at a branch, a revision
// that includes the commit. "" when it speaks of it, or says nothing to compare (no
// comparison recorded: its sync status is Unknown then, and says so).
func argoCompared(v View, app *unstructured.Unstructured, opts Options) string {
	compared, ok, _ := unstructured.NestedMap(app.Object, "status", "sync", "comparedTo", "source")
	if !ok {
		return ""
	}
	spec, _, _ := unstructured.NestedMap(app.Object, "spec", "source")
	if !sameSource(spec, compared) {
		return "its new spec"
	}
	if v.Revision == "" || stringAt(app, "spec", "source", "path") == "" {
		return "" // a chart from a chart repository: its revision is the chart's version
	}
	if rev := stringAt(app, "status", "sync", "revision"); rev != v.Revision && !opts.includes(rev, v.Revision) {
		return "revision " + short(v.Revision) + " (compared: " + cmp.Or(short(rev), "none") + ")"
	}
	return ""
}

// argoOperationCurrent reports whether the Application's last operation synced what its
// last comparison compared (the same source, and the same revision when both name one): a
// failure of an earlier one says nothing of the commit being judged.
func argoOperationCurrent(app *unstructured.Unstructured) bool {
	result, ok, _ := unstructured.NestedMap(app.Object, "status", "operationState", "syncResult")
	if !ok {
		result, ok, _ = unstructured.NestedMap(app.Object, "status", "operationState", "operation", "sync")
	}
	if !ok {
		return true // nothing says which: judge it, as Argo CD shows it
	}
	if src, ok := result["source"].(map[string]any); ok {
		if compared, found, _ := unstructured.NestedMap(app.Object, "status", "sync", "comparedTo", "source"); found && !sameSource(src, compared) {
			return false
		}
	}
	opRev, _ := result["revision"].(string)
	rev := stringAt(app, "status", "sync", "revision")
	return opRev == "" || rev == "" || opRev == rev
}

// sameSource compares two Application sources as Argo CD writes them: a field left empty
// is a field left out.
func sameSource(a, b map[string]any) bool {
	return reflect.DeepEqual(pruneEmpty(a), pruneEmpty(b))
}

// pruneEmpty is v without empty strings, false, zero numbers, empty lists and maps, and
// with numbers as float64, as they come back from JSON.
func pruneEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := pruneEmpty(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pruneEmpty(e)
		}
		return out
	case string:
		if x == "" {
			return nil
		}
	case bool:
		if !x {
			return nil
		}
	case int64:
		if x == 0 {
			return nil
		}
		return float64(x)
	case int:
		if x == 0 {
			return nil
		}
		return float64(x)
	case float64:
		if x == 0 {
			return nil
		}
	}
	return v
}

// argoMessage quotes an Argo CD message in a status reason. It is an error chain whose
// cause comes last ("Failed last sync attempt to [<revisions>]: one or more
// synchronization tasks completed unsuccessfully, reason: <object> is forbidden: <the
// policy's message>"): the revisions go (the status names its own), and a message still
// too long keeps its start (what failed) and its end (why), where a list of conditions
// keeps its start alone (oneLine).
func argoMessage(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if rest, ok := strings.CutPrefix(s, "Failed last sync attempt to ["); ok {
		if _, after, found := strings.Cut(rest, "]: "); found {
			s = after
		}
	}
	if len(s) <= maxMessage {
		return s
	}
	head, tail := s[:maxMessage/3], s[len(s)-(maxMessage-maxMessage/3):]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	return head + " … " + tail
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

// applicationValues are the chart values of a Helm-source Application: its
// spec.source.helm.values text, as the generator writes them, or the valuesObject of an
// Application written before it did; nil for a kustomize source or values that do not
// parse (then nothing is read from them).
func applicationValues(app *unstructured.Unstructured) map[string]any {
	if obj, ok, _ := unstructured.NestedMap(app.Object, "spec", "source", "helm", "valuesObject"); ok {
		return obj
	}
	text := stringAt(app, "spec", "source", "helm", "values")
	if text == "" {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil
	}
	var values map[string]any
	if err := utiljson.Unmarshal(j, &values); err != nil {
		return nil
	}
	return values
}
