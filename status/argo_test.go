package status_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/status"
)

// application is an Argo CD Application with the given status (YAML), as the API server
// returns it.
func application(t *testing.T, name, statusYAML string) *unstructured.Unstructured {
	t.Helper()
	var st map[string]any
	if err := yaml.Unmarshal([]byte(statusYAML), &st); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd"},
		"spec":     map[string]any{"destination": map[string]any{"namespace": "magnum-p1"}},
		"status":   st,
	}}
}

// TestArgoApplied: the one "applied?" rule reads the repository's Application as it reads a
// Kustomization: the synced revision, its history, or the ancestry of what it synced.
func TestArgoApplied(t *testing.T) {
	t.Parallel()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	for _, tc := range []struct {
		name, status string
		opts         status.Options
		want         bool
	}{
		{"the commit synced", "sync: {status: Synced, revision: " + a + "}", status.Options{}, true},
		{"another commit synced", "sync: {status: Synced, revision: " + b + "}", status.Options{}, false},
		{"multi-source: the first source's revision", "sync: {status: Synced, revisions: [" + a + ", 0.27.0]}", status.Options{}, true},
		{"synced before, a later one since", "sync: {status: Synced, revision: " + b + "}\nhistory: [{id: 0, revision: " + a + "}, {id: 1, revision: " + b + "}]", status.Options{}, true},
		{"a later commit that includes it", "sync: {status: Synced, revision: " + b + "}",
			status.Options{Ancestry: status.Ancestry{Applied: b, Includes: true}}, true},
		{"compared with, not synced: a failed sync", "sync: {status: OutOfSync, revision: " + a + "}\nhistory: [{id: 0, revision: " + b + "}]", status.Options{}, false},
		{"never synced", "sync: {status: Unknown}", status.Options{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := application(t, "magnum-clusters", tc.status)
			if _, got := status.Applied(app, a, tc.opts); got != tc.want {
				t.Errorf("Applied = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestArgoChain: a cluster's own Application stands where Flux's HelmRelease does, and
// Argo CD's own words become the status_reason.
func TestArgoChain(t *testing.T) {
	t.Parallel()
	const stackID = "k1-abc"
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	v := status.View{ClusterUUID: "u1", StackID: stackID, Namespace: "magnum-p1", Status: v1alpha1.CreateInProgress, Since: now.Add(-time.Minute)}
	for _, tc := range []struct {
		name, status string
		want         v1alpha1.ClusterStatus
		reason       string
	}{
		{"a sync that failed", "sync: {status: OutOfSync}\noperationState: {phase: Failed, message: 'one or more objects failed to apply, reason: admission webhook denied'}",
			v1alpha1.CreateFailed, "Argo CD sync of Application k1-abc failed: one or more objects failed to apply, reason: admission webhook denied"},
		{"a sync that errored", "operationState: {phase: Error, message: 'rpc error: repository not accessible'}",
			v1alpha1.CreateFailed, "Argo CD sync of Application k1-abc errored: rpc error: repository not accessible"},
		{"a comparison error", "sync: {status: Unknown}\nconditions: [{type: ComparisonError, message: \"Failed to load target state: chart not found\"}]",
			v1alpha1.CreateFailed, "Application k1-abc: ComparisonError: Failed to load target state: chart not found"},
		{"syncing", "sync: {status: OutOfSync}\noperationState: {phase: Running, message: 'waiting for healthy state of cluster.x-k8s.io/Cluster/k1-abc'}",
			v1alpha1.CreateInProgress, "Argo CD is syncing Application k1-abc: waiting for healthy state of cluster.x-k8s.io/Cluster/k1-abc"},
		{"out of sync", "sync: {status: OutOfSync}", v1alpha1.CreateInProgress, "waiting for Argo CD to sync Application k1-abc (OutOfSync)"},
		{"degraded", "sync: {status: Synced}\nhealth: {status: Degraded, message: 'machine k1-abc-md-0 failed'}\noperationState: {phase: Succeeded}",
			v1alpha1.CreateInProgress, "Application k1-abc is Degraded: machine k1-abc-md-0 failed"},
		{"synced: Cluster API decides", "sync: {status: Synced}\nhealth: {status: Progressing}\noperationState: {phase: Succeeded}",
			v1alpha1.CreateInProgress, "waiting for Cluster k1-abc to be created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := status.Objects{Application: application(t, stackID, tc.status)}
			r := status.Evaluate(v, o, status.Options{Now: now, CreateTimeout: time.Hour})
			if r.Status != tc.want || r.StatusReason != tc.reason {
				t.Errorf("Evaluate = %s %q, want %s %q", r.Status, r.StatusReason, tc.want, tc.reason)
			}
		})
	}
	// Deleting: the Application goes first (its resources finalizer prunes the Cluster).
	d := v
	d.Status = v1alpha1.DeleteInProgress
	r := status.Evaluate(d, status.Objects{Application: application(t, stackID, "sync: {status: Synced}")}, status.Options{Now: now})
	if r.Status != v1alpha1.DeleteInProgress || !strings.Contains(r.StatusReason, "Argo CD to delete Application k1-abc") {
		t.Errorf("deleting with the Application left: %s %q", r.Status, r.StatusReason)
	}
	// With the Cluster not yet being deleted, it is still Argo CD the delete waits for.
	cluster := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
		"metadata": map[string]any{"name": stackID, "namespace": "magnum-p1"}}}
	r = status.Evaluate(d, status.Objects{Application: application(t, stackID, "sync: {status: Synced}"), Cluster: cluster}, status.Options{Now: now})
	if r.Status != v1alpha1.DeleteInProgress || r.StatusReason != "waiting for Argo CD to delete Application k1-abc and prune its resources" {
		t.Errorf("deleting with the Application and the Cluster left: %s %q", r.Status, r.StatusReason)
	}
}

// TestArgoCompared: a cluster's Application speaks of the commit only once Argo CD compared
// its spec as it is now and, for a chart directory read at the branch, a revision that
// includes the commit; a failed sync of an earlier comparison does not fail the next
// operation, one of this comparison does.
func TestArgoCompared(t *testing.T) {
	t.Parallel()
	const stackID = "k1-abc"
	r1, r2 := strings.Repeat("a1", 20), strings.Repeat("b2", 20)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	v := status.View{ClusterUUID: "u1", StackID: stackID, Namespace: "magnum-p1", Status: v1alpha1.UpdateInProgress,
		Since: now.Add(-time.Minute), Revision: r2}
	chartDir := "source: {repoURL: http://git.example/magnum.git, path: clusters/p1/k1/chart, targetRevision: main, kustomize: {patches: [{patch: x}]}}"
	helmChart := "source: {repoURL: https://charts.example, chart: openstack-cluster, targetRevision: 0.27.0, helm: {values: 'kubernetesVersion: 1.34.3'}}"
	failedOp := func(rev, source string) string {
		return "operationState: {phase: Failed, message: 'one or more objects failed to apply, reason: at most 4 machines', syncResult: {revision: " + rev + ", " + source + "}}"
	}
	for _, tc := range []struct {
		name, spec, status string
		want               v1alpha1.ClusterStatus
		reason             string
	}{
		{"the spec changed, not compared yet", helmChart,
			"sync: {status: Synced, revision: 0.27.0, comparedTo: {source: {repoURL: https://charts.example, chart: openstack-cluster, targetRevision: 0.27.0, helm: {values: 'kubernetesVersion: 1.33.7'}}}}\noperationState: {phase: Succeeded}",
			v1alpha1.UpdateInProgress, "waiting for Argo CD to compare Application k1-abc with its new spec"},
		{"the chart directory compared at an older commit", chartDir,
			"sync: {status: Synced, revision: " + r1 + ", comparedTo: {" + chartDir + "}}\noperationState: {phase: Succeeded}",
			v1alpha1.UpdateInProgress, "waiting for Argo CD to compare Application k1-abc with revision b2b2b2b2b2b2 (compared: a1a1a1a1a1a1)"},
		{"compared at the commit, the last sync failed at an earlier one", chartDir,
			"sync: {status: OutOfSync, revision: " + r2 + ", comparedTo: {" + chartDir + "}}\n" + failedOp(r1, chartDir) +
				"\nconditions: [{type: SyncError, message: 'Failed last sync attempt to [" + r1 + "]'}]",
			v1alpha1.UpdateInProgress, "waiting for Argo CD to sync Application k1-abc (OutOfSync)"},
		{"the sync of the commit failed", chartDir,
			"sync: {status: OutOfSync, revision: " + r2 + ", comparedTo: {" + chartDir + "}}\n" + failedOp(r2, chartDir),
			v1alpha1.UpdateFailed, "Argo CD sync of Application k1-abc failed: one or more objects failed to apply, reason: at most 4 machines"},
		{"the sync of the new values failed", helmChart,
			"sync: {status: OutOfSync, revision: 0.27.0, comparedTo: {" + helmChart + "}}\n" + failedOp("0.27.0", helmChart),
			v1alpha1.UpdateFailed, "Argo CD sync of Application k1-abc failed: one or more objects failed to apply, reason: at most 4 machines"},
		{"a failed sync of the old values", helmChart,
			"sync: {status: OutOfSync, revision: 0.27.0, comparedTo: {" + helmChart + "}}\n" +
				failedOp("0.27.0", "source: {repoURL: https://charts.example, chart: openstack-cluster, targetRevision: 0.27.0, helm: {values: 'kubernetesVersion: 1.33.7'}}"),
			v1alpha1.UpdateInProgress, "waiting for Argo CD to sync Application k1-abc (OutOfSync)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := application(t, stackID, tc.status)
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tc.spec), &spec); err != nil {
				t.Fatal(err)
			}
			app.Object["spec"].(map[string]any)["source"] = spec["source"]
			r := status.Evaluate(v, status.Objects{Application: app}, status.Options{Now: now, UpdateTimeout: time.Hour})
			if r.Status != tc.want || r.StatusReason != tc.reason {
				t.Errorf("Evaluate = %s %q, want %s %q", r.Status, r.StatusReason, tc.want, tc.reason)
			}
		})
	}
}

// TestArgoMessage: Argo CD's error chains lose the revisions they were synced at, and a
// message too long for a status reason keeps what failed and why.
func TestArgoMessage(t *testing.T) {
	t.Parallel()
	cause := "is forbidden: ValidatingAdmissionPolicy 'node-group-size' with binding 'node-group-size' denied request: a node group may have at most 4 machines (retried 5 times)."
	long := "Failed last sync attempt to [" + strings.Repeat("ab", 20) + "]: one or more synchronization tasks completed unsuccessfully, reason: machinedeployments.cluster.x-k8s.io \"prod-a-2b7xq4mzkd5h-default-worker\" " + cause
	for _, tc := range []struct{ name, in, prefix, suffix string }{
		{"short", "one or more objects failed to apply", "one or more objects failed to apply", ""},
		{"the revisions go", "Failed last sync attempt to [abc]: boom", "boom", ""},
		{"too long: what failed, and the cause", long,
			"one or more synchronization tasks completed unsuccessfully, reason: ", cause[len(cause)-150:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := status.ArgoMessage(tc.in)
			if tc.suffix == "" && got != tc.prefix {
				t.Errorf("argoMessage = %q, want %q", got, tc.prefix)
			}
			if !strings.HasPrefix(got, tc.prefix) || !strings.HasSuffix(got, tc.suffix) || len(got) > 250 || tc.suffix != "" && !strings.Contains(got, " … ") {
				t.Errorf("argoMessage = %q (%d bytes), want %q … %q, at most 250 bytes", got, len(got), tc.prefix, tc.suffix)
			}
		})
	}
}

// TestArgoSnapshot: in Argo mode the snapshot finds each cluster's Application by the
// namespace it deploys into, the repository's Application by name, and discovers the
// clusters from their Applications' values; in Flux mode it lists no Application at all.
func TestArgoSnapshot(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("a", 40)
	parent := application(t, "magnum-clusters", "sync: {status: Synced, revision: "+a+"}")
	parent.SetLabels(nil)
	child := application(t, "k1-abc", "sync: {status: Synced}")
	child.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "magnum-gitops", "magnum.openstack.org/cluster-uuid": "u1"})
	_ = unstructured.SetNestedField(child.Object, "nodeGroups:\n- machineCount: 2\n  name: default-worker\n", "spec", "source", "helm", "values")
	// An Application as builds before helm.values wrote it: its values an object.
	older := application(t, "k2-abc", "sync: {status: Synced}")
	older.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "magnum-gitops", "magnum.openstack.org/cluster-uuid": "u2"})
	_ = unstructured.SetNestedField(older.Object, "magnum-p2", "spec", "destination", "namespace")
	_ = unstructured.SetNestedSlice(older.Object, []any{map[string]any{"name": "default-worker", "machineCount": int64(3)}},
		"spec", "source", "helm", "valuesObject", "nodeGroups")
	// A namespace's parent Application (the per-namespace layouts): magnum-gitops', no cluster.
	nsParent := application(t, "magnum-p1", "sync: {status: Synced}")
	nsParent.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "magnum-gitops"})
	src := status.StaticSource([]*unstructured.Unstructured{parent, child, older, nsParent})

	snap, err := status.TakeSnapshot(context.Background(), src, status.KindsOf(true))
	if err != nil {
		t.Fatal(err)
	}
	snap.Kustomization = "argocd/magnum-clusters"
	views := snap.Discover()
	if len(views) != 2 || views[0].StackID != "k1-abc" || views[0].Namespace != "magnum-p1" || views[0].ClusterUUID != "u1" ||
		len(views[0].NodeGroups) != 2 || views[0].NodeGroups[1].NodeCount != 2 {
		t.Fatalf("Discover = %+v, want the cluster of each Application with its two node groups", views)
	}
	if v := views[1]; v.StackID != "k2-abc" || len(v.NodeGroups) != 2 || v.NodeGroups[1].NodeCount != 3 {
		t.Errorf("Discover of an Application with a valuesObject = %+v, want its two node groups", v)
	}
	o := snap.Objects(views[0])
	if o.Application != child || o.Kustomization != parent {
		t.Errorf("Objects: Application %v, applier %v", o.Application.GetName(), o.Kustomization.GetName())
	}
	if _, ok, known := snap.Applied("magnum-p1", a, status.Options{}); !ok || !known {
		t.Errorf("Applied through the repository's Application: %v %v", ok, known)
	}

	flux, err := status.TakeSnapshot(context.Background(), src, status.KindsOf(false))
	if err != nil {
		t.Fatal(err)
	}
	if v := flux.Discover(); len(v) != 0 {
		t.Errorf("Flux mode discovered %v from Applications", v)
	}
}

// recordedApplication reads an Application recorded from the real Argo CD controllers
// (fixtures/status/argo).
func recordedApplication(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../fixtures/status/argo", name))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestArgoRecorded reads the Applications recorded from the real Argo CD controllers
// (fixtures/status/argo): the one "applied?" rule on each as the repository's Application,
// and what each says as a cluster's own.
func TestArgoRecorded(t *testing.T) {
	t.Parallel()
	load := func(name string) *unstructured.Unstructured { return recordedApplication(t, name) }
	// The commits of the recording's steps, as its Applications name them (each recording
	// makes new ones): the first, synced; the one adding a kind without a CRD; the one
	// adding a Deployment.
	revisionAt := func(file string, path ...string) string {
		rev, _, _ := unstructured.NestedString(load(file).Object, path...)
		if len(rev) != 40 {
			t.Fatalf("%s: %v is %q, not a commit", file, path, rev)
		}
		return rev
	}
	first := revisionAt("01-synced-healthy.yaml", "status", "sync", "revision")
	failed := revisionAt("02-sync-retrying.yaml", "operation", "sync", "revision")
	deploy := revisionAt("05-progressing.yaml", "status", "sync", "revision")
	now := time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC)
	v := status.View{ClusterUUID: "u1", StackID: "demo", Namespace: "demo", Status: v1alpha1.UpdateInProgress, Since: now.Add(-time.Minute)}
	for _, tc := range []struct {
		file            string
		revision        string
		applied         bool
		appliedRevision string
		status          v1alpha1.ClusterStatus
		reason          string // a prefix
	}{
		// a commit that is no step of the recording: never applied
		{"05-progressing.yaml", strings.Repeat("0", 40), false, deploy, v1alpha1.UpdateInProgress, "waiting for Cluster demo to be created"},
		{"01-synced-healthy.yaml", first, true, first, v1alpha1.UpdateInProgress, "waiting for Cluster demo to be created"},
		{"02-sync-retrying.yaml", failed, false, first, v1alpha1.UpdateInProgress,
			"Argo CD is syncing Application demo: one or more synchronization tasks are not valid: failed to discover server resources for group version widgets.example.org/v1"},
		{"03-sync-failed.yaml", failed, false, first, v1alpha1.UpdateFailed, "Application demo: SyncError: one or more synchronization tasks are not valid: failed to discover server resources"},
		{"03-sync-failed.yaml", first, true, first, v1alpha1.UpdateFailed, "Application demo: SyncError"},
		{"04-comparison-error.yaml", deploy, false, first, v1alpha1.UpdateFailed, "Application demo: ComparisonError: Failed to load target state"},
		{"05-progressing.yaml", deploy, true, deploy, v1alpha1.UpdateInProgress, "waiting for Cluster demo to be created"},
		{"06-degraded.yaml", deploy, true, deploy, v1alpha1.UpdateInProgress, "Application demo is Degraded: Caused by apps/Deployment:demo/web"},
	} {
		t.Run(tc.file+"@"+tc.revision[:7], func(t *testing.T) {
			app := load(tc.file)
			applied, ok := status.Applied(app, tc.revision, status.Options{})
			if ok != tc.applied || applied != tc.appliedRevision {
				t.Errorf("Applied(%s) = %s %v, want %s %v", tc.revision[:7], applied, ok, tc.appliedRevision, tc.applied)
			}
			r := status.Evaluate(v, status.Objects{Application: app}, status.Options{Now: now, UpdateTimeout: time.Hour})
			if r.Status != tc.status || !strings.HasPrefix(r.StatusReason, tc.reason) {
				t.Errorf("Evaluate = %s %q, want %s %q…", r.Status, r.StatusReason, tc.status, tc.reason)
			}
		})
	}
}
