package reconciler

import (
	"cmp"
	"fmt"
	"sort"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// Commit trailers the service reads back: after a restart, from another replica, and to
// finish a delete.
const (
	trailerEventID     = "Magnum-Event-ID"
	trailerEventDigest = "Magnum-Event-Digest"
	trailerClusterUUID = "Magnum-Cluster-UUID"
	trailerOperation   = "Magnum-Operation"
	trailerProject     = "Magnum-Project"
	trailerStackID     = "Magnum-Stack-ID"
	// trailerSuspend marks a suspend ("true") or resume ("false") commit: an operator's,
	// not a Magnum operation's, so it carries no Magnum-Operation and no event.
	trailerSuspend = "Magnum-Suspend"
)

// verbs names what each operation does, for commit subjects.
var verbs = map[v1alpha1.Operation]string{
	v1alpha1.CreateCluster:    "create cluster",
	v1alpha1.UpdateCluster:    "update cluster",
	v1alpha1.RotateCredential: "rotate the application credential of cluster",
	v1alpha1.ResizeCluster:    "resize cluster",
	v1alpha1.UpgradeCluster:   "upgrade cluster",
	v1alpha1.DeleteCluster:    "delete cluster",
	v1alpha1.CreateNodeGroup:  "create node group %s of cluster",
	v1alpha1.UpdateNodeGroup:  "update node group %s of cluster",
	v1alpha1.DeleteNodeGroup:  "delete node group %s of cluster",
}

// commitChange turns a rendered event into a gitrepo.Change: a subject a reviewer
// understands, a body saying what changed (versions, counts, flavors) compared with the
// values the repository held before (nil when none), and trailers. It never includes a
// secret value: Secrets are named, not shown.
func commitChange(ev *v1alpha1.ClusterEvent, res *generator.Result, fs *generator.FileSet, old map[string]any) gitrepo.Change {
	verb := verbs[res.Operation]
	if strings.Contains(verb, "%s") {
		verb = fmt.Sprintf(verb, ev.NodeGroup)
	}
	c := gitrepo.Change{
		Subject: fmt.Sprintf("magnum: %s %s (%s) in project %s", verb, res.ClusterName, res.ReleaseName, res.ProjectID),
		Files:   map[string][]byte{},
		Trailers: []gitrepo.Trailer{
			{Key: trailerClusterUUID, Value: res.ClusterUUID},
			{Key: trailerOperation, Value: string(res.Operation)},
			{Key: trailerProject, Value: res.ProjectID},
			{Key: trailerStackID, Value: res.ReleaseName},
		},
	}
	if res.EventID != "" {
		// The digest lets a restarted service tell a retried event id from a reused one:
		// of the event as it came (Pipeline.Render keeps it), which a retry repeats, not as
		// the resolvers completed it.
		c.Trailers = append(c.Trailers, gitrepo.Trailer{Key: trailerEventID, Value: res.EventID},
			gitrepo.Trailer{Key: trailerEventDigest, Value: res.EventDigest})
	}
	for p, b := range fs.Files {
		c.Files[p] = b
	}
	for _, p := range fs.Deletes {
		c.Files[p] = nil
	}
	c.Body = strings.Join(summary(res, fs, old), "\n")
	return c
}

// summary lists what a reviewer wants to see.
func summary(res *generator.Result, fs *generator.FileSet, old map[string]any) []string {
	if res.Operation == v1alpha1.DeleteCluster {
		return []string{"The HelmRelease is removed; the cluster's Secrets stay until the CAPI Cluster is gone."}
	}
	v := res.Values
	var lines []string
	line := func(label string, before, after any) {
		switch {
		case old == nil || fmt.Sprint(before) == fmt.Sprint(after):
			lines = append(lines, fmt.Sprintf("%s: %v", label, after))
		case before == nil:
			lines = append(lines, fmt.Sprintf("%s: %v (new)", label, after))
		default:
			lines = append(lines, fmt.Sprintf("%s: %v → %v", label, before, after))
		}
	}
	line("Kubernetes", get(old, "kubernetesVersion"), v["kubernetesVersion"])
	lines = append(lines, "chart: "+res.Chart.Name+" "+cmp.Or(res.Chart.Version, "(newest)"))
	line("image", get(old, "machineImageId"), v["machineImageId"])
	cp := func(m map[string]any) any {
		if m == nil {
			return nil
		}
		return fmt.Sprintf("%v × %v", get(m, "controlPlane.machineCount"), get(m, "controlPlane.machineFlavor"))
	}
	line("control plane", cp(old), cp(v))
	oldGroups, newGroups := groups(old), groups(v)
	names := map[string]bool{}
	for n := range oldGroups {
		names[n] = true
	}
	for n := range newGroups {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		if _, ok := newGroups[n]; !ok {
			lines = append(lines, fmt.Sprintf("node group %s: removed", n))
			continue
		}
		var before any
		if g, ok := oldGroups[n]; ok {
			before = g
		}
		line("node group "+n, before, newGroups[n])
	}
	var secrets []string
	for p := range fs.Files {
		if suffix, ok := generator.SecretSuffix(p[strings.LastIndex(p, "/")+1:]); ok {
			secrets = append(secrets, suffix)
		}
	}
	if len(secrets) > 0 {
		sort.Strings(secrets)
		lines = append(lines, "Secrets written: "+strings.Join(secrets, ", "))
	}
	for _, d := range res.Deviations {
		lines = append(lines, "differs from magnum-capi-helm on "+d.Key)
	}
	for _, w := range res.Warnings {
		lines = append(lines, "warning: "+w)
	}
	return lines
}

// groups describes each node group as "count × flavor", with the autoscaling range.
func groups(v map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := get(v, "nodeGroups").([]any)
	for _, e := range list {
		g, _ := e.(map[string]any)
		d := fmt.Sprintf("%v × %v", g["machineCount"], g["machineFlavor"])
		if a, _ := g["autoscale"].(bool); a {
			d += fmt.Sprintf(" (autoscaling %v–%v)", g["machineCountMin"], g["machineCountMax"])
		}
		out[fmt.Sprint(g["name"])] = d
	}
	return out
}

// get reads a dotted path from JSON-shaped values.
func get(v map[string]any, path string) any {
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// suspendChange is the commit of a cluster's suspension or resume (req): what Flux (or
// Argo CD, in format argo) now does with the cluster, the operator's reason, and the
// cluster's trailers without an operation: no Magnum event asked for it.
func suspendChange(res *generator.Result, fs *generator.FileSet, req SuspendRequest, format string) gitrepo.Change {
	verb, suspend := req.Verb(), fmt.Sprint(req.Suspend)
	c := gitrepo.Change{
		Subject: fmt.Sprintf("magnum-gitops: %s cluster %s (%s) in project %s", verb, res.ClusterName, res.ReleaseName, res.ProjectID),
		Files:   map[string][]byte{},
		Trailers: []gitrepo.Trailer{
			{Key: trailerClusterUUID, Value: res.ClusterUUID},
			{Key: trailerProject, Value: res.ProjectID},
			{Key: trailerStackID, Value: res.ReleaseName},
			{Key: trailerSuspend, Value: suspend},
		},
	}
	for p, b := range fs.Files {
		c.Files[p] = b
	}
	what := "Flux leaves HelmRelease " + res.ReleaseName + " alone (spec.suspend: true)"
	again := "Flux reconciles HelmRelease " + res.ReleaseName + " again (spec.suspend removed)"
	if format == generator.FormatArgo {
		what = "Argo CD syncs Application " + res.ReleaseName + " only when asked (no automated sync)"
		again = "Argo CD syncs Application " + res.ReleaseName + " automatically again"
	}
	c.Body = what + " until magnum-gitops resume cluster: Magnum's operations are still committed, and applied on resume."
	if !req.Suspend {
		c.Body = again + ", with what Git holds for it now, the Magnum operations committed while it was suspended included."
	}
	if req.Suspend || req.Reason != "" {
		c.Body += "\n\nReason: " + cmp.Or(req.Reason, "(none given)")
	}
	return c
}
